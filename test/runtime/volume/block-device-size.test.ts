import * as fs from 'node:fs';
import * as path from 'node:path';
import { blockDeviceSize } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir } from '../../support/privileged';

describePrivileged('blockDeviceSize', () => {
  afterAll(cleanupPrivileged);

  test('is the exact size of a loop device', async () => {
    const loop = createLoopDevice(64 * 1024 * 1024 + 5 * 1024);
    expect(await blockDeviceSize(loop.device)).toBe(64 * 1024 * 1024 + 5 * 1024);
  });

  test('follows a symlink to the device, as from /dev/disk/by-id', async () => {
    const loop = createLoopDevice(32 * 1024 * 1024);
    const link = path.join(makeTempDir(), 'wwn-0x5000');
    fs.symlinkSync(loop.device, link);
    expect(await blockDeviceSize(link)).toBe(32 * 1024 * 1024);
  });

  test('refuses a regular file, naming it', async () => {
    const file = path.join(makeTempDir(), 'disk.img');
    fs.writeFileSync(file, Buffer.alloc(4096));
    await expect(blockDeviceSize(file)).rejects.toThrow(`"${file}" is not a block device`);
  });

  test('says which sysfs file it could not read', async () => {
    const loop = createLoopDevice(16 * 1024 * 1024);
    const emptySysfs = makeTempDir();
    await expect(blockDeviceSize(loop.device, emptySysfs)).rejects.toThrow(
      new RegExp(`cannot read the size of block device "${loop.device}" from ${emptySysfs}/dev/block/7:\\d+/size`),
    );
  });
});
