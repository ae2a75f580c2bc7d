import * as fs from 'node:fs';
import * as path from 'node:path';
import { containerPathFor, isStrictlyInside, resolveVolumePath } from '../../../src/runtime/cleanup/path-safety';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir } from '../../support/privileged';

afterAll(cleanupPrivileged);

describe('mapping a PV path into the class mountDir', () => {
  test('maps hostDir/entry to mountDir/entry', () => {
    expect(containerPathFor('/mnt/disks/vol1', '/mnt/disks', '/mnt/fast', { directChildOnly: true }))
      .toEqual({ ok: true, containerPath: '/mnt/fast/vol1', relativePath: 'vol1' });
  });

  test('refuses a path outside hostDir, including one that only shares its prefix', () => {
    expect(containerPathFor('/mnt/disks2/vol1', '/mnt/disks', '/mnt/fast', { directChildOnly: true }).ok).toBe(false);
    expect(containerPathFor('/etc', '/mnt/disks', '/mnt/fast', { directChildOnly: true }).ok).toBe(false);
  });

  test('refuses ".." and relative paths', () => {
    expect(containerPathFor('/mnt/disks/../etc', '/mnt/disks', '/mnt/fast', { directChildOnly: false }))
      .toEqual({ ok: false, reason: expect.stringContaining('".."') });
    expect(containerPathFor('vol1', '/mnt/disks', '/mnt/fast', { directChildOnly: false }).ok).toBe(false);
  });

  test('refuses hostDir itself', () => {
    expect(containerPathFor('/mnt/disks/', '/mnt/disks', '/mnt/fast', { directChildOnly: false }).ok).toBe(false);
  });

  test('allows deeper entries only when asked (device dialect walks recursively)', () => {
    expect(containerPathFor('/dev/disk/by-path/x/y', '/dev/disk/by-path', '/dev/disk/by-path', { directChildOnly: true }).ok).toBe(false);
    expect(containerPathFor('/dev/disk/by-path/x/y', '/dev/disk/by-path', '/dev/disk/by-path', { directChildOnly: false }).ok).toBe(true);
  });

  test('"inside" is strict and ignores trailing slashes', () => {
    expect(isStrictlyInside('/a/b', '/a/')).toBe(true);
    expect(isStrictlyInside('/a', '/a')).toBe(false);
    expect(isStrictlyInside('/ab', '/a')).toBe(false);
  });
});

describe('resolving a volume path on the filesystem', () => {
  function classDir(): { dir: string; outside: string } {
    const base = makeTempDir('lvp-paths-');
    const dir = path.join(base, 'class');
    const outside = path.join(base, 'outside');
    fs.mkdirSync(dir);
    fs.mkdirSync(outside);
    return { dir, outside };
  }

  test('a directory in the class directory is a directory volume', async () => {
    const { dir } = classDir();
    fs.mkdirSync(path.join(dir, 'vol1'));
    expect(await resolveVolumePath(path.join(dir, 'vol1'), dir)).toEqual({ ok: true, kind: 'directory', path: path.join(dir, 'vol1') });
  });

  test('a symlink to a directory outside is refused with the real path named', async () => {
    const { dir, outside } = classDir();
    fs.symlinkSync(outside, path.join(dir, 'vol1'));
    const r = await resolveVolumePath(path.join(dir, 'vol1'), dir);
    expect(r).toEqual({ ok: false, missing: false, reason: expect.stringContaining(`resolves to "${outside}"`) });
  });

  test('a symlink to another volume of the same class is refused too', async () => {
    const { dir } = classDir();
    fs.mkdirSync(path.join(dir, 'vol2'));
    fs.symlinkSync('vol2', path.join(dir, 'vol1'));
    expect((await resolveVolumePath(path.join(dir, 'vol1'), dir)).ok).toBe(false);
  });

  test('a symlink to / is refused', async () => {
    const { dir } = classDir();
    fs.symlinkSync('/', path.join(dir, 'vol1'));
    expect((await resolveVolumePath(path.join(dir, 'vol1'), dir)).ok).toBe(false);
  });

  test('a class directory that is itself a symlink is followed consistently', async () => {
    const { dir } = classDir();
    const linked = `${dir}-link`;
    fs.symlinkSync(dir, linked);
    fs.mkdirSync(path.join(dir, 'vol1'));
    expect(await resolveVolumePath(path.join(linked, 'vol1'), linked)).toEqual({ ok: true, kind: 'directory', path: path.join(dir, 'vol1') });
  });

  test('a missing entry is reported as missing, not as unsafe', async () => {
    const { dir } = classDir();
    expect(await resolveVolumePath(path.join(dir, 'gone'), dir)).toEqual({ ok: false, missing: true, reason: expect.stringContaining('does not exist') });
  });

  test('a dangling symlink is reported as missing', async () => {
    const { dir } = classDir();
    fs.symlinkSync('/nonexistent-device', path.join(dir, 'sdz'));
    expect(await resolveVolumePath(path.join(dir, 'sdz'), dir)).toMatchObject({ ok: false, missing: true });
  });

  test('a regular file is neither a directory nor a block device', async () => {
    const { dir } = classDir();
    fs.writeFileSync(path.join(dir, 'notes.txt'), '');
    expect(await resolveVolumePath(path.join(dir, 'notes.txt'), dir)).toMatchObject({ ok: false, reason: expect.stringContaining('neither') });
  });

  test('a path outside the class directory is refused before touching the filesystem', async () => {
    const { dir, outside } = classDir();
    expect(await resolveVolumePath(outside, dir)).toMatchObject({ ok: false, missing: false });
  });
});

describePrivileged('resolving a block volume', () => {
  test('a symlink in the class directory to a device node is a block volume (the by-id links upstream documents)', async () => {
    const loop = createLoopDevice(16 * 1024 * 1024);
    const dir = makeTempDir('lvp-blockclass-');
    fs.symlinkSync(loop.device, path.join(dir, 'disk1'));
    expect(await resolveVolumePath(path.join(dir, 'disk1'), dir)).toEqual({
      ok: true, kind: 'block-device', path: path.join(dir, 'disk1'), device: loop.device,
    });
  });

  test('a device reached through a symlinked directory below the class directory is refused', async () => {
    const loop = createLoopDevice(16 * 1024 * 1024);
    const base = makeTempDir('lvp-blockclass-');
    const dir = path.join(base, 'class');
    fs.mkdirSync(dir);
    fs.mkdirSync(path.join(base, 'elsewhere'));
    fs.symlinkSync(loop.device, path.join(base, 'elsewhere', 'disk1'));
    fs.symlinkSync(path.join(base, 'elsewhere'), path.join(dir, 'sub'));
    expect(await resolveVolumePath(path.join(dir, 'sub', 'disk1'), dir)).toMatchObject({ ok: false, reason: expect.stringContaining('symlinked directory') });
  });
});
