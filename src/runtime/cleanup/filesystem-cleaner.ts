/**
 * The filesystem cleaner: removes every child of a volume's mount point and
 * keeps the mount point itself.
 *
 * A Released volume may still be changed while we clean it: a container of a
 * force-deleted pod can go on running in it and replace a directory by a symlink
 * to another tenant's volume between our listing and our removal. So the walk
 * never uses a path name below the volume root:
 * - every directory is opened by handle (O_NOFOLLOW, relative to its parent's
 *   handle, see volume/directory-handle.ts) and listed, emptied and removed
 *   through handles; a symlink planted anywhere, at any moment, is unlinked as
 *   an entry, never followed, and an entry that changes type between listing and
 *   removal is handled as what it is now;
 * - names are raw bytes, so names that are not UTF-8 are removed too;
 * - it never leaves the volume: a directory on another filesystem, or reached
 *   through another mount (a bind mount of the same filesystem), stops the
 *   cleanup before it is entered;
 * - it is iterative and holds at most {@link MAX_DEPTH} directory handles: a
 *   deeper subtree is moved up to the volume root (a rename within the volume)
 *   and emptied from there;
 * - it works in slices of synchronous calls (the fastest way to make many small
 *   calls from Node), yielding to the event loop between slices so the controller
 *   stays responsive, and stops when its signal is aborted;
 * - given the root's recorded metadata (volume/root-metadata.ts), it then makes the
 *   root itself exactly that, through the same handle: mode, owner and xattrs, ACLs
 *   included, so nothing a tenant did to the root reaches the next one. Without it
 *   the root keeps what it has.
 */
import * as fs from 'node:fs';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { findNestedMounts } from './nested-mounts';
import { DirectoryHandle, handlePath, openDirectory, openUpDirectory } from '../volume/directory-handle';
import { parseRootMetadata, restoreRootMetadata, RootMetadata } from '../volume/root-metadata';

export interface FilesystemCleanOptions {
  /** Aborting it stops the cleanup between two filesystem calls. */
  readonly signal?: AbortSignal;
  /**
   * Longest stretch of synchronous filesystem calls before yielding to the event loop.
   * @default 20
   */
  readonly sliceMs?: number;
  /**
   * The root's metadata as recorded when the volume was first offered: once emptied, the
   * root is made exactly that (restoreRootMetadata), or the cleanup fails.
   */
  readonly rootMetadata?: RootMetadata;
}

export type FilesystemCleanResult =
  | { readonly ok: true; readonly removedEntries: number }
  | { readonly ok: false; readonly removedEntries: number; readonly reason: string };

/** Directory handles held at once, at most; deeper subtrees are moved up to the root. */
export const MAX_DEPTH = 64;
/** Removing a directory that keeps refilling is given up after this many listings. */
const MAX_LISTINGS_PER_DIRECTORY = 3;
/** An entry that keeps changing type between our calls is given up after this many tries. */
const MAX_TRIES_PER_ENTRY = 3;
const CHECK_CLOCK_EVERY_OPS = 64;

class Refusal extends Error {}

/** A directory being emptied: its handle, its name in its parent, and the names of subdirectories still to visit. */
interface Frame {
  readonly dir: DirectoryHandle;
  readonly parent?: Frame;
  readonly name?: Buffer;
  readonly depth: number;
  listings: number;
  pending: Buffer[];
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

function printable(name: Buffer): string {
  return JSON.stringify(name.toString('utf8'));
}

/**
 * Removes every child of the volume root (a directory, normally a mount point),
 * keeping the root. `root` is a path, opened here without following a symlink, or
 * a handle the caller opened (and checked) and keeps: then the very directory it
 * checked is the one cleaned.
 */
export async function cleanFilesystemVolume(root: string | DirectoryHandle, options: FilesystemCleanOptions = {}): Promise<FilesystemCleanResult> {
  const sliceMs = options.sliceMs ?? 20;
  const label = typeof root === 'string' ? root : handlePath(root.fd).toString();
  let removedEntries = 0;
  const failed = (reason: string): FilesystemCleanResult => ({ ok: false, removedEntries, reason });
  if (options.rootMetadata) {
    // A record we cannot restore from fails the cleanup before anything is removed.
    try {
      parseRootMetadata(options.rootMetadata);
    } catch (e) {
      return failed(`volume "${label}" is not cleaned: ${(e as Error).message}`);
    }
  }

  let rootDir: DirectoryHandle;
  try {
    rootDir = typeof root === 'string' ? openDirectory(root) : root;
  } catch (e) {
    return failed(`volume "${label}" is not a directory, or is a symlink: ${code(e) ?? String(e)}`);
  }
  const ownsRoot = typeof root === 'string';
  try {
    if (typeof root === 'string') {
      const nested = await findNestedMounts(root);
      if (nested.length > 0) {
        return failed(`volume "${root}" has mount points inside it (${nested.join(', ')}); they must be unmounted before it can be cleaned`);
      }
    }
    const rootMode = fs.fstatSync(rootDir.fd).mode % 0o10000;
    let rootModeChanged = false;
    let relocated = 0;

    /** Runs `op`; on a permission error makes `dir` writable and searchable by its owner and tries once more. */
    const withPermission = <T>(dir: DirectoryHandle, op: () => T): T => {
      try {
        return op();
      } catch (e) {
        if (code(e) !== 'EACCES' && code(e) !== 'EPERM') throw e;
        if (dir === rootDir) rootModeChanged = true;
        fs.fchmodSync(dir.fd, 0o700);
        return op();
      }
    };

    /** Removes one non-directory entry; false when it is a directory now (it changed since the listing). */
    const unlinkEntry = (frame: Frame, name: Buffer): boolean => {
      try {
        withPermission(frame.dir, () => fs.unlinkSync(handlePath(frame.dir.fd, name)));
        removedEntries++;
        return true;
      } catch (e) {
        if (code(e) === 'ENOENT') return true;
        if (code(e) === 'EISDIR' || code(e) === 'EPERM' && isDirectoryEntry(frame, name)) return false;
        if (code(e) === 'EBUSY') throw new Refusal(`${printable(name)} in volume "${label}" is a mount point; it must be unmounted before the volume can be cleaned`);
        throw e;
      }
    };

    /** Opens a subdirectory; undefined when it is gone or no directory any more (then it was unlinked). */
    const openChild = (frame: Frame, name: Buffer): DirectoryHandle | undefined => {
      for (let attempt = 0; attempt < MAX_TRIES_PER_ENTRY; attempt++) {
        let child: DirectoryHandle;
        try {
          child = withPermission(frame.dir, () => openDirectory(name, frame.dir.fd));
        } catch (e) {
          if (code(e) === 'ENOENT') return undefined;
          if (code(e) === 'EACCES' && attempt === 0) {
            // A directory its owner made unreadable: open it up (through an O_PATH handle, never by name).
            openUpDirectory(name, frame.dir.fd);
            continue;
          }
          // A symlink (ELOOP, or ENOTDIR under O_DIRECTORY) or a file planted since the listing.
          if (code(e) === 'ENOTDIR' || code(e) === 'ELOOP') {
            if (unlinkEntry(frame, name)) return undefined;
            continue;
          }
          throw e;
        }
        if (child.dev !== rootDir.dev || child.mountId !== rootDir.mountId) {
          fs.closeSync(child.fd);
          throw new Refusal(`${printable(name)} in volume "${label}" is on another filesystem or mount; it must be unmounted before the volume can be cleaned`);
        }
        return child;
      }
      throw new Error(`${printable(name)} in volume "${label}" keeps changing between directory and file`);
    };

    const list = (frame: Frame): void => {
      frame.listings++;
      const entries = withPermission(frame.dir, () => fs.readdirSync(handlePath(frame.dir.fd), { withFileTypes: true, encoding: 'buffer' }));
      for (const entry of entries) {
        if (entry.isDirectory() || !unlinkEntry(frame, entry.name)) frame.pending.push(entry.name);
      }
    };

    const rootFrame: Frame = { dir: rootDir, depth: 0, listings: 0, pending: [] };
    if (options.signal?.aborted) return failed(`cleanup of "${label}" was stopped: ${String(options.signal.reason ?? 'aborted')}`);
    list(rootFrame);
    const stack: Frame[] = [rootFrame];
    let sliceStart = performance.now();
    let ops = 0;
    try {
      while (stack.length > 0) {
        if (++ops % CHECK_CLOCK_EVERY_OPS === 0 && performance.now() - sliceStart >= sliceMs) {
          await yieldToEventLoop();
          sliceStart = performance.now();
        }
        if (options.signal?.aborted) return failed(`cleanup of "${label}" was stopped: ${String(options.signal.reason ?? 'aborted')}`);

        const frame = stack[stack.length - 1];
        const next = frame.pending.pop();
        if (next !== undefined) {
          const child = openChild(frame, next);
          if (!child) continue;
          if (frame.depth + 1 >= MAX_DEPTH) {
            // Too deep to hold another handle: move the subtree up to the root, which finishes it later.
            fs.closeSync(child.fd);
            const moved = Buffer.from(`.lvp-cleanup-deep-${process.pid}-${relocated++}`);
            withPermission(frame.dir, () => fs.renameSync(handlePath(frame.dir.fd, next), handlePath(rootDir.fd, moved)));
            rootFrame.pending.push(moved);
            continue;
          }
          const childFrame: Frame = { dir: child, parent: frame, name: next, depth: frame.depth + 1, listings: 0, pending: [] };
          stack.push(childFrame);
          list(childFrame);
          continue;
        }
        if (frame === rootFrame) {
          // Entries may have appeared in the root meanwhile (a writer still at work): list it again, a few times.
          if (fs.readdirSync(handlePath(rootDir.fd)).length === 0) break;
          if (rootFrame.listings >= MAX_LISTINGS_PER_DIRECTORY) throw new Error(`volume "${label}" keeps refilling while it is cleaned`);
          list(rootFrame);
          continue;
        }
        try {
          withPermission(frame.parent!.dir, () => fs.rmdirSync(handlePath(frame.parent!.dir.fd, frame.name)));
          removedEntries++;
        } catch (e) {
          if (code(e) === 'EBUSY') throw new Refusal(`${printable(frame.name!)} in volume "${label}" is a mount point; it must be unmounted before the volume can be cleaned`);
          if (code(e) === 'ENOTEMPTY' && frame.listings < MAX_LISTINGS_PER_DIRECTORY) {
            // Something was added meanwhile: list it again.
            list(frame);
            continue;
          }
          if (code(e) !== 'ENOENT') throw e;
        }
        stack.pop();
        fs.closeSync(frame.dir.fd);
      }
    } finally {
      for (const frame of stack) if (frame !== rootFrame) fs.closeSync(frame.dir.fd);
      if (rootModeChanged) fs.fchmodSync(rootDir.fd, rootMode);
    }
    if (options.rootMetadata) {
      const restored = await restoreRootMetadata(rootDir, options.rootMetadata);
      if (!restored.ok) return failed(`volume "${label}" was emptied, but its root is not as recorded: ${restored.reason}`);
    }
  } catch (e) {
    if (e instanceof Refusal) return failed(e.message);
    const err = e as NodeJS.ErrnoException;
    return failed(`cleanup of "${label}" failed: ${err.code ?? ''} ${err.message}`.replace(/\s+/g, ' '));
  } finally {
    if (ownsRoot) fs.closeSync(rootDir.fd);
  }
  return { ok: true, removedEntries };
}

/** Whether `name` in the frame's directory is a directory now (lstat through the handle; never follows). */
function isDirectoryEntry(frame: Frame, name: Buffer): boolean {
  try {
    return fs.lstatSync(handlePath(frame.dir.fd, name)).isDirectory();
  } catch {
    return false;
  }
}
