/**
 * Exclusive locks on directories, held by the kernel for this process.
 *
 * Two agents may run on one node at once (a DaemonSet rolled out with
 * `maxSurge`, a second installation by mistake). Both see the node's volume
 * directories through the same host directories, so a flock(2) on the directory
 * itself is seen by both, whatever their containers; the kernel drops it when the
 * process dies, even by SIGKILL, so a crashed agent never leaves a stale lock.
 *
 * Node has no flock(); util-linux's `flock <fd>` takes it on a descriptor it
 * inherits from us. The lock belongs to the open file description, which we keep
 * open: it stays ours after `flock` exits, until we close the descriptor.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';

export interface HeldLock {
  readonly dir: string;
  readonly fd: number;
  /** The locked directory: a directory replaced under the same name is another lock. */
  readonly dev: bigint;
  readonly ino: bigint;
}

/** Tries once to take the lock on `dir`; undefined when another holder has it. Throws when `dir` cannot be opened. */
export async function tryLockDirectory(dir: string): Promise<HeldLock | undefined> {
  const fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY); // eslint-disable-line no-bitwise
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (!await flockDescriptor(fd, dir)) {
      fs.closeSync(fd);
      return undefined;
    }
    return { dir, fd, dev: st.dev, ino: st.ino };
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/**
 * Takes an exclusive flock on the open file description of `fd` (kept until `fd` is
 * closed): at once, or waiting up to `waitSeconds` for its holder. False when it is
 * held elsewhere; throws when flock cannot run.
 */
export async function flockDescriptor(fd: number, label: string, waitSeconds?: number): Promise<boolean> {
  const how = waitSeconds === undefined ? ['--nonblock'] : ['--timeout', String(waitSeconds)];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn('flock', ['--exclusive', ...how, '3'], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (e) => reject(new Error(`cannot run flock to lock ${label}: ${e.message}`)));
    child.on('close', (c) => (c === 0 || c === 1 ? resolve(c) : reject(new Error(`flock on ${label} failed (${c}): ${stderr.trim()}`))));
  });
  return code === 0;
}

/** Whether `lock` still locks the directory named `lock.dir` (not one replaced under that name since). */
export function stillLocks(lock: HeldLock): boolean {
  try {
    const st = fs.statSync(lock.dir, { bigint: true });
    return st.dev === lock.dev && st.ino === lock.ino;
  } catch {
    return false;
  }
}

export function releaseLock(lock: HeldLock): void {
  fs.closeSync(lock.fd);
}
