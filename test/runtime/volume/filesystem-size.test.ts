import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { filesystemSize } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

describePrivileged('filesystemSize', () => {
  afterAll(cleanupPrivileged);

  test('is total blocks × block size of the mounted filesystem, as statfs(1) reports them', () => {
    const loop = createLoopDevice(64 * 1024 * 1024);
    mkfsExt4(loop.device);
    const target = path.join(makeTempDir(), 'vol');
    mount(loop.device, target);

    const [blocks, blockSize] = execFileSync('stat', ['-f', '-c', '%b %s', target], { encoding: 'utf8' }).trim().split(' ').map(Number);
    const size = filesystemSize(target);
    expect(size).toBe(blocks * blockSize);
    // ext4 metadata takes a little; the total is close to the device size.
    expect(size).toBeGreaterThan(50 * 1024 * 1024);
    expect(size).toBeLessThanOrEqual(64 * 1024 * 1024);
  });
});
