/**
 * The walk that sets an XFS or ext4 pool volume's files back into its project
 * (src/runtime/pool/project-scan.ts), on a real XFS filesystem. This machine's kernel
 * counts no project quota, but every XFS inode carries a project ID all the same: what the
 * walk reads, sets back and leaves alone is the kernel's. The tenant's changes are made
 * here with xfs_io, as a tenant's chattr -p makes them (the real node's suite has a pod do
 * it under real quotas).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { rechargeSpecials, walkVolume } from '../../../src/runtime/pool/project-scan';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mount } from '../../support/privileged';

const MiB = 1024 * 1024;
const ID = 2_000_000;
const NEIGHBOUR = 2_000_001;
const noRest = async () => undefined;

/** The project of a file or directory, and whether it passes it on, as lsattr reads them. */
function projectOf(at: string): { id: number; inherits: boolean } {
  const m = /^\s*(\d+)\s+(\S+)\s/.exec(execFileSync('lsattr', ['-p', '-d', '--', at], { encoding: 'utf8' }))!;
  return { id: Number(m[1]), inherits: m[2].includes('P') };
}

function setProject(at: string, id: number, inherits?: boolean): void {
  execFileSync('xfs_io', ['-c', `chproj ${id}`, ...inherits === undefined ? [] : ['-c', `chattr ${inherits ? '+' : '-'}P`], at]);
}

describePrivileged('the walk of an XFS pool volume', () => {
  let fsRoot: string;
  beforeAll(() => {
    const loop = createLoopDevice(320 * MiB);
    execFileSync('mkfs.xfs', ['-q', '-f', loop.device]);
    fsRoot = makeTempDir('lvp-project-scan-');
    mount(loop.device, fsRoot, { type: 'xfs' });
  });
  afterAll(cleanupPrivileged);

  let next = 0;
  /** A volume directory of project ID, inheriting, with a neighbour beside it. */
  function volume(): { root: string; neighbour: string } {
    const root = path.join(fsRoot, `v${++next}`);
    const neighbour = path.join(fsRoot, `n${next}`);
    for (const [dir, id] of [[root, ID], [neighbour, NEIGHBOUR]] as const) {
      fs.mkdirSync(dir);
      setProject(dir, id, true);
    }
    return { root, neighbour };
  }

  test('sets back a file given a neighbour\'s project, one given none, a directory without the inherit flag, and says each', async () => {
    const { root } = volume();
    fs.mkdirSync(path.join(root, 'sub'));
    for (const f of ['a', 'b', 'sub/c', 'kept']) fs.writeFileSync(path.join(root, f), 'x');
    setProject(path.join(root, 'a'), NEIGHBOUR);
    setProject(path.join(root, 'sub/c'), 0);
    setProject(path.join(root, 'sub'), ID, false);

    const walked = await walkVolume({ identity: 'v', root, id: ID }, noRest);

    expect(walked.findings.map((f) => f.what.split(' had ')[0]).sort()).toEqual([`directory ${root}/sub`, `file ${root}/a`, `file ${root}/sub/c`]);
    expect(walked.findings.find((f) => f.what.startsWith(`file ${root}/a `))!.what).toContain(`had project ${NEIGHBOUR}, not its volume's project ${ID}`);
    for (const f of ['a', 'b', 'sub/c', 'kept', 'sub']) expect(projectOf(path.join(root, f)).id).toBe(ID);
    expect(projectOf(path.join(root, 'sub')).inherits).toBe(true);
    expect((await walkVolume({ identity: 'v', root, id: ID }, noRest)).findings).toEqual([]);
  });

  test('sets back the volume\'s root too', async () => {
    const { root } = volume();
    setProject(root, 0, false);
    expect((await walkVolume({ identity: 'v', root, id: ID }, noRest)).findings).toHaveLength(1);
    expect(projectOf(root)).toEqual({ id: ID, inherits: true });
  });

  test('follows no symlink: one to a neighbour\'s file or directory leaves the neighbour\'s projects as they are', async () => {
    const { root, neighbour } = volume();
    fs.writeFileSync(path.join(neighbour, 'theirs'), 'y');
    fs.symlinkSync(path.join(neighbour, 'theirs'), path.join(root, 'to-file'));
    fs.symlinkSync(neighbour, path.join(root, 'to-dir'));

    const walked = await walkVolume({ identity: 'v', root, id: ID }, noRest);

    expect(walked.findings).toEqual([]);
    expect(projectOf(path.join(neighbour, 'theirs')).id).toBe(NEIGHBOUR);
    expect(projectOf(neighbour).id).toBe(NEIGHBOUR);
    expect(walked.specials.map((s) => s.at.map((n) => n.toString()).join('/')).sort()).toEqual(['to-dir', 'to-file']);
  });

  test('counts each inode once (hard links, the root), and lists the special files', async () => {
    const { root } = volume();
    fs.writeFileSync(path.join(root, 'f'), 'x');
    fs.linkSync(path.join(root, 'f'), path.join(root, 'g'));
    execFileSync('mkfifo', [path.join(root, 'p')]);
    fs.symlinkSync('nowhere', path.join(root, 'l'));

    const walked = await walkVolume({ identity: 'v', root, id: ID }, noRest);

    expect(walked.inodes).toBe(4); // the root, f (= g), p, l
    expect(walked.specials.map((s) => [s.at.toString(), s.symlink]).sort()).toEqual([['l', true], ['p', false]]);
  });

  test('reads and sets back a file whose name is not UTF-8, through a handle', async () => {
    const { root } = volume();
    const name = Buffer.from([0x66, 0xff, 0xfe]);
    fs.writeFileSync(Buffer.concat([Buffer.from(`${root}/`), name]), 'x');
    execFileSync('sh', ['-c', `cd ${root} && for f in f*; do xfs_io -c 'chproj ${NEIGHBOUR}' "$f"; done`]);

    const walked = await walkVolume({ identity: 'v', root, id: ID }, noRest);

    expect(walked.findings).toHaveLength(1);
    expect(execFileSync('sh', ['-c', `cd ${root} && lsattr -p -d -- f*`], { encoding: 'utf8' })).toMatch(new RegExp(`^${ID} `));
  });

  test('recharges special files: a symlink made anew in place with its target, a FIFO removed, a file never touched', async () => {
    const { root } = volume();
    fs.mkdirSync(path.join(root, 'd'));
    fs.symlinkSync('../target', path.join(root, 'd/l'));
    execFileSync('mkfifo', [path.join(root, 'd/p')]);
    fs.writeFileSync(path.join(root, 'd/f'), 'data');
    const before = fs.lstatSync(path.join(root, 'd/l')).ino;
    const { specials } = await walkVolume({ identity: 'v', root, id: ID }, noRest);

    const findings = await rechargeSpecials({ identity: 'v', root, id: ID }, specials);

    expect(findings.map((f) => f.what.split(' was ')[0]).sort()).toEqual([`FIFO ${root}/d/p`, `symlink ${root}/d/l`]);
    expect(fs.readlinkSync(path.join(root, 'd/l'))).toBe('../target');
    expect(fs.lstatSync(path.join(root, 'd/l')).ino).not.toBe(before);
    expect(fs.existsSync(path.join(root, 'd/p'))).toBe(false);
    expect(fs.readFileSync(path.join(root, 'd/f'), 'utf8')).toBe('data');
    expect(fs.readdirSync(path.join(root, 'd')).sort()).toEqual(['f', 'l']);
  });
});
