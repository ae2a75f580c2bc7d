/**
 * Path safety: the only paths a cleaner may touch are entries inside a
 * configured class directory (or device directory).
 *
 * Two steps. `containerPathFor` (pure) maps a PV's host path back into the
 * directory as the container sees it, refusing anything that is not inside it.
 * `resolveVolumePath` (I/O) then follows the real filesystem: a directory volume
 * must be exactly where its name says (no symlink anywhere below the class
 * directory, so `vol1 -> /` or `vol1 -> vol2` is refused); a block volume may be
 * a symlink to a device node (the by-id links upstream documents), but the
 * directories leading to it may not be symlinks either.
 */
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

/** True when `child` lies strictly inside `dir` (both absolute; compared after normalising). */
export function isStrictlyInside(child: string, dir: string): boolean {
  if (!path.posix.isAbsolute(child) || !path.posix.isAbsolute(dir)) return false;
  const c = path.posix.normalize(child);
  const d = path.posix.normalize(dir).replace(/\/+$/, '');
  return c.startsWith(`${d}/`) && c.length > d.length + 1;
}

export type PathMapping =
  | { readonly ok: true; readonly containerPath: string; readonly relativePath: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Maps `hostPath` (a PV's `spec.local.path`) from `hostDir` to the same entry
 * under `mountDir`. With `directChildOnly` (the directory dialect: discovery only
 * makes PVs for first-level entries) a deeper path is refused too.
 */
export function containerPathFor(
  hostPath: string,
  hostDir: string,
  mountDir: string,
  options: { readonly directChildOnly: boolean },
): PathMapping {
  if (!path.posix.isAbsolute(hostPath)) return { ok: false, reason: `path "${hostPath}" is not absolute` };
  if (hostPath.split('/').includes('..')) return { ok: false, reason: `path "${hostPath}" contains ".."` };
  if (!isStrictlyInside(hostPath, hostDir)) {
    return { ok: false, reason: `path "${hostPath}" is not inside the configured directory "${hostDir}"` };
  }
  const relativePath = path.posix.relative(path.posix.normalize(hostDir), path.posix.normalize(hostPath));
  if (options.directChildOnly && relativePath.includes('/')) {
    return { ok: false, reason: `path "${hostPath}" is not a direct entry of "${hostDir}"` };
  }
  return { ok: true, containerPath: path.posix.join(mountDir, relativePath), relativePath };
}

export type ResolvedVolume =
  | {
    readonly ok: true;
    readonly kind: 'directory';
    /** The directory's real path (equal to the entry's path below the class directory). */
    readonly path: string;
  }
  | {
    readonly ok: true;
    readonly kind: 'block-device';
    /** The entry as named in the class directory (what `LOCAL_PV_BLKDEVICE` gets, as upstream). */
    readonly path: string;
    /** The device node it resolves to. */
    readonly device: string;
  }
  | {
    readonly ok: false;
    /** True when the entry does not exist (or is a dangling symlink): the volume is gone, not unsafe. */
    readonly missing: boolean;
    readonly reason: string;
  };

function errorCode(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Checks on the real filesystem that `entryPath` is a volume inside `classDir`
 * that may be cleaned, and says what kind it is.
 */
export async function resolveVolumePath(entryPath: string, classDir: string): Promise<ResolvedVolume> {
  if (!isStrictlyInside(entryPath, classDir)) {
    return { ok: false, missing: false, reason: `path "${entryPath}" is not inside the class directory "${classDir}"` };
  }
  let realClassDir: string;
  try {
    realClassDir = await fsp.realpath(classDir);
  } catch (e) {
    return { ok: false, missing: false, reason: `class directory "${classDir}" cannot be resolved: ${errorCode(e) ?? String(e)}` };
  }
  const relative = path.posix.relative(path.posix.normalize(classDir), path.posix.normalize(entryPath));
  const expected = path.posix.join(realClassDir, relative);

  let link;
  try {
    link = await fsp.lstat(entryPath);
  } catch (e) {
    if (errorCode(e) === 'ENOENT' || errorCode(e) === 'ENOTDIR') {
      return { ok: false, missing: true, reason: `path "${entryPath}" does not exist` };
    }
    return { ok: false, missing: false, reason: `path "${entryPath}" cannot be inspected: ${errorCode(e) ?? String(e)}` };
  }
  let realPath: string;
  try {
    realPath = await fsp.realpath(entryPath);
  } catch (e) {
    if (errorCode(e) === 'ENOENT') {
      return { ok: false, missing: true, reason: `path "${entryPath}" is a dangling symlink` };
    }
    return { ok: false, missing: false, reason: `path "${entryPath}" cannot be resolved: ${errorCode(e) ?? String(e)}` };
  }
  const target = await fsp.stat(realPath);

  if (target.isDirectory()) {
    if (link.isSymbolicLink() || realPath !== expected) {
      return {
        ok: false,
        missing: false,
        reason: `path "${entryPath}" resolves to "${realPath}", outside its own place "${expected}" in the class directory; refusing to clean through a symlink`,
      };
    }
    return { ok: true, kind: 'directory', path: realPath };
  }
  if (target.isBlockDevice()) {
    // The entry itself may be a symlink to a device node; the directories leading to it may not.
    const realParent = await fsp.realpath(path.posix.dirname(entryPath));
    if (realParent !== path.posix.dirname(expected)) {
      return {
        ok: false,
        missing: false,
        reason: `path "${entryPath}" is reached through a symlinked directory ("${realParent}"), outside the class directory "${realClassDir}"`,
      };
    }
    return { ok: true, kind: 'block-device', path: entryPath, device: realPath };
  }
  return { ok: false, missing: false, reason: `path "${entryPath}" is neither a directory nor a block device` };
}
