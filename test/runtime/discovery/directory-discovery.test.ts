import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ClassConfig } from '../../../src/config';
import { discoverClassVolumes, discoverDirectoryVolumes, DiscoveryMemory, MountPointMemo, readMountTable } from '../../../src/runtime/discovery';
import { filesystemSize, IdentityCache, mountIdentity } from '../../../src/runtime/volume';
import { classConfigOf } from '../../support/class-config';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mount, unmount } from '../../support/privileged';

const MiB = 1024 * 1024;

const classConfig = (mountDir: string, overrides: Partial<ClassConfig> = {}) => classConfigOf('/host/disks', mountDir, overrides);

async function discover(mountDir: string, overrides: Partial<ClassConfig> = {}) {
  return discoverClassVolumes('local-storage', classConfig(mountDir, overrides), await readMountTable());
}

describePrivileged('directory discovery on real directories, bind mounts and loop devices', () => {
  afterAll(cleanupPrivileged);

  test('finds each mount point as a Filesystem volume with host path, container path and statfs capacity', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    makeMountPoint(path.join(mountDir, 'vol2'));
    const result = await discover(mountDir);
    expect(result.rejections).toEqual([]);
    expect(result.volumes).toEqual([
      {
        className: 'local-storage',
        entryName: 'vol1',
        hostPath: '/host/disks/vol1',
        mountPath: path.join(mountDir, 'vol1'),
        volumeMode: 'Filesystem',
        capacityBytes: filesystemSize(path.join(mountDir, 'vol1')),
        source: 'mount-point',
        identity: await mountIdentity((await readMountTable()).entries.filter((e) => e.mountPoint === path.join(mountDir, 'vol1')).pop()!),
      },
      expect.objectContaining({ entryName: 'vol2', hostPath: '/host/disks/vol2' }),
    ]);
  });

  test('two entries that are one filesystem (two mounts of one directory) have one identity; another directory has another', async () => {
    const mountDir = makeTempDir();
    const shared = makeTempDir('lvp-shared-');
    mount(shared, path.join(mountDir, 'a'), { bind: true });
    mount(shared, path.join(mountDir, 'b'), { bind: true });
    makeMountPoint(path.join(mountDir, 'c'));
    const [a, b, c] = (await discover(mountDir)).volumes;
    expect(a.identity).toBe(b.identity);
    expect(c.identity).not.toBe(a.identity);
  });

  test('a device behind two links has one identity', async () => {
    const mountDir = makeTempDir();
    const loop = createLoopDevice(8 * 1024 * 1024);
    fs.symlinkSync(loop.device, path.join(mountDir, 'by-id'));
    fs.symlinkSync(loop.device, path.join(mountDir, 'by-path'));
    const volumes = (await discover(mountDir, { volumeMode: 'Block' })).volumes;
    expect(volumes.map((v) => v.identity)).toEqual([`loop:${loop.backingFile}@0`, `loop:${loop.backingFile}@0`]);
  });

  test('reports a missing discovery directory for the class instead of failing', async () => {
    const mountDir = path.join(makeTempDir(), 'absent');
    const result = await discover(mountDir);
    expect(result.volumes).toEqual([]);
    expect(result.problem).toBe(
      `discovery directory "${mountDir}" of class "local-storage" does not exist; create it on the host and mount it into the container at that path`,
    );
  });

  test('reports a discovery "directory" that is a file', async () => {
    const file = path.join(makeTempDir(), 'file');
    fs.writeFileSync(file, '');
    expect((await discover(file)).problem).toMatch(/is not a directory$/);
  });

  test('an empty discovery directory gives no volumes and no rejections', async () => {
    const result = await discover(makeTempDir());
    expect(result).toMatchObject({ volumes: [], rejections: [] });
    expect(result.problem).toBeUndefined();
  });

  test('rejects a directory that is not a mount point with upstream\'s message, and keeps the mount points', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'good'));
    fs.mkdirSync(path.join(mountDir, 'plain'));
    const result = await discover(mountDir);
    expect(result.volumes.map((v) => v.entryName)).toEqual(['good']);
    expect(result.rejections).toEqual([
      expect.objectContaining({
        entryName: 'plain',
        code: 'not-a-mount-point',
        reason: `path "${path.join(mountDir, 'plain')}" is not a valid mount point`,
      }),
    ]);
  });

  test('rejects a symlink to a mount point: only the entry itself counts', async () => {
    const mountDir = makeTempDir();
    const real = path.join(makeTempDir(), 'real');
    makeMountPoint(real);
    fs.symlinkSync(real, path.join(mountDir, 'link'));
    const result = await discover(mountDir);
    expect(result.rejections).toEqual([expect.objectContaining({ code: 'not-a-mount-point', hint: expect.stringMatching(/symlink/) })]);
  });

  test('includes hidden entries, as upstream does', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, '.hidden'));
    expect((await discover(mountDir)).volumes.map((v) => v.entryName)).toEqual(['.hidden']);
  });

  test('skips an unknown entry type (a regular file, a FIFO) with a rejection for that entry only', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    fs.writeFileSync(path.join(mountDir, 'notes.txt'), 'x');
    execFileSync('mkfifo', [path.join(mountDir, 'pipe')]);
    const result = await discover(mountDir);
    expect(result.volumes.map((v) => v.entryName)).toEqual(['vol1']);
    expect(result.rejections.map((r) => [r.entryName, r.code, r.reason])).toEqual([
      ['notes.txt', 'unsupported-entry', `path "${path.join(mountDir, 'notes.txt')}" is a regular file; only mount points and block devices can be volumes`],
      ['pipe', 'unsupported-entry', `path "${path.join(mountDir, 'pipe')}" is a FIFO; only mount points and block devices can be volumes`],
    ]);
  });

  test('rejects a broken symlink, naming its target', async () => {
    const mountDir = makeTempDir();
    fs.symlinkSync('/dev/disk/by-id/gone', path.join(mountDir, 'disk1'));
    expect((await discover(mountDir)).rejections).toEqual([
      expect.objectContaining({ code: 'broken-link', reason: `path "${path.join(mountDir, 'disk1')}" is a broken symlink to /dev/disk/by-id/gone (ENOENT)` }),
    ]);
  });

  test('applies namePattern (comma-separated globs) to entry names', async () => {
    const mountDir = makeTempDir();
    for (const name of ['ssd1', 'ssd2', 'hdd1', 'nvme0']) makeMountPoint(path.join(mountDir, name));
    const result = await discover(mountDir, { namePattern: 'ssd*,nvme?' });
    expect(result.volumes.map((v) => v.entryName)).toEqual(['nvme0', 'ssd1', 'ssd2']);
  });

  test('in a Block class, finds loop devices and symlinks to them with their exact size, and rejects a directory while going on', async () => {
    const mountDir = makeTempDir();
    const a = createLoopDevice(20 * MiB);
    const b = createLoopDevice(30 * MiB + 512);
    fs.symlinkSync(a.device, path.join(mountDir, 'disk-a'));
    fs.symlinkSync(b.device, path.join(mountDir, 'disk-b'));
    makeMountPoint(path.join(mountDir, 'dir'));
    const result = await discover(mountDir, { volumeMode: 'Block' });
    expect(result.volumes).toEqual([
      expect.objectContaining({ entryName: 'disk-a', volumeMode: 'Block', source: 'block-device', devicePath: a.device, capacityBytes: 20 * MiB }),
      expect.objectContaining({ entryName: 'disk-b', volumeMode: 'Block', source: 'block-device', devicePath: b.device, capacityBytes: 30 * MiB + 512 }),
    ]);
    expect(result.rejections).toEqual([expect.objectContaining({ entryName: 'dir', code: 'directory-in-block-class' })]);
  });

  test('offers a block device in a Filesystem class as a Filesystem volume', async () => {
    const mountDir = makeTempDir();
    const loop = createLoopDevice(20 * MiB);
    fs.symlinkSync(loop.device, path.join(mountDir, 'disk'));
    expect((await discover(mountDir)).volumes).toEqual([
      expect.objectContaining({ entryName: 'disk', volumeMode: 'Filesystem', source: 'block-device', capacityBytes: 20 * MiB }),
    ]);
  });

  test('recognises mount points under a mountDir reached through a symlink', async () => {
    const real = makeTempDir();
    makeMountPoint(path.join(real, 'vol1'));
    const linkedDir = path.join(makeTempDir(), 'disks');
    fs.symlinkSync(real, linkedDir);
    const result = await discover(linkedDir);
    expect(result.volumes).toEqual([expect.objectContaining({ entryName: 'vol1', mountPath: path.join(linkedDir, 'vol1') })]);
  });

  test('discovers every class of a configuration, each on its own', async () => {
    const fast = makeTempDir();
    makeMountPoint(path.join(fast, 'vol1'));
    const missing = path.join(makeTempDir(), 'absent');
    const results = await discoverDirectoryVolumes(
      { 'fast': classConfig(fast), 'slow-disks': classConfig(missing) },
      await readMountTable(),
    );
    expect(results.map((r) => [r.className, r.volumes.length, r.problem !== undefined])).toEqual([
      ['fast', 1, false],
      ['slow-disks', 0, true],
    ]);
  });
});

describePrivileged('directory discovery with a memory of mount points', () => {
  afterAll(cleanupPrivileged);

  const resize = (volume: string, size: string) => execFileSync('mount', ['-o', `remount,size=${size}`, volume]);
  const capacityOf = async (mountDir: string, memory: DiscoveryMemory) =>
    (await discoverClassVolumes('local-storage', classConfig(mountDir), await readMountTable(), memory)).volumes.map((v) => v.capacityBytes);

  /**
   * A 16 MiB tmpfs at mountDir/vol1, discovered once with a memory, then grown to 32 MiB:
   * remounting keeps the mount and changes what statfs says, so a fresh look reads 32 MiB.
   */
  async function grownAfterDiscovery(): Promise<{ mountDir: string; volume: string; memory: DiscoveryMemory & { mountPoints: MountPointMemo } }> {
    const mountDir = makeTempDir();
    const volume = path.join(mountDir, 'vol1');
    mount('tmpfs', volume, { type: 'tmpfs' });
    resize(volume, '16m');
    const memory = { identities: new IdentityCache(), mountPoints: new MountPointMemo() };
    expect(await capacityOf(mountDir, memory)).toEqual([16 * MiB]);
    resize(volume, '32m');
    return { mountDir, volume, memory };
  }

  test('a mount point still the same mount is taken from memory, without a new look', async () => {
    const { mountDir, memory } = await grownAfterDiscovery();
    expect(await capacityOf(mountDir, memory)).toEqual([16 * MiB]);
  });

  test('a finding its owner no longer retains is looked at afresh', async () => {
    const { mountDir, memory } = await grownAfterDiscovery();
    memory.mountPoints.retain(() => false);
    expect(await capacityOf(mountDir, memory)).toEqual([32 * MiB]);
  });

  test('a mount point mounted anew is looked at afresh', async () => {
    const { mountDir, volume, memory } = await grownAfterDiscovery();
    mount('tmpfs', volume, { type: 'tmpfs' });
    resize(volume, '48m');
    expect(await capacityOf(mountDir, memory)).toEqual([48 * MiB]);
  });

  test('an entry seen without its mount is forgotten: a later mount the table shows as the old one (mount IDs are reused) is looked at afresh', async () => {
    const { mountDir, volume, memory } = await grownAfterDiscovery();
    const asRemembered = await readMountTable();
    unmount(volume);
    expect(await capacityOf(mountDir, memory)).toEqual([]);
    mount('tmpfs', volume, { type: 'tmpfs' });
    resize(volume, '48m');

    const again = await discoverClassVolumes('local-storage', classConfig(mountDir), asRemembered, memory);

    expect(again.volumes.map((v) => v.capacityBytes)).toEqual([48 * MiB]);
  });

  test('an entry of a class whose settings changed is looked at afresh', async () => {
    const { mountDir, memory } = await grownAfterDiscovery();
    const moved = await discoverClassVolumes('local-storage', classConfigOf('/host/elsewhere', mountDir), await readMountTable(), memory);
    expect(moved.volumes.map((v) => [v.hostPath, v.capacityBytes])).toEqual([['/host/elsewhere/vol1', 32 * MiB]]);
  });
});
