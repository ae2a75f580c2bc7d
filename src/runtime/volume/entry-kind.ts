/**
 * What a directory entry is, following at most the one symlink a user puts in a
 * discovery directory (e.g. to /dev/disk/by-id/...). The decisions about what is
 * a volume live in discovery; this file only looks.
 */
import * as fs from 'node:fs';
import { deviceNumberOf, type DeviceNumber } from './device-number';

export type EntryKind = 'directory' | 'block-device' | 'regular-file' | 'broken-link' | 'other';

export interface EntryInspection {
  /** The path as given (not resolved). */
  readonly path: string;
  /** What the path is, after following a symlink. */
  readonly kind: EntryKind;
  /** The symlink's target as written, when the path is a symlink. */
  readonly linkTarget?: string;
  /** The fully resolved path (realpath), unless the link is broken. */
  readonly resolvedPath?: string;
  /** major:minor of a block device. */
  readonly deviceNumber?: DeviceNumber;
  /** For people: `a symlink to block device /dev/loop3`, `a regular file`, `a FIFO`. */
  readonly description: string;
}

/** Errors that mean "the link points nowhere usable", as opposed to "we may not look". */
const BROKEN_LINK_CODES = new Set(['ENOENT', 'ENOTDIR', 'ELOOP']);

/**
 * Inspects `path`. A broken symlink is a result (`broken-link`), not an error;
 * anything else that stops us looking (EACCES, EIO, the path vanishing) throws.
 *
 * Synchronous: what it reads is in the kernel's inode and dentry caches (an entry of
 * a discovery directory, a mount's root), and a pass reads thousands of them, where a
 * promise and a thread-pool hop each cost several times the system call.
 */
export function inspectEntry(path: string): EntryInspection {
  const own = fs.lstatSync(path, { bigint: true });
  if (!own.isSymbolicLink()) {
    return describe(path, own, undefined, path);
  }
  const linkTarget = fs.readlinkSync(path);
  let target: fs.BigIntStats;
  let resolvedPath: string;
  try {
    target = fs.statSync(path, { bigint: true });
    resolvedPath = fs.realpathSync.native(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (BROKEN_LINK_CODES.has(code)) {
      return { path, kind: 'broken-link', linkTarget, description: `a broken symlink to ${linkTarget} (${code})` };
    }
    throw error;
  }
  return describe(path, target, linkTarget, resolvedPath);
}

function describe(path: string, stats: fs.BigIntStats, linkTarget: string | undefined, resolvedPath: string): EntryInspection {
  const [kind, what] = kindOf(stats);
  const description = linkTarget === undefined ? `a ${what}` : `a symlink to ${what} ${resolvedPath}`;
  const base = { path, kind, linkTarget, resolvedPath, description };
  return kind === 'block-device' ? { ...base, deviceNumber: deviceNumberOf(stats.rdev) } : base;
}

function kindOf(stats: fs.BigIntStats): [EntryKind, string] {
  if (stats.isDirectory()) return ['directory', 'directory'];
  if (stats.isBlockDevice()) return ['block-device', 'block device'];
  if (stats.isFile()) return ['regular-file', 'regular file'];
  if (stats.isCharacterDevice()) return ['other', 'character device'];
  if (stats.isFIFO()) return ['other', 'FIFO'];
  if (stats.isSocket()) return ['other', 'socket'];
  return ['other', 'file of unknown type'];
}
