/**
 * The reflink copy of an XFS pool's snapshots, restores and clones (pool/reflink-copy.ts),
 * on a real XFS filesystem with reflink: a tenant's tree copied whole, its files' blocks
 * shared, nothing followed out of it.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { reflinkCopy } from '../../../src/runtime/pool/reflink-copy';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mount } from '../../support/privileged';

const MiB = 1024 * 1024;

describePrivileged('a reflink copy of a volume\'s tree', () => {
  let fsRoot: string;

  beforeAll(() => {
    // XFS's smallest filesystem.
    const loop = createLoopDevice(320 * MiB);
    execFileSync('mkfs.xfs', ['-q', '-m', 'reflink=1', loop.device]);
    fsRoot = makeTempDir('lvp-reflink-');
    mount(loop.device, fsRoot, { type: 'xfs' });
  });

  afterAll(() => cleanupPrivileged());

  let n = 0;
  /** A volume directory and an empty target beside it, on the filesystem. */
  function pair(): { volume: string; target: string } {
    const base = path.join(fsRoot, String(++n));
    fs.mkdirSync(path.join(base, 'volume'), { recursive: true });
    fs.mkdirSync(path.join(base, 'target'));
    return { volume: path.join(base, 'volume'), target: path.join(base, 'target') };
  }

  test('directories, files and symlinks are copied with their owners, modes and times; the files\' blocks are shared, not copied', async () => {
    const { volume, target } = pair();
    fs.mkdirSync(path.join(volume, 'a/b'), { recursive: true });
    fs.writeFileSync(path.join(volume, 'a/b/data'), Buffer.alloc(8 * MiB, 7));
    fs.chownSync(path.join(volume, 'a/b/data'), 1000, 2000);
    fs.chmodSync(path.join(volume, 'a'), 0o750);
    fs.utimesSync(path.join(volume, 'a/b/data'), new Date('2020-01-01T00:00:00Z'), new Date('2020-01-02T00:00:00Z'));
    fs.symlinkSync('b/data', path.join(volume, 'a/link'));
    fs.writeFileSync(path.join(volume, 'name with \n newline'), 'odd');
    const report = await reflinkCopy(volume, target);
    expect(report.leftOut).toEqual([]);
    expect(fs.readFileSync(path.join(target, 'a/b/data')).equals(Buffer.alloc(8 * MiB, 7))).toBe(true);
    const st = fs.statSync(path.join(target, 'a/b/data'));
    expect([st.uid, st.gid, st.mtime.toISOString()]).toEqual([1000, 2000, '2020-01-02T00:00:00.000Z']);
    expect(fs.statSync(path.join(target, 'a')).mode & 0o777).toBe(0o750); // eslint-disable-line no-bitwise
    expect(fs.readlinkSync(path.join(target, 'a/link'))).toBe('b/data');
    expect(fs.readFileSync(path.join(target, 'name with \n newline'), 'utf8')).toBe('odd');
    expect(execFileSync('filefrag', ['-v', path.join(target, 'a/b/data')], { encoding: 'utf8' })).toContain('shared');
    expect(fs.readdirSync(target).sort()).toEqual(['a', 'name with \n newline']);
  });

  test('into a target of another project (XFS renames nothing across projects), every file is in the target\'s project', async () => {
    const { volume, target } = pair();
    fs.mkdirSync(path.join(volume, 'd'));
    fs.writeFileSync(path.join(volume, 'd/f'), 'data');
    execFileSync('chattr', ['-p', '2000001', '+P', volume]);
    execFileSync('chattr', ['-p', '2000002', '+P', target]);
    await reflinkCopy(volume, target);
    expect(execFileSync('lsattr', ['-p', '-d', path.join(target, 'd'), path.join(target, 'd/f')], { encoding: 'utf8' }).match(/^\s*\d+/gm)!.map(Number))
      .toEqual([2000002, 2000002]);
  });

  test('a symlink out of the volume is copied as a symlink, never followed; a FIFO is left out and said', async () => {
    const { volume, target } = pair();
    const outside = path.join(fsRoot, 'outside');
    fs.mkdirSync(outside, { recursive: true });
    fs.writeFileSync(path.join(outside, 'secret'), 'the node\'s');
    fs.symlinkSync(outside, path.join(volume, 'dir-link'));
    fs.symlinkSync(path.join(outside, 'secret'), path.join(volume, 'file-link'));
    execFileSync('mkfifo', [path.join(volume, 'pipe')]);
    const report = await reflinkCopy(volume, target);
    expect(fs.lstatSync(path.join(target, 'dir-link')).isSymbolicLink()).toBe(true);
    expect(fs.lstatSync(path.join(target, 'file-link')).isSymbolicLink()).toBe(true);
    expect(fs.readdirSync(target).sort()).toEqual(['dir-link', 'file-link']);
    expect(report.leftOut).toEqual([`${path.join(target, 'pipe')} (a FIFO: no data)`]);
  });
});
