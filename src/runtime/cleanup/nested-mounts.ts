/**
 * Mount points nested inside a volume. The filesystem cleaner never descends
 * into one: its contents belong to another filesystem (or, for a bind mount, to
 * another place of the same one), and unmounting is not ours to do.
 *
 * A bind mount of the same filesystem keeps the device number, so comparing
 * `st_dev` alone cannot see it; the mount table can.
 */
import { isStrictlyInside } from './path-safety';
import { MountTable, readMountTable } from '../discovery/mount-table';

/** Mount points of `table` strictly inside `dir`, sorted. */
export function mountPointsInside(table: MountTable, dir: string): string[] {
  return [...table.mountPoints.keys()].filter((m) => isStrictlyInside(m, dir)).sort();
}

/** Reads this process's mount table and returns the mount points strictly inside `dir`. */
export async function findNestedMounts(dir: string, mountinfoFile?: string): Promise<string[]> {
  return mountPointsInside(await readMountTable(mountinfoFile), dir);
}
