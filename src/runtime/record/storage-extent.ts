/**
 * Which piece of a node's storage a volume identity (volume/identity.ts) covers,
 * so that one piece is claimed once whatever names, classes or dialects lead to
 * it: a disk, a partition of it, a filesystem on either, and any directory inside
 * that filesystem are the same storage as everything they contain or lie in.
 *
 * Two volumes overlap when they are on the same disk and neither is confined to a
 * part the other is not in: the whole disk overlaps each of its partitions; a
 * filesystem root overlaps every directory below it (a bind mount of a
 * subdirectory shows files of the mount above it); two sibling directories of one
 * filesystem, or two partitions, do not.
 */

export interface StorageExtent {
  /** The whole disk (or filesystem without a device) the volume is on. */
  readonly disk: string;
  /** The partition's start sector, when the volume is confined to one. */
  readonly partition?: string;
  /** The directory of the filesystem the volume shows, when it is a directory volume. */
  readonly root?: string;
}

/** Identity kinds of a device (the part after `@` in a filesystem identity starts with one). */
const DEVICE_KINDS = /@(?=(partition|dm|loop|wwid|serial|devnum):)/;

/** The extent of the storage an identity names. */
export function storageExtent(identity: string): StorageExtent {
  if (identity.startsWith('fs:')) {
    const at = DEVICE_KINDS.exec(identity);
    if (at) return { ...storageExtent(identity.slice(at.index + 1)), root: identity.slice('fs:'.length, at.index) };
    return { disk: identity };
  }
  if (identity.startsWith('partition:')) {
    const at = identity.indexOf('@');
    if (at > 0) return { disk: storageExtent(identity.slice(at + 1)).disk, partition: identity.slice('partition:'.length, at) };
    return { disk: identity };
  }
  if (identity.startsWith('mount:')) {
    // mount:<fs type>:<major>:<minor>:<root>; the root is a path, so it starts at the first `/` after the numbers.
    const m = /^(mount:[^:]*:\d+:\d+):(\/.*)$/.exec(identity);
    if (m) return { disk: m[1], root: m[2] };
  }
  return { disk: identity };
}

/** True when `inner` is `outer` or a directory below it. */
function within(inner: string, outer: string): boolean {
  return inner === outer || outer === '/' || inner.startsWith(`${outer}/`);
}

/** Whether two volumes share any storage. */
export function extentsOverlap(a: StorageExtent, b: StorageExtent): boolean {
  if (a.disk !== b.disk) return false;
  if (a.partition !== undefined && b.partition !== undefined && a.partition !== b.partition) return false;
  // A block volume (no root) is all of its disk or partition, filesystem included.
  if (a.root === undefined || b.root === undefined) return true;
  return within(a.root, b.root) || within(b.root, a.root);
}
