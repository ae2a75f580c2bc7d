/**
 * What bounds the time a file moved out of an XFS or ext4 pool volume's project counts
 * against the wrong limit (docs/operations.md, "XFS and ext4"): how fast the agent's walk
 * (src/runtime/pool/project-scan.ts) goes through a volume, and whether the kernel would
 * tell of a project change instead. On this machine's XFS (no quota is counted here, but
 * every inode carries its project all the same), on a loop device.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { walkVolume } from '../../src/runtime/pool/project-scan';
import { createLoopDevice, makeTempDir, mount } from '../../test/support/privileged';
import { MiB, row, seconds } from '../table';

const ID = 2_000_000;
const DIRECTORIES = 100;
const FILES_PER_DIRECTORY = 100;
/** Of every this many files, one is given another project. */
const MOVED_EVERY = 100;

export async function projectScan(): Promise<void> {
  const loop = createLoopDevice(1024 * MiB);
  execFileSync('mkfs.xfs', ['-q', '-f', loop.device]);
  const fsRoot = makeTempDir('lvp-bench-scan-');
  mount(loop.device, fsRoot, { type: 'xfs' });
  const root = path.join(fsRoot, 'volume');
  fs.mkdirSync(root);
  execFileSync('xfs_io', ['-c', `chproj ${ID}`, '-c', 'chattr +P', root]);
  const moved: string[] = [];
  for (let d = 0; d < DIRECTORIES; d++) {
    fs.mkdirSync(path.join(root, `d${d}`));
    for (let f = 0; f < FILES_PER_DIRECTORY; f++) {
      const file = path.join(root, `d${d}`, `f${f}`);
      fs.writeFileSync(file, 'x');
      if ((d * FILES_PER_DIRECTORY + f) % MOVED_EVERY === 0) moved.push(file);
    }
  }
  const files = DIRECTORIES * FILES_PER_DIRECTORY;
  for (const file of moved) execFileSync('xfs_io', ['-c', 'chproj 0', file]);

  // The walk as the agent runs it (resting three times as long as each directory took), and its work alone.
  let resting = 0;
  const t0 = performance.now();
  const walked = await walkVolume({ identity: 'bench', root, id: ID }, async (ms) => {
    resting += ms;
    await new Promise((r) => setTimeout(r, ms));
  });
  const elapsed = performance.now() - t0;
  if (walked.findings.length !== moved.length) throw new Error(`the walk set back ${walked.findings.length} files, not the ${moved.length} moved`);
  const working = elapsed - resting;
  row(`Walk of an XFS pool volume of ${files} files in ${DIRECTORIES} directories, ${moved.length} of them in another project: `
    + 'the work (read every project, set back the moved)', `${seconds(working)} (${Math.round(files / (working / 1000))} files/s)`);
  row('The same walk as the agent runs it, resting three times as long as each directory took (what bounds a file\'s time out of its project)',
    seconds(elapsed));

  // A kernel notification instead: inotify (fs.watch) on the directory, as a watcher of every directory of a volume would have it.
  const watched = path.join(root, 'd0');
  const events: string[] = [];
  const watcher = fs.watch(watched, (event, name) => events.push(`${event} ${String(name)}`));
  try {
    await new Promise((r) => setTimeout(r, 200));
    for (let f = 1; f < 21; f++) execFileSync('xfs_io', ['-c', 'chproj 7', path.join(watched, `f${f}`)]);
    await new Promise((r) => setTimeout(r, 500));
    const afterProjects = events.length;
    for (let f = 1; f < 21; f++) fs.chmodSync(path.join(watched, `f${f}`), 0o600);
    await new Promise((r) => setTimeout(r, 500));
    row('inotify events for 20 project changes (FS_IOC_FSSETXATTR) in a watched directory, beside 20 chmods (a kernel notification the walk could wait on)',
      `${afterProjects} for the project changes, ${events.length - afterProjects} for the chmods`);
  } finally {
    watcher.close();
  }
}
