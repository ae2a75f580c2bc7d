/**
 * A pool's volumes on btrfs: each a subvolume directly in the pool directory whose
 * quota group 1/<its ID> (it is the group's one member at first) is limited to its
 * claim's size. Simple quotas (Linux 6.7+) are required: under them the kernel puts a
 * subvolume made inside a volume (by the tenant, unprivileged: any user may make
 * one, and snapshot its volume) into that volume's group, so it counts against the
 * volume's limit. Under full-mode quotas it would count against nothing.
 *
 * The one way out the kernel leaves: whoever makes a subvolume may name the groups
 * it joins (`btrfs subvolume create -i 1/<id>`), any existing group, another
 * volume's included, and none of its own volume's. Every look at the pool (each
 * pass) finds such subvolumes by the subvolume tree (IDs, not paths) and moves them
 * into their volume's group, where what they hold counts from then on: the limit
 * holds again, less what was written in between.
 *
 * Every read is the kernel's state in a machine-readable form: the subvolume tree
 * by ID (`btrfs subvolume list`), the groups as JSON (`btrfs --format json qgroup
 * show`, btrfs-progs 6.1+), the quota mode from sysfs. A volume is known by its
 * subvolume's UUID (IDs can be handed out again after a remount) and acted on by
 * its current ID, never by a path: nothing swapped in under its name is touched.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LimitEscape, PoolBackend, PoolState, PoolVolumeUsage, isPoolVolumeName, requirePoolVolumeName } from './backend';
import { childHandlePath, run } from './command';
import { filesystemOf, mountOf } from './directory-storage';
import { directoryVolumeUsers } from '../cleanup/volume-in-use';
import { openDirectory } from '../volume/directory-handle';

/** Runs btrfs; rejects with its own words on failure. */
function btrfs(args: readonly string[]): Promise<string> {
  return run('btrfs', args);
}

/** BTRFS_SUPER_MAGIC: the statfs type of a btrfs filesystem. */
const BTRFS_MAGIC = 0x9123683e;
/** A subvolume's root directory has this inode number (BTRFS_FIRST_FREE_OBJECTID). */
const SUBVOLUME_ROOT_INODE = 256;
/** The filesystem's own top subvolume. */
const TOP_LEVEL = 5;

/** One subvolume of the filesystem, as `btrfs subvolume list -u` gives it. */
interface Subvolume {
  readonly id: number;
  /** The subvolume it is in. */
  readonly topLevel: number;
  readonly uuid: string;
  /** From the filesystem's top, for people. */
  readonly path: string;
}

/** One quota group, as `btrfs --format json qgroup show` gives it. */
interface Qgroup {
  readonly id: string;
  readonly referenced: number;
  readonly maxReferenced?: number;
  readonly parents: readonly string[];
}

type QuotaMode = 'off' | 'simple' | 'full';

/** What a look at the filesystem read. */
interface Look {
  readonly subvolumes: readonly Subvolume[];
  readonly qgroups: ReadonlyMap<string, Qgroup>;
}

export class BtrfsPool implements PoolBackend {
  /**
   * @param dir the pool directory as this process sees it
   * @param recorded the identities (UUIDs) of this pool's volumes in the node record
   */
  constructor(private readonly dir: string, private readonly recorded: () => readonly string[] = () => []) {}

  async open(): Promise<PoolState> {
    this.requireBtrfs();
    await this.subvolumeRoot();
    let mode = await this.quotaMode();
    if (mode === 'off') {
      if ((await this.names()).some((name) => this.isSubvolume(name))) {
        throw new Error(`quotas were turned off on the filesystem of ${this.dir}, so its volumes have no limit now; nothing is provisioned until `
          + `they are on again ("btrfs quota enable --simple ${this.dir}"), when the agent puts each volume's limit back (simple quotas count only `
          + 'what is written from then on)');
      }
      await btrfs(['quota', 'enable', '--simple', this.dir]).catch((e: Error) => {
        throw new Error(`simple quotas could not be turned on (they need Linux 6.7 or later and btrfs-progs 6.7 or later): ${e.message}`);
      });
      mode = await this.quotaMode();
    }
    if (mode === 'full') {
      throw new Error(`quotas on the filesystem of ${this.dir} count in full mode, under which a subvolume a tenant makes inside its volume `
        + 'counts against no limit; a pool needs simple quotas (Linux 6.7+): with no volume on the filesystem, turn quotas off '
        + `("btrfs quota disable ${this.dir}") and the agent turns simple quotas on`);
    }
    let look = await this.look();
    const escapes = await this.bringBackEscapes(look);
    if (escapes.length > 0) look = await this.look();
    return { ...this.stateOf(look), escapes };
  }

  async inspect(): Promise<PoolState> {
    this.requireBtrfs();
    await this.subvolumeRoot();
    const mode = await this.quotaMode();
    if (mode === 'full') throw new Error(`quotas on the filesystem of ${this.dir} count in full mode; a pool needs simple quotas (Linux 6.7+)`);
    if (mode === 'off') return { freeBytes: this.freeBytes(), volumes: new Map(), escapes: [], note: 'quotas are off: the agent turns simple quotas on at first use' };
    return { ...this.stateOf(await this.look()), escapes: [] };
  }

  storage(): Promise<string> {
    return filesystemOf(this.dir);
  }

  async create(name: string, limitBytes: number): Promise<string> {
    requirePoolVolumeName(name);
    const at = path.join(this.dir, name);
    if (!fs.existsSync(at)) await btrfs(['subvolume', 'create', at]);
    const subvolume = await this.subvolumeAt(name);
    if (!subvolume) throw new Error(`${at} is there but is not a subvolume; it is left alone`);
    await this.limit(subvolume.id, limitBytes);
    return subvolume.uuid;
  }

  async identityAt(name: string): Promise<string | undefined> {
    return (await this.subvolumeAt(name))?.uuid;
  }

  async names(): Promise<string[]> {
    return fs.readdirSync(this.dir).filter(isPoolVolumeName);
  }

  async users(name: string): Promise<string[]> {
    requirePoolVolumeName(name);
    return this.isSubvolume(name) ? directoryVolumeUsers(path.join(this.dir, name)) : [];
  }

  async resize(identity: string, limitBytes: number): Promise<boolean> {
    const volume = (await this.subvolumes()).find((s) => s.uuid === identity);
    if (!volume) return false;
    await this.limit(volume.id, limitBytes);
    return true;
  }

  /**
   * The volume's subvolumes are deleted deepest first, each by ID: those a tenant made
   * inside it, read-only snapshots included, then the volume. Its limit is lifted first
   * (deleting a subvolume needs room in its group: a full volume could not be deleted),
   * and a subvolume a tenant made immutable, or put in an append-only directory, has
   * that flag taken off through a handle opened without following any symlink.
   */
  async destroy(identity: string): Promise<void> {
    const subvolumes = await this.subvolumes();
    const volume = subvolumes.find((s) => s.uuid === identity);
    if (!volume) return;
    const group = `1/${volume.id}`;
    await btrfs(['qgroup', 'limit', 'none', group, this.dir]).catch(() => undefined); // no group: none to lift
    const inside = descendantsOf(volume.id, subvolumes).reverse();
    for (const subvolume of [...inside, volume]) await this.deleteSubvolume(subvolume, volume);
    // Committed, each is dropped by the cleaner; its group 0/<ID> goes stale then, and only after it the volume's group can go.
    await btrfs(['subvolume', 'sync', this.dir, ...[...inside, volume].map((s) => String(s.id))]);
    await btrfs(['qgroup', 'clear-stale', this.dir]);
    await btrfs(['qgroup', 'destroy', group, this.dir]).catch(() => undefined); // none: made by an agent before groups were
  }

  /**
   * The path btrfs deletes a volume through, by its ID: btrfs-progs asks for a
   * subvolume's root there. The root of the mount the pool is reached through is one
   * when that mount is of the filesystem or of a subvolume; the pool directory is one
   * when it is a subvolume. A plain directory below the mount point, bind-mounted (as a
   * DaemonSet's hostPath bind-mounts it), reaches none: volumes could be made there and
   * never destroyed, so such a pool is refused, saying what to do.
   */
  private async subvolumeRoot(): Promise<string> {
    const { mountPoint } = await mountOf(this.dir);
    for (const candidate of [mountPoint, this.dir]) {
      const st = fs.statSync(candidate);
      if (st.ino === SUBVOLUME_ROOT_INODE && fs.statfsSync(candidate).type === BTRFS_MAGIC) return candidate;
    }
    throw new Error(`${this.dir} is a plain directory of its btrfs filesystem, and the mount it is reached through here (${mountPoint}) is not of a `
      + 'subvolume (a bind mount of a directory, as a hostPath is in the agent\'s container): a volume made there could not be destroyed by its ID. '
      + 'Make the pool directory a subvolume ("btrfs subvolume create <dir>", while it is empty) or the mount point of the filesystem');
  }

  /** Throws, saying what is wrong, unless the pool directory is on btrfs. */
  private requireBtrfs(): void {
    if (fs.statfsSync(this.dir).type !== BTRFS_MAGIC) throw new Error(`${this.dir} is not on a btrfs filesystem; a btrfs pool needs one`);
  }

  private freeBytes(): number {
    const st = fs.statfsSync(this.dir);
    return st.bavail * st.bsize;
  }

  private isSubvolume(name: string): boolean {
    try {
      const st = fs.lstatSync(path.join(this.dir, name));
      return st.isDirectory() && st.ino === SUBVOLUME_ROOT_INODE;
    } catch {
      return false;
    }
  }

  /**
   * The quota mode, from sysfs (`qgroups/mode`, Linux 6.7+: `squota` or `qgroup`; without
   * the file, full mode). The filesystem's UUID is asked of its mount point: btrfs
   * names no filesystem for a directory below one.
   */
  private async quotaMode(): Promise<QuotaMode> {
    const { mountPoint } = await mountOf(this.dir);
    const uuid = /uuid:\s+([0-9a-f-]{36})/.exec(await btrfs(['filesystem', 'show', mountPoint]))?.[1];
    if (!uuid) throw new Error(`"btrfs filesystem show ${mountPoint}" named no filesystem UUID`);
    const sysfs = `/sys/fs/btrfs/${uuid}`;
    if (!fs.existsSync(sysfs)) throw new Error(`${sysfs} is missing: the agent reads the quota mode there (is /sys mounted?)`);
    let mode: string;
    try {
      mode = fs.readFileSync(`${sysfs}/qgroups/mode`, 'utf8').trim();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      return fs.existsSync(`${sysfs}/qgroups`) ? 'full' : 'off';
    }
    return mode === 'squota' ? 'simple' : 'full';
  }

  private async look(): Promise<Look> {
    const [subvolumes, qgroups] = await Promise.all([this.subvolumes(), this.qgroups()]);
    return { subvolumes, qgroups };
  }

  /**
   * Every volume's use and limit: a subvolume with a group 1/<its ID> it is in is a pool
   * volume, and so is a recorded one without (its group lost when quotas were turned off
   * and on again: no limit, until the controller gives it its PV's size back; what it
   * holds is what simple quotas counted since they came back on).
   */
  private stateOf(look: Look): Omit<PoolState, 'escapes'> {
    const recorded = new Set(this.recorded());
    const volumes = new Map<string, PoolVolumeUsage>();
    for (const s of look.subvolumes) {
      const group = look.qgroups.get(`1/${s.id}`);
      if (group && look.qgroups.get(`0/${s.id}`)?.parents.includes(group.id)) {
        volumes.set(s.uuid, { usedBytes: group.referenced, limitBytes: group.maxReferenced });
      } else if (recorded.has(s.uuid)) {
        volumes.set(s.uuid, { usedBytes: look.qgroups.get(`0/${s.id}`)?.referenced ?? 0 });
      }
    }
    return { freeBytes: this.freeBytes(), volumes };
  }

  /** Every subvolume inside a volume whose group is not its volume's alone is moved there (see the header). */
  private async bringBackEscapes(look: Look): Promise<LimitEscape[]> {
    const escapes: LimitEscape[] = [];
    for (const volume of look.subvolumes) {
      const group = `1/${volume.id}`;
      if (!look.qgroups.get(`0/${volume.id}`)?.parents.includes(group)) continue;
      for (const inside of descendantsOf(volume.id, look.subvolumes)) {
        const own = `0/${inside.id}`;
        const parents = look.qgroups.get(own)?.parents ?? [];
        if (parents.length === 1 && parents[0] === group) continue;
        for (const other of parents.filter((p) => p !== group)) await btrfs(['qgroup', 'remove', own, other, this.dir]);
        if (!parents.includes(group)) await btrfs(['qgroup', 'assign', own, group, this.dir]);
        escapes.push({
          volume: volume.uuid,
          what: `subvolume ${inside.path} (ID ${inside.id}) inside volume ${volume.path} counted to ${parents.length > 0 ? parents.join(', ') : 'no group'}, `
            + `not to the volume's ${group}; moved into it, so what it holds counts against the volume's limit`,
        });
      }
    }
    return escapes;
  }

  /**
   * The volume's group 1/<ID> made and joined if it is not (a volume of a pool whose
   * quotas were off, or made by an older agent), and limited. A group made for a volume
   * that is there already takes in the subvolumes inside it too, as the kernel would
   * have had it put them there as they were made.
   */
  private async limit(id: number, limitBytes: number): Promise<void> {
    const group = `1/${id}`;
    const qgroups = await this.qgroups();
    if (!qgroups.has(group)) await btrfs(['qgroup', 'create', group, this.dir]);
    const members = [id, ...(qgroups.has(group) ? [] : descendantsOf(id, await this.subvolumes()).map((s) => s.id))];
    for (const member of members) {
      if (!qgroups.get(`0/${member}`)?.parents.includes(group)) await btrfs(['qgroup', 'assign', `0/${member}`, group, this.dir]);
    }
    await btrfs(['qgroup', 'limit', String(limitBytes), group, this.dir]);
  }

  /**
   * The subvolume at this name in the pool, when what is at the name is a subvolume
   * before and after it is read (a symlink or a plain directory, or anything swapped in
   * meanwhile, is none).
   */
  private async subvolumeAt(name: string): Promise<Subvolume | undefined> {
    requirePoolVolumeName(name);
    if (!this.isSubvolume(name)) return undefined;
    const at = path.join(this.dir, name);
    const before = fs.lstatSync(at);
    const shown = await btrfs(['subvolume', 'show', at]);
    const uuid = /^\s*UUID:\s+(\S+)/m.exec(shown)?.[1];
    const id = /^\s*Subvolume ID:\s+(\d+)/m.exec(shown)?.[1];
    const after = fs.lstatSync(at);
    if (!uuid || !id || !after.isDirectory() || after.dev !== before.dev || after.ino !== before.ino) return undefined;
    return (await this.subvolumes()).find((s) => s.id === Number(id) && s.uuid === uuid);
  }

  private async subvolumes(): Promise<Subvolume[]> {
    const listed = await btrfs(['subvolume', 'list', '-u', this.dir]);
    return listed.split('\n').flatMap((line) => {
      const m = /^ID (\d+) gen \d+ top level (\d+) uuid (\S+) path (.*)$/.exec(line);
      return m ? [{ id: Number(m[1]), topLevel: Number(m[2]), uuid: m[3], path: m[4] }] : [];
    });
  }

  private async qgroups(): Promise<Map<string, Qgroup>> {
    const shown = JSON.parse(await btrfs(['--format', 'json', 'qgroup', 'show', '-pcre', '--raw', this.dir])) as {
      'qgroup-show'?: Array<{ qgroupid: string; referenced: number; max_referenced: number | 'none'; parents: string[] }>;
    };
    return new Map((shown['qgroup-show'] ?? []).map((q) => [q.qgroupid, {
      id: q.qgroupid,
      referenced: q.referenced,
      maxReferenced: q.max_referenced === 'none' ? undefined : Number(q.max_referenced),
      parents: q.parents,
    }]));
  }

  /** Deletes one subvolume by ID; a refusal for an immutable or append-only flag is met once by taking the flags off. */
  private async deleteSubvolume(subvolume: Subvolume, volume: Subvolume): Promise<void> {
    const through = await this.subvolumeRoot();
    const remove = () => btrfs(['subvolume', 'delete', '--commit-after', '--subvolid', String(subvolume.id), through]);
    try {
      await remove();
    } catch (e) {
      if (!/Operation not permitted/.test((e as Error).message)) throw e;
      await this.unflag(subvolume, volume);
      await remove();
    }
  }

  /**
   * Takes the immutable and append-only flags off a subvolume of a volume (the volume
   * itself, or one inside it and the directory that one is in). The way there is walked
   * by handles from the volume's root, each step opened without following a symlink, and
   * chattr is given the handle's /proc path, so whatever a tenant swaps in meanwhile is
   * never reached. (Files so flagged do not stop a subvolume's deletion: only its root
   * and the directory it is in.)
   */
  private async unflag(subvolume: Subvolume, volume: Subvolume): Promise<void> {
    const root = openDirectory(path.join(this.dir, path.basename(volume.path)));
    const opened = [root.fd];
    // `<handle>/.`: chattr opens without following a symlink, and the handle itself is one (a magic link); `.` is the directory.
    const unflagged = async (fd: number) => {
      const at = childHandlePath(fd);
      await run('chattr', ['-i', '-a', at]).catch(async (e: Error) => {
        if (!/Read-only file system/.test(e.message)) throw e;
        // A read-only snapshot: writable first (forced, for a received one too), then its flags.
        await btrfs(['property', 'set', '-f', '-ts', at, 'ro', 'false']);
        await run('chattr', ['-i', '-a', at]);
      });
    };
    try {
      if (Number((await btrfs(['inspect-internal', 'rootid', childHandlePath(root.fd)])).trim()) !== volume.id) return;
      if (subvolume.id === volume.id) {
        await unflagged(root.fd);
        return;
      }
      if (!subvolume.path.startsWith(`${volume.path}/`)) return;
      for (const step of subvolume.path.slice(volume.path.length + 1).split('/')) {
        opened.push(openDirectory(Buffer.from(step), opened[opened.length - 1]).fd);
      }
      // The directory it is in first: a flagged one refuses even a read-only snapshot's deletion.
      for (const fd of opened.slice(-2)) await unflagged(fd);
    } finally {
      for (const fd of opened) fs.closeSync(fd);
    }
  }
}

/** The subvolumes inside `id`, at any depth, each after the one it is in. */
function descendantsOf(id: number, subvolumes: readonly Subvolume[]): Subvolume[] {
  const found: Subvolume[] = [];
  let level = [id];
  while (level.length > 0) {
    const next = subvolumes.filter((s) => level.includes(s.topLevel) && s.id !== TOP_LEVEL);
    found.push(...next);
    level = next.map((s) => s.id);
  }
  return found;
}
