/**
 * A pool's volumes on btrfs: each a subvolume directly in the pool directory,
 * limited by a qgroup to its claim's size (writes beyond it fail with EDQUOT).
 * Thin edges over `btrfs` (btrfs-progs): every decision is made by the caller.
 *
 * A subvolume is deleted by `btrfs subvolume delete`, which deletes subvolumes
 * only: a plain directory, a symlink or a mount point swapped in under the name
 * is refused by the kernel, never removed.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** What a volume of the pool holds, from its qgroup. */
export interface PoolVolumeUsage {
  /** Bytes the subvolume refers to (its data, shared or not). */
  readonly usedBytes: number;
  /** Its limit; undefined when none is set. */
  readonly limitBytes?: number;
}

/** Runs btrfs; rejects with its own words on failure. */
function btrfs(args: readonly string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('btrfs', args, { timeout: timeoutMs, encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } }, (error, stdout, stderr) => {
      if (error) reject(new Error(`btrfs ${args.join(' ')} failed: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

/** The names a pool's volumes may have: its PVs' names, `pvc-<claim UID>`, as external provisioners name them. */
const VOLUME_NAME = /^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isPoolVolumeName(name: string): boolean {
  return VOLUME_NAME.test(name);
}

function volumePath(poolDir: string, name: string): string {
  if (!isPoolVolumeName(name)) throw new Error(`"${name}" is not the name of a pool volume (pvc-<claim UID>)`);
  return path.join(poolDir, name);
}

/** Whether the pool directory is on btrfs with quotas on; turns quotas on when they are off. Throws when not btrfs. */
export async function preparePool(poolDir: string): Promise<void> {
  // BTRFS_SUPER_MAGIC: the statfs type of a btrfs filesystem.
  if (fs.statfsSync(poolDir).type !== 0x9123683e) throw new Error(`${poolDir} is not on a btrfs filesystem; a btrfs pool needs one`);
  try {
    await btrfs(['qgroup', 'show', poolDir]);
  } catch {
    await btrfs(['quota', 'enable', poolDir]);
  }
}

/** Bytes the pool's filesystem can still give (statfs: blocks available to an unprivileged writer). */
export function poolFreeBytes(poolDir: string): number {
  const st = fs.statfsSync(poolDir);
  return st.bavail * st.bsize;
}

/** Whether a subvolume of this name exists in the pool. */
export function volumeExists(poolDir: string, name: string): boolean {
  try {
    const st = fs.lstatSync(volumePath(poolDir, name));
    // A subvolume's root directory has inode 256 (BTRFS_FIRST_FREE_OBJECTID).
    return st.isDirectory() && st.ino === 256;
  } catch {
    return false;
  }
}

/** Makes the volume (a subvolume) and limits it to `limitBytes`; a volume already made is limited again. */
export async function createVolume(poolDir: string, name: string, limitBytes: number): Promise<string> {
  const at = volumePath(poolDir, name);
  if (!volumeExists(poolDir, name)) await btrfs(['subvolume', 'create', at]);
  await btrfs(['qgroup', 'limit', String(limitBytes), at]);
  return at;
}

/**
 * Deletes the volume with its data, then its qgroup (which btrfs keeps, stale, until
 * the subvolume is cleaned). A volume already gone is done.
 */
export async function deleteVolume(poolDir: string, name: string): Promise<void> {
  const at = volumePath(poolDir, name);
  if (!fs.existsSync(at)) return;
  const id = (await btrfs(['inspect-internal', 'rootid', at])).trim();
  await btrfs(['subvolume', 'delete', '--commit-after', at]);
  await btrfs(['subvolume', 'sync', poolDir, id]);
  await btrfs(['qgroup', 'destroy', `0/${id}`, poolDir]).catch(() => undefined);
}

/** Each volume's usage and limit, by name, from the qgroups of the pool's filesystem. */
export async function poolUsage(poolDir: string): Promise<Map<string, PoolVolumeUsage>> {
  const out = await btrfs(['qgroup', 'show', '--raw', '-re', poolDir]);
  const usage = new Map<string, PoolVolumeUsage>();
  for (const line of out.split('\n')) {
    // Qgroupid Referenced Exclusive MaxReferenced MaxExclusive Path
    const cols = line.trim().split(/\s+/);
    if (cols.length < 6 || !/^0\/\d+$/.test(cols[0])) continue;
    const name = path.basename(cols.slice(5).join(' '));
    if (!isPoolVolumeName(name)) continue;
    usage.set(name, { usedBytes: Number(cols[1]), limitBytes: cols[3] === 'none' ? undefined : Number(cols[3]) });
  }
  return usage;
}
