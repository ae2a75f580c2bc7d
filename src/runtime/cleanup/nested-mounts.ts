/**
 * Mount points nested inside a volume. The filesystem cleaner never descends
 * into one: its contents belong to another filesystem (or, for a bind mount, to
 * another place of the same one), and unmounting is not ours to do.
 *
 * A bind mount of the same filesystem keeps the device number, so comparing
 * `st_dev` alone cannot see it; the mount table can.
 */
import { promises as fsp } from 'node:fs';
import { isStrictlyInside } from './path-safety';

/**
 * Mount points strictly inside `dir`, from mountinfo text read as latin1 (one
 * character per byte): field 5, octal escapes decoded, then read as UTF-8.
 */
export function mountPointsInside(mountinfo: string, dir: string): string[] {
  const found = new Set<string>();
  for (const line of mountinfo.split('\n')) {
    const mountPoint = line.split(' ')[4];
    if (mountPoint === undefined) continue;
    const bytes = mountPoint.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
    const decoded = Buffer.from(bytes, 'latin1').toString('utf8');
    if (isStrictlyInside(decoded, dir)) found.add(decoded);
  }
  return [...found].sort();
}

/** Reads this process's mount table and returns the mount points strictly inside `dir`. */
export async function findNestedMounts(dir: string, mountinfoFile = '/proc/self/mountinfo'): Promise<string[]> {
  return mountPointsInside(await fsp.readFile(mountinfoFile, 'latin1'), dir);
}
