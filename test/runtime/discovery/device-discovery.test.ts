import * as fs from 'node:fs';
import * as path from 'node:path';
import { discoverDevices } from '../../../src/runtime/discovery';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, type LoopDevice } from '../../support/privileged';
import { writeGpt } from '../volume/partition-table-fixtures';

const MiB = 1024 * 1024;

/** A deviceDir of symlinks named like disks, each to a fresh loop device. */
function deviceDir(names: string[], size = 16 * MiB): { dir: string; loops: Record<string, LoopDevice> } {
  const dir = makeTempDir('lvp-devdir-');
  const loops: Record<string, LoopDevice> = {};
  for (const name of names) {
    loops[name] = createLoopDevice(size);
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.symlinkSync(loops[name].device, path.join(dir, name));
  }
  return { dir, loops };
}

const noProbe = { shouldProbe: () => false };

describePrivileged('device discovery on loop devices', () => {
  afterAll(cleanupPrivileged);

  test('the filter .* gives every device, with its exact size and the device it resolves to', async () => {
    const { dir, loops } = deviceDir(['sda', 'sdb', 'sdc'], 16 * MiB + 5 * 1024);
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' }, noProbe);
    expect(result.errorDevices).toEqual([]);
    expect(result.devices.map((d) => [d.baseName, d.path, d.devicePath, d.capacityBytes])).toEqual(
      ['sda', 'sdb', 'sdc'].map((n) => [n, path.join(dir, n), loops[n].device, 16 * MiB + 5 * 1024]),
    );
  });

  test('the filter sd[ab] gives two devices', async () => {
    const { dir } = deviceDir(['sda', 'sdb', 'sdc']);
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: 'sd[ab]' }, noProbe);
    expect(result.devices.map((d) => d.baseName)).toEqual(['sda', 'sdb']);
  });

  test('the filter ^dev matches base names, not paths', async () => {
    const { dir } = deviceDir(['dev1', 'dev2', 'by-dev/disk3', 'nvme-dev']);
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '^dev' }, noProbe);
    expect(result.devices.map((d) => d.baseName)).toEqual(['dev1', 'dev2']);
  });

  test('walks subdirectories, as /dev/disk/by-path is walked from /dev/disk', async () => {
    const { dir } = deviceDir(['by-path/pci-0000:3c:00.0-sas-0x5000c500a1b2c3d4-lun-0', 'by-id/wwn-0x1']);
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' }, noProbe);
    expect(result.devices.map((d) => d.path)).toEqual([
      path.join(dir, 'by-id/wwn-0x1'),
      path.join(dir, 'by-path/pci-0000:3c:00.0-sas-0x5000c500a1b2c3d4-lun-0'),
    ]);
  });

  test('no device in deviceDir: nothing, and no error', async () => {
    const result = await discoverDevices({ deviceDir: makeTempDir(), deviceNameFilter: '.*' }, noProbe);
    expect(result).toMatchObject({ devices: [], errorDevices: [] });
    expect(result.problem).toBeUndefined();
  });

  test('dangling symlinks are error devices, and the other devices go on', async () => {
    const { dir } = deviceDir(['sda']);
    fs.symlinkSync('/dev/loop-gone', path.join(dir, 'sdz'));
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' }, noProbe);
    expect(result.devices.map((d) => d.baseName)).toEqual(['sda']);
    expect(result.errorDevices).toEqual([
      { path: path.join(dir, 'sdz'), reason: `"${path.join(dir, 'sdz')}" is a broken symlink to /dev/loop-gone (ENOENT), not a block device` },
    ]);
  });

  test('a matched regular file is an error device', async () => {
    const dir = makeTempDir();
    fs.writeFileSync(path.join(dir, 'sdq'), 'not a disk');
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' }, noProbe);
    expect(result.errorDevices).toEqual([{ path: path.join(dir, 'sdq'), reason: `"${path.join(dir, 'sdq')}" is a regular file, not a block device` }]);
  });

  test('an entry the filter does not match is neither a device nor an error', async () => {
    const dir = makeTempDir();
    fs.symlinkSync('/dev/loop-gone', path.join(dir, 'ignored'));
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '^sd' }, noProbe);
    expect(result).toMatchObject({ devices: [], errorDevices: [] });
  });

  test('two paths to one disk offer it once, and the other path is an alias saying why, not an error device', async () => {
    const { dir, loops } = deviceDir(['by-id/disk-a']);
    fs.mkdirSync(path.join(dir, 'by-path'));
    fs.symlinkSync(loops['by-id/disk-a'].device, path.join(dir, 'by-path/pci-1'));
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' }, noProbe);
    expect(result.devices.map((d) => d.path)).toEqual([path.join(dir, 'by-id/disk-a')]);
    expect(result.errorDevices).toEqual([]);
    expect(result.aliases).toEqual([
      {
        path: path.join(dir, 'by-path/pci-1'),
        reason: `"${path.join(dir, 'by-path/pci-1')}" is the same disk (${loops['by-id/disk-a'].device}) as "${path.join(dir, 'by-id/disk-a')}", which is offered instead`,
      },
    ]);
  });

  test('of two links to one disk, the first in code-unit order is offered (upper case first, as Go sorts), not the first by locale', async () => {
    const { dir, loops } = deviceDir(['nvme-eui.01']);
    fs.symlinkSync(loops['nvme-eui.01'].device, path.join(dir, 'nvme-Samsung_01'));
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' }, noProbe);
    expect(result.devices.map((d) => d.baseName)).toEqual(['nvme-Samsung_01']);
    expect(result.aliases.map((a) => path.basename(a.path))).toEqual(['nvme-eui.01']);
  });

  test('a missing deviceDir is a problem for the node, not an exception', async () => {
    const missing = path.join(makeTempDir(), 'absent');
    const result = await discoverDevices({ deviceDir: missing, deviceNameFilter: '.*' }, noProbe);
    expect(result.problem).toMatch(new RegExp(`^deviceDir "${missing}" cannot be listed: ENOENT`));
  });

  test('an invalid filter is a problem for the node, not an exception', async () => {
    const result = await discoverDevices({ deviceDir: makeTempDir(), deviceNameFilter: '(' }, noProbe);
    expect(result.problem).toMatch(/^deviceNameFilter "\(" is not a valid regular expression/);
  });

  test('probes each device for signatures: blank, ext4, GPT', async () => {
    const { dir, loops } = deviceDir(['blank', 'ext4', 'gpt'], 32 * MiB);
    mkfsExt4(loops.ext4.device);
    writeGpt(loops.gpt.device, 32 * MiB);
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' });
    const states = Object.fromEntries(result.devices.map((d) => [d.baseName, d.signatures?.state]));
    expect(states).toEqual({ blank: 'blank', ext4: 'holds-data', gpt: 'holds-data' });
    const ext4 = result.devices.find((d) => d.baseName === 'ext4');
    expect(ext4?.signatures?.signatures.map((s) => s.type)).toEqual(['ext4']);
  });

  test('probes only the devices the caller asks for', async () => {
    const { dir } = deviceDir(['sda', 'sdb']);
    const result = await discoverDevices({ deviceDir: dir, deviceNameFilter: '.*' }, { shouldProbe: (d) => d.baseName === 'sdb' });
    expect(result.devices.map((d) => [d.baseName, d.signatures?.state])).toEqual([
      ['sda', undefined],
      ['sdb', 'blank'],
    ]);
  });
});
