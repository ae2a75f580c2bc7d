/**
 * A pool's volumes on btrfs: each a subvolume directly in the pool directory,
 * limited by a qgroup to its claim's size (writes beyond it fail with EDQUOT).
 * Thin edges over `btrfs` (btrfs-progs): every decision is made by the caller.
 *
 * A volume is known by its subvolume's UUID, recorded on its PV when it is made,
 * and is limited and deleted by its subvolume ID, never by a path: a symlink, a
 * directory or another subvolume swapped in under its name is never touched
 * (`btrfs subvolume delete <path>` follows a symlink to whatever it points to).
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

/** BTRFS_SUPER_MAGIC: the statfs type of a btrfs filesystem. */
const BTRFS_MAGIC = 0x9123683e;

/** Throws, saying what is wrong, unless the pool directory is on btrfs. */
function requireBtrfs(poolDir: string): void {
  if (fs.statfsSync(poolDir).type !== BTRFS_MAGIC) throw new Error(`${poolDir} is not on a btrfs filesystem; a btrfs pool needs one`);
}

/** Makes the pool ready: on btrfs (else throws), with quotas on (turned on when they are off). */
export async function preparePool(poolDir: string): Promise<void> {
  requireBtrfs(poolDir);
  if (!await quotasOn(poolDir)) await btrfs(['quota', 'enable', poolDir]);
}

async function quotasOn(poolDir: string): Promise<boolean> {
  return btrfs(['qgroup', 'show', poolDir]).then(() => true, () => false);
}

export interface PoolInspection {
  readonly freeBytes: number;
  readonly usage: Map<string, PoolVolumeUsage>;
  readonly quotasOn: boolean;
}

/** What a pool is now, changing nothing (for `plan`): its free space, its volumes, whether quotas are on. */
export async function inspectPool(poolDir: string): Promise<PoolInspection> {
  requireBtrfs(poolDir);
  const on = await quotasOn(poolDir);
  return { freeBytes: poolFreeBytes(poolDir), usage: on ? await poolUsage(poolDir) : new Map(), quotasOn: on };
}

/** Bytes the pool's filesystem can still give (statfs: blocks available to an unprivileged writer). */
export function poolFreeBytes(poolDir: string): number {
  const st = fs.statfsSync(poolDir);
  return st.bavail * st.bsize;
}

/** A subvolume's root directory has this inode number (BTRFS_FIRST_FREE_OBJECTID). */
const SUBVOLUME_ROOT_INODE = 256;

/** Whether a subvolume (not a symlink, not a plain directory) is at this name in the pool. */
export function volumeExists(poolDir: string, name: string): boolean {
  try {
    const st = fs.lstatSync(volumePath(poolDir, name));
    return st.isDirectory() && st.ino === SUBVOLUME_ROOT_INODE;
  } catch {
    return false;
  }
}

/** The subvolume the pool directory is in (its root): where btrfs is told subvolume IDs. */
function enclosingSubvolume(poolDir: string): string {
  let dir = path.resolve(poolDir);
  while (fs.statSync(dir).ino !== SUBVOLUME_ROOT_INODE && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

/**
 * The subvolume at this name in the pool, its UUID and ID as `btrfs subvolume show`
 * reads them, when what is at the name is a subvolume before and after the read (a
 * symlink or a plain directory, or anything swapped in meanwhile, is none).
 */
async function subvolumeAt(poolDir: string, name: string): Promise<{ readonly uuid: string; readonly id: string } | undefined> {
  if (!volumeExists(poolDir, name)) return undefined;
  const at = volumePath(poolDir, name);
  const before = fs.lstatSync(at);
  const shown = await btrfs(['subvolume', 'show', at]);
  const uuid = /^\s*UUID:\s+(\S+)/m.exec(shown)?.[1];
  const id = /^\s*Subvolume ID:\s+(\d+)/m.exec(shown)?.[1];
  const after = fs.lstatSync(at);
  if (!uuid || !id || !after.isDirectory() || after.dev !== before.dev || after.ino !== before.ino) return undefined;
  return { uuid, id };
}

/**
 * Makes the volume (a subvolume) unless it is there, and limits it to `limitBytes` by
 * its ID. Returns its UUID, the volume's identity from now on.
 */
export async function createVolume(poolDir: string, name: string, limitBytes: number): Promise<string> {
  const at = volumePath(poolDir, name);
  if (!fs.existsSync(at)) await btrfs(['subvolume', 'create', at]);
  const subvolume = await subvolumeAt(poolDir, name);
  if (!subvolume) throw new Error(`${at} is there but is not a subvolume; it is left alone`);
  await btrfs(['qgroup', 'limit', String(limitBytes), `0/${subvolume.id}`, poolDir]);
  return subvolume.uuid;
}

/** The volume's identity (its subvolume's UUID), read from the pool; undefined when no subvolume is at that name. */
export async function volumeIdentity(poolDir: string, name: string): Promise<string | undefined> {
  return (await subvolumeAt(poolDir, name))?.uuid;
}

/** The names of the pool directory's entries. */
export function poolEntries(poolDir: string): string[] {
  return fs.readdirSync(poolDir);
}

/**
 * Deletes the volume of this UUID with its data, by its subvolume ID, wherever it is
 * now; then its qgroup (btrfs may already have dropped it). A volume already gone is done.
 */
export async function deleteVolume(poolDir: string, uuid: string): Promise<void> {
  const root = enclosingSubvolume(poolDir);
  const id = await subvolumeIdOf(root, uuid);
  if (id === undefined) return;
  await btrfs(['subvolume', 'delete', '--commit-after', '--subvolid', id, root]);
  await btrfs(['subvolume', 'sync', root, id]);
  await btrfs(['qgroup', 'destroy', `0/${id}`, root]).catch(() => undefined);
}

/** Sets the volume's limit (a resize), by its identity; false when the volume is gone. */
export async function limitVolume(poolDir: string, uuid: string, limitBytes: number): Promise<boolean> {
  const root = enclosingSubvolume(poolDir);
  const id = await subvolumeIdOf(root, uuid);
  if (id === undefined) return false;
  await btrfs(['qgroup', 'limit', String(limitBytes), `0/${id}`, root]);
  return true;
}

/** The ID of the subvolume with this UUID on the filesystem of `root`, if it exists. */
async function subvolumeIdOf(root: string, uuid: string): Promise<string | undefined> {
  const listed = await btrfs(['subvolume', 'list', '-u', root]);
  const line = listed.split('\n').find((l) => l.split(/\s+/).includes(uuid));
  return line === undefined ? undefined : /^ID (\d+) /.exec(line)?.[1];
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
