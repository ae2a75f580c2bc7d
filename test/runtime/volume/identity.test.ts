import * as fs from 'node:fs';
import * as path from 'node:path';
import { readMountTable } from '../../../src/runtime/discovery/mount-table';
import { deviceNumberOf } from '../../../src/runtime/volume/device-number';
import { blockDeviceIdentity, diskSequence, IdentityCache, isWeakIdentity, mountIdentity, mountInstanceKey } from '../../../src/runtime/volume/identity';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

afterAll(cleanupPrivileged);

/** A fake sysfs: /sys/dev/block/<number> links to a device directory with the given attributes. */
function fakeSysfs(devices: Record<string, { dir: string; attributes: Record<string, string> }>): string {
  const root = makeTempDir('lvp-sysfs-');
  fs.mkdirSync(path.join(root, 'dev', 'block'), { recursive: true });
  for (const [number, { dir, attributes }] of Object.entries(devices)) {
    const deviceDir = path.join(root, 'devices', dir);
    for (const [name, value] of Object.entries(attributes)) {
      fs.mkdirSync(path.dirname(path.join(deviceDir, name)), { recursive: true });
      fs.writeFileSync(path.join(deviceDir, name), `${value}\n`);
    }
    fs.symlinkSync(deviceDir, path.join(root, 'dev', 'block', number));
  }
  return root;
}

const dev = (major: number, minor: number) => ({ major, minor });

describe('block device identity from sysfs', () => {
  test('a disk with a WWID is known by it, wherever its name or number moves', async () => {
    const sysfsRoot = fakeSysfs({
      '8:0': { dir: 'pci/host0/block/sda', attributes: { 'dev': '8:0', 'device/wwid': 'naa.5000c500a0b1c2d3', 'device/serial': 'S1', 'size': '100' } },
      '8:16': { dir: 'pci/host1/block/sdb', attributes: { 'dev': '8:16', 'device/wwid': 'naa.5000c500a0b1c2d3', 'size': '100' } },
    });
    expect(await blockDeviceIdentity(dev(8, 0), { sysfsRoot })).toBe('wwid:naa.5000c500a0b1c2d3');
    expect(await blockDeviceIdentity(dev(8, 16), { sysfsRoot })).toBe(await blockDeviceIdentity(dev(8, 0), { sysfsRoot }));
  });

  test('a disk without a WWID is known by its model and serial', async () => {
    const sysfsRoot = fakeSysfs({ '253:0': { dir: 'virtio1/block/vda', attributes: { dev: '253:0', serial: 'disk-42', size: '9' } } });
    expect(await blockDeviceIdentity(dev(253, 0), { sysfsRoot })).toBe('serial:/disk-42');
  });

  // (The kernels of the CI machines have no partition table support, so partitions are tested here only.)
  test('a partition is its start sector on its disk', async () => {
    const sysfsRoot = fakeSysfs({
      '259:0': { dir: 'nvme/block/nvme0n1', attributes: { dev: '259:0', wwid: 'eui.0025388b91b1f3c1' } },
      '259:1': { dir: 'nvme/block/nvme0n1/nvme0n1p1', attributes: { dev: '259:1', partition: '1', start: '2048' } },
    });
    expect(await blockDeviceIdentity(dev(259, 1), { sysfsRoot })).toBe('partition:2048@wwid:eui.0025388b91b1f3c1');
  });

  test('a device-mapper device (an LVM volume) is its dm uuid', async () => {
    const sysfsRoot = fakeSysfs({ '254:3': { dir: 'virtual/block/dm-3', attributes: { 'dev': '254:3', 'dm/uuid': 'LVM-abc', 'size': '8' } } });
    expect(await blockDeviceIdentity(dev(254, 3), { sysfsRoot })).toBe('dm:LVM-abc');
  });

  test('without any stable attribute the device number and size are a weak fallback', async () => {
    const sysfsRoot = fakeSysfs({ '8:32': { dir: 'host/block/sdc', attributes: { dev: '8:32', size: '2048' } } });
    const identity = await blockDeviceIdentity(dev(8, 32), { sysfsRoot });
    expect(identity).toBe('devnum:8:32/2048');
    expect(isWeakIdentity(identity)).toBe(true);
  });

  test('a device the kernel does not know is an error naming it', async () => {
    await expect(blockDeviceIdentity(dev(8, 99), { sysfsRoot: fakeSysfs({}) })).rejects.toThrow(/block device 8:99 is not known/);
  });
});

describe('disk sequence numbers', () => {
  test('a disk\'s is its diskseq, and a partition\'s is its disk\'s', () => {
    const sysfsRoot = fakeSysfs({
      '259:0': { dir: 'nvme/block/nvme0n1', attributes: { dev: '259:0', diskseq: '12' } },
      '259:1': { dir: 'nvme/block/nvme0n1/nvme0n1p1', attributes: { dev: '259:1', partition: '1', start: '2048' } },
    });
    expect(diskSequence(dev(259, 0), sysfsRoot)).toBe('12');
    expect(diskSequence(dev(259, 1), sysfsRoot)).toBe('12');
  });

  test('a kernel without diskseq, or a device it does not know, gives none', () => {
    const sysfsRoot = fakeSysfs({ '8:0': { dir: 'host/block/sda', attributes: { dev: '8:0' } } });
    expect(diskSequence(dev(8, 0), sysfsRoot)).toBeUndefined();
    expect(diskSequence(dev(8, 99), sysfsRoot)).toBeUndefined();
  });

  test('two mounts that agree on every field of the mount table are told apart by their disks\' sequence numbers', () => {
    const line = { mountId: 812, major: 7, minor: 3, root: '/', fsType: 'ext4', source: '/dev/loop3' };
    expect(mountInstanceKey({ ...line, diskSequence: '41' })).not.toBe(mountInstanceKey({ ...line, diskSequence: '42' }));
    expect(mountInstanceKey({ ...line, diskSequence: '41' })).toBe(mountInstanceKey({ ...line, diskSequence: '41' }));
  });
});

describe('identity cache', () => {
  test('the many mounts of one device examined at once read its attributes once', async () => {
    const sysfsRoot = fakeSysfs({ '253:0': { dir: 'virtio1/block/vda', attributes: { dev: '253:0', diskseq: '7', serial: 'disk-42', size: '9' } } });
    const cache = new IdentityCache({ sysfsRoot });
    const reads = jest.spyOn(fs.promises, 'readFile');
    try {
      const mounts = Array.from({ length: 20 }, (_, i) => ({ mountId: 100 + i, major: 253, minor: 0, root: `/vol${i}`, fsType: 'ext4', source: '/dev/vda' }));
      expect(await Promise.all(mounts.map((m) => cache.mount(m)))).toEqual(mounts.map((m) => `fs:${m.root}@serial:/disk-42`));
      for (const attribute of ['/diskseq', '/serial']) expect(reads.mock.calls.filter(([file]) => String(file).endsWith(attribute))).toHaveLength(1);
    } finally {
      reads.mockRestore();
    }
  });
});

describe('identity cache, a disk attached anew', () => {
  test('a mount that agrees with an earlier one on every field of the table, on a disk attached anew under its number, is looked at again', async () => {
    const sysfsRoot = fakeSysfs({ '7:3': { dir: 'virtual/block/loop3', attributes: { 'dev': '7:3', 'diskseq': '41', 'loop/backing_file': '/disks/a.img' } } });
    const cache = new IdentityCache({ sysfsRoot });
    const line = { mountId: 812, major: 7, minor: 3, root: '/', fsType: 'ext4', source: '/dev/loop3' };
    expect(await cache.mount({ ...line, diskSequence: '41' })).toBe('fs:/@loop:/disks/a.img@0');
    const loop3 = path.join(sysfsRoot, 'devices', 'virtual/block/loop3');
    fs.writeFileSync(path.join(loop3, 'diskseq'), '42\n');
    fs.writeFileSync(path.join(loop3, 'loop/backing_file'), '/disks/b.img\n');
    expect(await cache.mount({ ...line, diskSequence: '42' })).toBe('fs:/@loop:/disks/b.img@0');
  });
});

describePrivileged('identity of real loop devices and mounts', () => {
  const MiB = 1024 * 1024;
  const numberOf = (device: string) => deviceNumberOf(fs.statSync(device, { bigint: true }).rdev);

  test('a loop device is its backing file, so two loop devices never share an identity', async () => {
    const a = createLoopDevice(8 * MiB);
    const b = createLoopDevice(8 * MiB);
    expect(await blockDeviceIdentity(numberOf(a.device))).toBe(`loop:${a.backingFile}@0`);
    expect(await blockDeviceIdentity(numberOf(b.device))).not.toBe(await blockDeviceIdentity(numberOf(a.device)));
  });

  test('a mounted filesystem is its root on its device; a bind mount of a subdirectory is that subdirectory', async () => {
    const loop = createLoopDevice(32 * MiB);
    mkfsExt4(loop.device);
    const base = makeTempDir('lvp-identity-');
    mount(loop.device, path.join(base, 'whole'));
    fs.mkdirSync(path.join(base, 'whole', 'sub'));
    mount(path.join(base, 'whole', 'sub'), path.join(base, 'bound'), { bind: true });
    const table = await readMountTable();
    const entry = (mountPoint: string) => table.entries.find((e) => e.mountPoint === mountPoint)!;

    expect(await mountIdentity(entry(path.join(base, 'whole')))).toBe(`fs:/@loop:${loop.backingFile}@0`);
    expect(await mountIdentity(entry(path.join(base, 'bound')))).toBe(`fs:/sub@loop:${loop.backingFile}@0`);
  });

  test('a tmpfs is its anonymous device number: weak, since it cannot outlive a reboot anyway', async () => {
    const dir = path.join(makeTempDir('lvp-identity-'), 'tmp');
    mount('tmpfs', dir, { type: 'tmpfs' });
    const identity = await mountIdentity((await readMountTable()).entries.find((e) => e.mountPoint === dir)!);
    expect(identity).toMatch(/^mount:tmpfs:0:\d+:\/$/);
    expect(isWeakIdentity(identity)).toBe(true);
  });
});
