/**
 * A directory tree copied with every regular file's blocks shared, not copied (a reflink:
 * `cp --reflink=always`, the kernel's FICLONE), for an XFS pool's snapshots, restores and
 * clones: as fast as the tree has files, whatever their size.
 *
 * The source is walked by handles from its root (volume/directory-handle.ts): no symlink
 * is followed, no other filesystem entered, and cp is given each file's descriptor
 * (`/proc/<agent>/fd/<n>`), opened without following a symlink and checked to be the inode
 * the walk saw, never its name: whatever a tenant swaps in while its volume is copied is
 * never read. The copy is made in a target only the agent reaches (in the pool directory).
 *
 * Copied: directories, regular files (their mode, owner and times), symlinks as they are.
 * Left out, and said: FIFOs, sockets and device nodes, which hold no data. Hard links
 * become separate files. Not one point in time for the whole tree: each file's blocks are
 * taken at once, files one after another (btrfs and LVM thin snapshots are atomic).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { run } from './command';
import { DirectoryHandle, handlePath, openDirectory } from '../volume/directory-handle';

/** Files given to one cp (well below the kernel's limit on arguments). */
const FILES_PER_CP = 256;
/** The depth past which a tree is not copied (as the cleaner's walk). */
const MAX_DEPTH = 256;
// eslint-disable-next-line no-bitwise
const OPEN_FILE = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;

/** What was left out of a copy, for a person. */
export interface CopyReport {
  readonly leftOut: readonly string[];
}

/**
 * Copies the tree at `source` into the directory `target` (there, empty, only the agent's),
 * by handles. cp copies files into a staging directory in `target` (so that they are in its
 * project: XFS renames nothing across projects), named there by their descriptors, and each
 * is renamed into place; the staging directory, under a random name, goes at the end.
 */
export async function reflinkCopy(source: string, target: string): Promise<CopyReport> {
  const leftOut: string[] = [];
  const root = openDirectory(source);
  const staging = path.join(target, `.lvp-copy-${randomBytes(8).toString('hex')}`);
  fs.mkdirSync(staging, 0o700);
  try {
    await copyDirectory(root, Buffer.from(target), staging, 0, leftOut);
    copyMetadata(fs.fstatSync(root.fd), target);
  } finally {
    fs.closeSync(root.fd);
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return { leftOut };
}

async function copyDirectory(dir: DirectoryHandle, to: Buffer, staging: string, depth: number, leftOut: string[]): Promise<void> {
  if (depth > MAX_DEPTH) throw new Error(`the tree is deeper than ${MAX_DEPTH} directories at ${to.toString()}; not copied`);
  const files: Array<{ readonly fd: number; readonly name: Buffer }> = [];
  const directories: Buffer[] = [];
  const entryOf = (name: Buffer) => Buffer.concat([to, Buffer.from('/'), name]);
  try {
    for (const name of fs.readdirSync(handlePath(dir.fd), { encoding: 'buffer' })) {
      const at = handlePath(dir.fd, name);
      const st = fs.lstatSync(at, { bigint: true, throwIfNoEntry: false });
      if (!st) continue; // removed meanwhile
      if (st.isDirectory()) {
        if (st.dev === dir.dev) directories.push(name);
        else leftOut.push(`${entryOf(name).toString()} (another filesystem mounted there)`);
      } else if (st.isFile()) {
        const fd = openFile(at, st.ino);
        if (fd !== undefined) files.push({ fd, name });
      } else if (st.isSymbolicLink()) {
        fs.symlinkSync(fs.readlinkSync(at, { encoding: 'buffer' }), entryOf(name));
        fs.lchownSync(entryOf(name), Number(st.uid), Number(st.gid));
      } else {
        leftOut.push(`${entryOf(name).toString()} (${st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device node'}: no data)`);
      }
    }
    for (let i = 0; i < files.length; i += FILES_PER_CP) {
      const batch = files.slice(i, i + FILES_PER_CP);
      await run('cp', ['--reflink=always', '--preserve=mode,ownership,timestamps', ...batch.map((f) => `/proc/${process.pid}/fd/${f.fd}`), `${staging}/`],
        { timeoutMs: 10 * 60_000 });
      for (const f of batch) fs.renameSync(path.join(staging, String(f.fd)), entryOf(f.name));
    }
  } finally {
    for (const f of files) fs.closeSync(f.fd);
  }
  for (const name of directories) {
    let child: DirectoryHandle;
    try {
      child = openDirectory(name, dir.fd);
    } catch {
      continue; // replaced by something else meanwhile: not followed
    }
    try {
      if (child.dev !== dir.dev) continue;
      fs.mkdirSync(entryOf(name), 0o700);
      await copyDirectory(child, entryOf(name), staging, depth + 1, leftOut);
      copyMetadata(fs.fstatSync(child.fd), entryOf(name));
    } finally {
      fs.closeSync(child.fd);
    }
  }
}

/** The regular file at `at` opened without following a symlink, if it is still the inode `ino`. */
function openFile(at: Buffer | string, ino: bigint): number | undefined {
  let fd: number;
  try {
    fd = fs.openSync(at, OPEN_FILE);
  } catch {
    return undefined; // removed or replaced meanwhile
  }
  const st = fs.fstatSync(fd, { bigint: true });
  if (st.ino === ino && st.isFile()) return fd;
  fs.closeSync(fd);
  return undefined;
}

/** A directory's owner, mode and times, as its source's. */
function copyMetadata(st: fs.Stats, to: Buffer | string): void {
  fs.chownSync(to, st.uid, st.gid);
  fs.chmodSync(to, st.mode & 0o7777); // eslint-disable-line no-bitwise
  fs.utimesSync(to, st.atime, st.mtime);
}
