/**
 * Directories reached by handle, not by name.
 *
 * Node has no openat/unlinkat, but Linux gives every open file descriptor a
 * path, `/proc/self/fd/<fd>`, whose lookup jumps to the very directory the
 * descriptor holds, whatever has been renamed or replaced by a symlink since.
 * `<that>/<name>` then resolves only the last component, inside that directory;
 * opened with O_NOFOLLOW it is never a symlink. This is how the cleaner walks a
 * volume another process may be changing under it.
 */
import * as fs from 'node:fs';

/** An open directory and where it lives. */
export interface DirectoryHandle {
  readonly fd: number;
  /** st_dev: the filesystem. */
  readonly dev: bigint;
  /** The mount it was reached through (a bind mount of the same filesystem has another). */
  readonly mountId: number;
}

const OPEN_DIRECTORY = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW; // eslint-disable-line no-bitwise

/** `/proc/self/fd/<fd>`, or the entry `name` (raw bytes) inside that directory. */
export function handlePath(fd: number, name?: Buffer): Buffer | string {
  return name === undefined ? `/proc/self/fd/${fd}` : Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), name]);
}

/** The mount id of an open descriptor (`mnt_id` in /proc/self/fdinfo). */
export function mountIdOf(fd: number): number {
  const m = /^mnt_id:\s*(\d+)$/m.exec(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
  if (!m) throw new Error(`no mnt_id in /proc/self/fdinfo/${fd}`);
  return Number(m[1]);
}

/** O_PATH (Linux): a handle to an inode that needs no permission on it; Node does not name the flag. */
const O_PATH = 0o10000000;

/**
 * Makes the directory `name` inside the open directory `parentFd` readable,
 * writable and searchable by its owner, without following a symlink there
 * (an owner may clean a directory it made unreadable).
 */
export function openUpDirectory(name: Buffer, parentFd: number): void {
  const fd = fs.openSync(handlePath(parentFd, name), O_PATH | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW); // eslint-disable-line no-bitwise
  try {
    // chmod through the handle's path: fchmod does not take an O_PATH descriptor.
    fs.chmodSync(handlePath(fd), 0o700);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Opens the directory `path` (or `name` inside the open directory `parentFd`),
 * refusing a symlink in the last component (ENOTDIR or ELOOP). The caller closes it.
 */
export function openDirectory(path: string | Buffer, parentFd?: number): DirectoryHandle {
  const target = parentFd === undefined ? path : handlePath(parentFd, Buffer.isBuffer(path) ? path : Buffer.from(path));
  const fd = fs.openSync(target, OPEN_DIRECTORY);
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    return { fd, dev: st.dev, mountId: mountIdOf(fd) };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}
