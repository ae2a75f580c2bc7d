import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { cleanFilesystemVolume } from '../../../src/runtime/cleanup/filesystem-cleaner';
import { mountPointsInside } from '../../../src/runtime/cleanup/nested-mounts';
import { parseMountInfo } from '../../../src/runtime/discovery/mount-table';
import { captureRootMetadata, openDirectory, RootMetadata } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

afterAll(cleanupPrivileged);
// Thousands of files and directories on a busy machine.

/** A fresh volume directory (a mount point of its own, like a real local volume) with a sibling outside it. */
function volume(): { root: string; outside: string } {
  const base = makeTempDir('lvp-fsclean-');
  const root = path.join(base, 'vol');
  const outside = path.join(base, 'outside');
  makeMountPoint(root);
  fs.mkdirSync(outside);
  return { root, outside };
}

function write(file: string, content = 'data'): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

/** Makes a chain of `depth` nested directories below `dir` by relative steps (the full path exceeds PATH_MAX). */
function makeDeepTree(dir: string, depth: number): void {
  const cwd = process.cwd();
  try {
    process.chdir(dir);
    for (let i = 0; i < depth; i++) {
      fs.mkdirSync('deep-directory');
      process.chdir('deep-directory');
    }
    fs.writeFileSync('leaf', 'bottom');
  } finally {
    process.chdir(cwd);
  }
}

describePrivileged('the filesystem cleaner', () => {
  test('removes every child and keeps the mount point with its mode', async () => {
    const { root } = volume();
    fs.chmodSync(root, 0o751);
    write(path.join(root, 'a.txt'));
    write(path.join(root, '.hidden'));
    write(path.join(root, 'dir/sub/b.txt'));
    const result = await cleanFilesystemVolume(root);
    expect(result).toEqual({ ok: true, removedEntries: 5 });
    expect(fs.readdirSync(root)).toEqual([]);
    expect(fs.statSync(root).mode % 0o10000).toBe(0o751);
  });

  test('removes read-only files and read-only or unreadable directories', async () => {
    const { root } = volume();
    write(path.join(root, 'ro/file'));
    fs.chmodSync(path.join(root, 'ro/file'), 0o444);
    fs.chmodSync(path.join(root, 'ro'), 0o555);
    write(path.join(root, 'locked/inner'));
    fs.chmodSync(path.join(root, 'locked'), 0o000);
    expect(await cleanFilesystemVolume(root)).toMatchObject({ ok: true });
    expect(fs.readdirSync(root)).toEqual([]);
  });

  test('an unprivileged owner cleans read-only and unreadable directories and gets a read-only root back as it was', async () => {
    const { root } = volume();
    fs.chmodSync(path.dirname(root), 0o755);
    write(path.join(root, 'ro/file'));
    write(path.join(root, 'locked/deeper/inner'));
    write(path.join(root, 'search-only/x'));
    execFileSync('chown', ['-R', '65534:65534', root]);
    fs.chmodSync(path.join(root, 'ro/file'), 0o444);
    fs.chmodSync(path.join(root, 'ro'), 0o555);
    fs.chmodSync(path.join(root, 'locked/deeper'), 0o000);
    fs.chmodSync(path.join(root, 'locked'), 0o000);
    fs.chmodSync(path.join(root, 'search-only'), 0o100);
    fs.chmodSync(root, 0o555);

    process.setegid!(65534);
    process.seteuid!(65534);
    let result;
    try {
      // Without root's capabilities these directories really deny access.
      expect(() => fs.readdirSync(path.join(root, 'locked'))).toThrow(/EACCES/);
      result = await cleanFilesystemVolume(root);
    } finally {
      process.seteuid!(0);
      process.setegid!(0);
    }
    expect(result).toMatchObject({ ok: true });
    expect(fs.readdirSync(root)).toEqual([]);
    expect(fs.statSync(root).mode % 0o10000).toBe(0o555);
  });

  test('unlinks symlinks without following them: what they point at outside survives untouched', async () => {
    const { root, outside } = volume();
    write(path.join(outside, 'precious.txt'), 'keep me');
    write(path.join(outside, 'tree/also-precious.txt'), 'keep me too');
    fs.symlinkSync(path.join(outside, 'precious.txt'), path.join(root, 'link-to-file'));
    fs.symlinkSync(path.join(outside, 'tree'), path.join(root, 'link-to-dir'));
    fs.symlinkSync('/', path.join(root, 'link-to-root'));
    fs.symlinkSync('../outside', path.join(root, 'relative-link'));
    fs.symlinkSync('/nonexistent', path.join(root, 'dangling'));

    expect(await cleanFilesystemVolume(root)).toMatchObject({ ok: true });
    expect(fs.readdirSync(root)).toEqual([]);
    expect(fs.readFileSync(path.join(outside, 'precious.txt'), 'utf8')).toBe('keep me');
    expect(fs.readFileSync(path.join(outside, 'tree/also-precious.txt'), 'utf8')).toBe('keep me too');
  });

  test('a process swapping subdirectories for symlinks to another volume during the walk never leads the cleaner there', async () => {
    const { root } = volume();
    const other = volume().root;
    for (let f = 0; f < 200; f++) write(path.join(other, `tenant-b-${f}`), 'another tenant');
    for (let d = 0; d < 40; d++) for (let f = 0; f < 50; f++) write(path.join(root, `d${d}`, `f${f}`));
    // A container of a force-deleted pod, still running in the released volume.
    const swapper = spawn('bash', ['-c', `cd ${root}; while :; do for d in d*; do
      [ -d "$d" ] && [ ! -L "$d" ] && mv "$d" "$d.real" 2>/dev/null && ln -s ${other} "$d" 2>/dev/null; done; done`], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 50));
      await cleanFilesystemVolume(root);
    } finally {
      swapper.kill('SIGKILL');
      await new Promise((r) => swapper.once('exit', r));
    }
    expect(fs.readdirSync(other).sort()).toEqual(Array.from({ length: 200 }, (_, f) => `tenant-b-${f}`).sort());
  });

  test('removes entries whose names are not UTF-8', async () => {
    const { root } = volume();
    const name = Buffer.concat([Buffer.from('bad-'), Buffer.from([0xff, 0xfe])]);
    fs.writeFileSync(Buffer.concat([Buffer.from(`${root}/`), name]), 'x');
    fs.mkdirSync(Buffer.concat([Buffer.from(`${root}/`), name, Buffer.from('-dir')]));
    expect(await cleanFilesystemVolume(root)).toMatchObject({ ok: true, removedEntries: 2 });
    expect(fs.readdirSync(root)).toEqual([]);
  });

  test('removes a FIFO without opening it (opening one would hang)', async () => {
    const { root } = volume();
    execFileSync('mkfifo', [path.join(root, 'pipe')]);
    expect(await cleanFilesystemVolume(root)).toMatchObject({ ok: true });
    expect(fs.readdirSync(root)).toEqual([]);
  });

  test('removes a Unix socket that is still being listened on', async () => {
    const { root } = volume();
    const socketPath = path.join(root, 'app.sock');
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      expect(fs.lstatSync(socketPath).isSocket()).toBe(true);
      expect(await cleanFilesystemVolume(root)).toMatchObject({ ok: true });
      expect(fs.readdirSync(root)).toEqual([]);
    } finally {
      server.close();
    }
  });

  test('removes a tree 2000 directories deep, deeper than PATH_MAX allows to name', async () => {
    const { root } = volume();
    makeDeepTree(root, 2000);
    expect(await cleanFilesystemVolume(root)).toMatchObject({ ok: true, removedEntries: 2001 });
    expect(fs.readdirSync(root)).toEqual([]);
  });

  test('removes 10 000 small files', async () => {
    const { root } = volume();
    for (let d = 0; d < 100; d++) {
      const dir = path.join(root, `d${d}`);
      fs.mkdirSync(dir);
      for (let f = 0; f < 100; f++) fs.writeFileSync(path.join(dir, `f${f}`), 'x');
    }
    expect(await cleanFilesystemVolume(root)).toEqual({ ok: true, removedEntries: 10_100 });
    expect(fs.readdirSync(root)).toEqual([]);
  });

  test('refuses a volume with another filesystem mounted inside it, and deletes nothing', async () => {
    const { root } = volume();
    write(path.join(root, 'mine.txt'));
    const inner = path.join(root, 'inner');
    mount('tmpfs', inner, { type: 'tmpfs' });
    write(path.join(inner, 'other-filesystem.txt'), 'not ours');

    const result = await cleanFilesystemVolume(root);
    expect(result).toEqual({ ok: false, removedEntries: 0, reason: expect.stringContaining(`mount points inside it (${inner})`) });
    expect(fs.readFileSync(path.join(inner, 'other-filesystem.txt'), 'utf8')).toBe('not ours');
    expect(fs.existsSync(path.join(root, 'mine.txt'))).toBe(true);
  });

  test('refuses a volume with a bind mount of the same filesystem inside it (same device number)', async () => {
    const { root, outside } = volume();
    write(path.join(outside, 'elsewhere.txt'), 'not this volume');
    mount(outside, path.join(root, 'bound'), { bind: true });

    expect(await cleanFilesystemVolume(root)).toMatchObject({ ok: false, reason: expect.stringContaining('must be unmounted') });
    expect(fs.readFileSync(path.join(outside, 'elsewhere.txt'), 'utf8')).toBe('not this volume');
  });

  test('stops when its signal is aborted', async () => {
    const { root } = volume();
    write(path.join(root, 'a.txt'));
    const controller = new AbortController();
    controller.abort('timed out');
    expect(await cleanFilesystemVolume(root, { signal: controller.signal })).toEqual({
      ok: false, removedEntries: 0, reason: expect.stringContaining('was stopped: timed out'),
    });
    expect(fs.existsSync(path.join(root, 'a.txt'))).toBe(true);
  });

  test('refuses a path that is not a directory', async () => {
    const { root } = volume();
    write(path.join(root, 'file'));
    expect(await cleanFilesystemVolume(path.join(root, 'file'))).toMatchObject({ ok: false, reason: expect.stringContaining('not a directory') });
  });
});

describePrivileged('the filesystem cleaner given the root\'s recorded metadata', () => {
  /** An ext4 filesystem on a loop device, mounted: the volume root is its mount point. */
  function ext4Volume(): string {
    const loop = createLoopDevice(32 * 1024 * 1024);
    mkfsExt4(loop.device);
    const root = path.join(makeTempDir('lvp-fsclean-meta-'), 'vol');
    mount(loop.device, root, { type: 'ext4' });
    return root;
  }

  /** The root's metadata as the agent reads it (through a handle). */
  async function metadataOf(root: string): Promise<RootMetadata> {
    const h = openDirectory(root);
    try {
      return await captureRootMetadata(h);
    } finally {
      fs.closeSync(h.fd);
    }
  }

  const sh = (cmd: string, ...args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });

  test('a volume cleaned with rootMetadata ends empty with exactly the snapshot, whatever the tenant did to its root', async () => {
    const root = ext4Volume();
    // As offered: the administrator's mode, group, label and default ACL.
    fs.chmodSync(root, 0o2770);
    fs.chownSync(root, 0, 3000);
    sh('setfattr', '-n', 'user.offered-by', '-v', 'admin', root);
    sh('setfacl', '-d', '-m', 'g:3000:rwx', root);
    const recorded = JSON.parse(JSON.stringify(await metadataOf(root))) as RootMetadata;
    // A tenant's doing.
    write(path.join(root, 'data/file'));
    fs.chownSync(root, 1000, 1000);
    fs.chmodSync(root, 0o3777);
    sh('setfattr', '-n', 'user.left-behind', '-v', 'secret', root);
    sh('setfattr', '-n', 'trusted.tenant', '-v', 'x', root);
    sh('setfattr', '-x', 'user.offered-by', root);
    sh('setfacl', '-m', 'u:1000:rwx', '-d', '-m', 'u:1000:rwx', root);

    expect(await cleanFilesystemVolume(root, { rootMetadata: recorded })).toMatchObject({ ok: true });
    expect(fs.readdirSync(root)).toEqual([]);
    expect(await metadataOf(root)).toEqual(recorded);
  });

  test('a snapshot that does not parse fails the cleanup before anything is removed', async () => {
    const root = ext4Volume();
    write(path.join(root, 'a.txt'));
    const bad = { mode: 0o755, uid: 0, gid: 0 } as unknown as RootMetadata;
    expect(await cleanFilesystemVolume(root, { rootMetadata: bad })).toEqual({
      ok: false, removedEntries: 0, reason: `volume "${root}" is not cleaned: root metadata snapshot is not valid: xattrs must be an object of name to base64 value, got undefined`,
    });
    expect(fs.existsSync(path.join(root, 'a.txt'))).toBe(true);
  });

  test('a root that cannot be made as recorded fails the cleanup, naming what differs', async () => {
    const root = ext4Volume();
    const recorded = await metadataOf(root);
    // ext4 has no system.lvp-test xattr: no restore can make it.
    const r = await cleanFilesystemVolume(root, { rootMetadata: { ...recorded, xattrs: { ...recorded.xattrs, 'system.lvp-test': 'eA==' } } });
    expect(r).toMatchObject({ ok: false, reason: expect.stringContaining(`volume "${root}" was emptied, but its root is not as recorded: `) });
    expect(r).toMatchObject({ reason: expect.stringContaining('xattr system.lvp-test is missing') });
  });
});

describe('nested mount points from the mount table', () => {
  const mountinfo = parseMountInfo([
    '22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw',
    '40 22 8:17 / /mnt/disks/vol1 rw - ext4 /dev/sdb1 rw',
    '41 40 0:50 / /mnt/disks/vol1/inner rw - tmpfs tmpfs rw',
    '42 40 0:51 / /mnt/disks/vol1/with\\040space rw - tmpfs tmpfs rw',
    '43 22 0:52 / /mnt/disks/vol10 rw - tmpfs tmpfs rw',
  ].join('\n'));

  test('lists mount points strictly inside a directory, escapes decoded', () => {
    expect(mountPointsInside(mountinfo, '/mnt/disks/vol1')).toEqual(['/mnt/disks/vol1/inner', '/mnt/disks/vol1/with space']);
  });

  test('does not count the directory itself or a sibling sharing its prefix', () => {
    expect(mountPointsInside(mountinfo, '/mnt/disks/vol10')).toEqual([]);
  });
});
