/**
 * The filesystem cleaner: removes every child of a volume's mount point and
 * keeps the mount point itself.
 *
 * Why our own walk and not `fs.rm({ recursive: true })` on each child: Node's
 * rm does not follow symlinks (it unlinks them), but it does descend into a
 * nested mount point and empties a filesystem that is not the volume's, and it
 * gives up on a directory it may not read. This walk:
 * - never follows a symlink: entries are typed by readdir/lstat and every
 *   non-directory (symlink, file, socket, FIFO, device node) is unlinked,
 *   never opened, so nothing can hang or escape the volume;
 * - never leaves the volume's filesystem: a nested mount point (from the mount
 *   table, or a directory whose device differs) stops the cleanup with a reason
 *   before it is entered;
 * - is iterative (an explicit stack, no recursion, one directory handle at a
 *   time), and moves a subtree whose path grows too long for the kernel up to the
 *   volume root, so any depth can be removed;
 * - makes unwritable or unreadable directories writable before retrying;
 * - works in slices of synchronous calls (the fastest way to make many small
 *   calls from Node), yielding to the event loop between slices so the
 *   controller stays responsive, and stops when its signal is aborted.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { findNestedMounts } from './nested-mounts';

export interface FilesystemCleanOptions {
  /** Aborting it stops the cleanup between two filesystem calls. */
  readonly signal?: AbortSignal;
  /**
   * Longest stretch of synchronous filesystem calls before yielding to the event loop.
   * @default 20
   */
  readonly sliceMs?: number;
}

export type FilesystemCleanResult =
  | { readonly ok: true; readonly removedEntries: number }
  | { readonly ok: false; readonly removedEntries: number; readonly reason: string };

/** A path longer than this (bytes) is moved up to the root before going deeper (PATH_MAX is 4096). */
const LONG_PATH_BYTES = 3000;
/** Removing a directory that keeps refilling is given up after this many listings. */
const MAX_LISTINGS_PER_DIRECTORY = 3;
const CHECK_CLOCK_EVERY_OPS = 64;

class Refusal extends Error {}

interface Frame {
  readonly path: string;
  listings: number;
  listed: boolean;
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

/** Removes every child of `root` (a directory, normally a mount point), keeping `root`. */
export async function cleanFilesystemVolume(root: string, options: FilesystemCleanOptions = {}): Promise<FilesystemCleanResult> {
  const sliceMs = options.sliceMs ?? 20;
  let removedEntries = 0;
  const failed = (reason: string): FilesystemCleanResult => ({ ok: false, removedEntries, reason });

  let rootStat: fs.Stats;
  try {
    rootStat = fs.lstatSync(root);
  } catch (e) {
    return failed(`volume "${root}" cannot be inspected: ${code(e) ?? String(e)}`);
  }
  if (!rootStat.isDirectory()) return failed(`volume "${root}" is not a directory`);
  const nested = await findNestedMounts(root);
  if (nested.length > 0) {
    return failed(`volume "${root}" has mount points inside it (${nested.join(', ')}); they must be unmounted before it can be cleaned`);
  }

  const rootDev = rootStat.dev;
  const rootMode = rootStat.mode % 0o10000; // permission bits only
  let rootModeChanged = false;
  let relocated = 0;

  /** Makes `dir` readable, writable and searchable by its owner; remembers to restore the root's mode. */
  const openUp = (dir: string): void => {
    if (dir === root) rootModeChanged = true;
    fs.chmodSync(dir, 0o700);
  };
  /** Runs `op`; on a permission error opens up `dir` (the directory that denied it) and tries once more. */
  const withPermission = <T>(dir: string, op: () => T): T => {
    try {
      return op();
    } catch (e) {
      if (code(e) !== 'EACCES' && code(e) !== 'EPERM') throw e;
      openUp(dir);
      return op();
    }
  };
  const ignoringMissing = (op: () => void): void => {
    try {
      op();
    } catch (e) {
      if (code(e) !== 'ENOENT') throw e;
    }
  };
  /** A fresh name at the root for a subtree moved up out of a too-long path. */
  const relocationTarget = (): string => {
    for (;;) {
      const candidate = path.join(root, `.lvp-cleanup-deep-${relocated++}`);
      if (!fs.existsSync(candidate)) return candidate;
    }
  };

  const stack: Frame[] = [{ path: root, listings: 0, listed: false }];
  let sliceStart = performance.now();
  let ops = 0;
  try {
    while (stack.length > 0) {
      if (++ops % CHECK_CLOCK_EVERY_OPS === 0 && performance.now() - sliceStart >= sliceMs) {
        await yieldToEventLoop();
        sliceStart = performance.now();
      }
      if (options.signal?.aborted) return failed(`cleanup of "${root}" was stopped: ${String(options.signal.reason ?? 'aborted')}`);

      const frame = stack[stack.length - 1];
      if (frame.listed) {
        stack.pop();
        if (frame.path === root) continue;
        try {
          withPermission(path.dirname(frame.path), () => fs.rmdirSync(frame.path));
          removedEntries++;
        } catch (e) {
          if (code(e) === 'ENOENT') continue;
          if (code(e) === 'EBUSY') throw new Refusal(`"${frame.path}" is a mount point; it must be unmounted before the volume can be cleaned`);
          if (code(e) !== 'ENOTEMPTY' || frame.listings >= MAX_LISTINGS_PER_DIRECTORY) throw e;
          // Something was added meanwhile: list it again.
          frame.listed = false;
          stack.push(frame);
        }
        continue;
      }

      frame.listed = true;
      frame.listings++;
      let entries: fs.Dirent[];
      try {
        entries = withPermission(frame.path, () => fs.readdirSync(frame.path, { withFileTypes: true }));
      } catch (e) {
        if (code(e) === 'ENOENT') continue;
        throw e;
      }
      for (const entry of entries) {
        const child = path.join(frame.path, entry.name);
        if (!entry.isDirectory()) {
          // Symlinks, files, sockets, FIFOs, device nodes: unlinked, never opened or followed.
          ignoringMissing(() => withPermission(frame.path, () => fs.unlinkSync(child)));
          removedEntries++;
          continue;
        }
        let st: fs.Stats;
        try {
          st = withPermission(frame.path, () => fs.lstatSync(child));
        } catch (e) {
          if (code(e) === 'ENOENT') continue;
          throw e;
        }
        if (st.dev !== rootDev) throw new Refusal(`"${child}" is on another filesystem (a mount point); it must be unmounted before the volume can be cleaned`);
        let next = child;
        if (Buffer.byteLength(child) > LONG_PATH_BYTES) {
          next = relocationTarget();
          withPermission(frame.path, () => fs.renameSync(child, next));
        }
        stack.push({ path: next, listings: 0, listed: false });
      }
    }
  } catch (e) {
    if (e instanceof Refusal) return failed(e.message);
    const err = e as NodeJS.ErrnoException;
    return failed(`cleanup of "${root}" failed: ${err.code ?? ''} ${err.message}`.replace(/\s+/g, ' '));
  } finally {
    if (rootModeChanged) fs.chmodSync(root, rootMode);
  }
  return { ok: true, removedEntries };
}
