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
 * A volume is made under a name no claim has (`.making-<name>`), already a member of
 * its group and under its limit, and renamed to its own only then: whenever the agent
 * is killed, a volume's name shows a subvolume with its limit or nothing, and what a
 * cut-short making left is removed (by the next look at the pool, or the next try at
 * that name). The subvolume joins its group as it is made (`-i 1/<ID>`), so the group
 * must be there first, named by an ID the subvolume does not have yet: the kernel hands
 * out subvolume IDs in order, and the group is made (and limited) for the next one while
 * the one just made is read and the agent does the rest of its claim's work (see
 * `prepare`: a wrong guess costs time, never a limit). Making a volume is then two btrfs commands one after the other (the
 * subvolume, and a read of which ID it got) where it was eight.
 *
 * Every read is the kernel's state in a machine-readable form: the subvolume tree
 * by ID (`btrfs subvolume list`), the groups as JSON (`btrfs --format json qgroup
 * show`, btrfs-progs 6.1+), the quota mode from sysfs. A volume is known by its
 * subvolume's UUID (IDs can be handed out again after a remount) and acted on by
 * its current ID, never by a path: nothing swapped in under its name is touched.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  LimitEscape, PoolBackend, PoolSnapshot, PoolState, PoolVolumeLocation, PoolVolumeUsage, SnapshotSource, VolumeSourceRef, isPoolVolumeName,
  requirePoolVolumeName, requireSnapshotName,
} from './backend';
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
/** The ID the kernel gives the first subvolume made (BTRFS_FIRST_FREE_OBJECTID). */
const FIRST_SUBVOLUME_ID = 256;
/** The name a volume is made under, before it is in its group under its limit and renamed to its own. */
const MAKING = '.making-';

/** One subvolume of the filesystem, as `btrfs subvolume list -u` gives it. */
interface Subvolume {
  readonly id: number;
  /** The subvolume it is in. */
  readonly topLevel: number;
  readonly uuid: string;
  /** The subvolume it is a snapshot of, if it is one. */
  readonly parentUuid?: string;
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

/** A group made, and limited, for the subvolume ID the kernel is expected to give next. */
interface PreparedGroup {
  readonly id: number;
  readonly limitBytes: number;
}

type QuotaMode = 'off' | 'simple' | 'full';

/** What a look at the filesystem read. */
interface Look {
  readonly subvolumes: readonly Subvolume[];
  readonly qgroups: ReadonlyMap<string, Qgroup>;
}

export class BtrfsPool implements PoolBackend {
  /** The highest subvolume ID seen (or one below the first), once the subvolume tree was read: the kernel gives a new subvolume a higher one. */
  private highestId?: number;
  /** The group being made for the next subvolume (settles to undefined if it could not be). */
  private next?: Promise<PreparedGroup | undefined>;
  /** The ID of the subvolume the pool directory is in (its volumes' top level), read once for the filesystem there (its device number). */
  private poolRoot?: { readonly dev: number; readonly id: number };
  /** The filesystem's sysfs directory, for the filesystem the pool directory is on (its device number). */
  private sysfs?: { readonly device: string; readonly dir: string };
  /** Making names of the volumes being made now (never removed as leftovers). */
  private readonly making = new Set<string>();

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
    const leftovers = await this.removeMakings();
    if (escapes.length > 0 || leftovers) look = await this.look();
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

  /**
   * A new volume: its group made and limited (for the ID the subvolume is expected to
   * get: `prepare`), the subvolume made under its making name as a member of it, the ID
   * it got read, and, if it is not the one expected, the subvolume moved into a group
   * of its own ID; only then is it renamed to the volume's name. A volume there already
   * (made by a try cut short after the rename, or by an agent before groups were) is
   * given its group and limit.
   */
  async create(name: string, limitBytes: number, _volumeMode?: unknown, from?: VolumeSourceRef): Promise<string> {
    requirePoolVolumeName(name);
    const at = path.join(this.dir, name);
    if (fs.existsSync(at)) {
      const subvolume = await this.subvolumeAt(name);
      if (!subvolume) throw new Error(`${at} is there but is not a subvolume; it is left alone`);
      await this.limit(subvolume.id, limitBytes);
      return subvolume.uuid;
    }
    const making = `${MAKING}${name}`;
    this.making.add(making);
    try {
      if (fs.existsSync(path.join(this.dir, making))) await this.removeMaking(making);
      const source = from && await this.sourcePath(from);
      const expected = await this.groupForNext(limitBytes);
      await btrfs(source
        ? ['subvolume', 'snapshot', '-i', `1/${expected}`, source, path.join(this.dir, making)]
        : ['subvolume', 'create', '-i', `1/${expected}`, path.join(this.dir, making)]);
      // The group for the one after is made while this one is read and recorded (for the ID after the one it most likely got).
      this.next = this.prepare(expected + 1, limitBytes);
      const made = await this.madeAt(making, expected);
      if (made.id !== expected) {
        // Made ahead for the very ID this one got, that group becomes this one's (regroup takes it), never the next's.
        if ((await this.next)?.id === made.id) this.next = undefined;
        await this.regroup(made.id, expected, limitBytes);
      }
      await this.requireLimited(made.id, limitBytes);
      if (fs.existsSync(at)) throw new Error(`${at} appeared while its volume was being made; it is left alone`);
      fs.renameSync(path.join(this.dir, making), at);
      return made.uuid;
    } finally {
      this.making.delete(making);
    }
  }

  snapshotsRefused(): string | undefined {
    return undefined;
  }

  snapshotNameIn(name: string): string {
    return name;
  }

  /**
   * A read-only snapshot subvolume `name` in the pool directory, of the volume's subvolume,
   * found there by its name and checked by its identity before and after (the snapshot's
   * parent UUID is the volume's: nothing swapped in under the volume's name meanwhile is
   * snapshotted, and the pool directory is the agent's alone). It joins no quota group:
   * under simple quotas the blocks it shares stay counted to the volume that wrote them, so
   * a tenant whose snapshots keep what it overwrites fills its own limit, never the pool.
   */
  async snapshot(volume: SnapshotSource, name: string): Promise<PoolSnapshot> {
    requireSnapshotName(name);
    const at = path.join(this.dir, name);
    let taken = await this.snapshotNamed(name);
    if (!taken) {
      if (fs.existsSync(at)) throw new Error(`${at} is there but is not a snapshot; it is left alone`);
      const source = await this.subvolumeAt(volume.name);
      if (source?.uuid !== volume.identity) throw new Error(`volume ${volume.identity} is not at ${path.join(this.dir, volume.name)} now`);
      await btrfs(['subvolume', 'snapshot', '-r', path.join(this.dir, volume.name), at]);
      taken = await this.snapshotNamed(name);
    }
    if (taken?.parentUuid !== volume.identity) {
      if (taken) await this.deleteSnapshot(taken.uuid);
      throw new Error(`the snapshot made at ${at} is not of volume ${volume.identity} (its name was swapped meanwhile); deleted`);
    }
    const group = (await this.qgroups()).get(`1/${(await this.subvolumes()).find((s) => s.uuid === volume.identity)?.id}`);
    return { identity: taken.uuid, sizeBytes: group?.maxReferenced ?? group?.referenced ?? 0 };
  }

  async snapshotAt(name: string): Promise<string | undefined> {
    return (await this.snapshotNamed(name))?.uuid;
  }

  /** Deleted by its ID, found by its UUID among the subvolumes directly in the pool directory: never a volume's. */
  async deleteSnapshot(identity: string): Promise<void> {
    const subvolumes = await this.subvolumes();
    const snapshot = subvolumes.find((s) => s.uuid === identity);
    if (!snapshot) return;
    if (!/^snapshot-/.test(path.basename(snapshot.path)) || this.volumesIn(await this.look()).some((v) => v.id === snapshot.id)) {
      throw new Error(`subvolume ${snapshot.path} (${identity}) is not a snapshot of the pool; it is left alone`);
    }
    await btrfs(['subvolume', 'delete', '--commit-after', '--subvolid', String(snapshot.id), await this.subvolumeRoot()]);
  }

  /** A read-only subvolume of this name in the pool directory (a snapshot the pool took), read from the subvolume tree. */
  private async snapshotNamed(name: string): Promise<Subvolume | undefined> {
    requireSnapshotName(name);
    if (!this.isSubvolume(name)) return undefined;
    const found = await this.subvolumeAt(name);
    return found?.parentUuid !== undefined ? found : undefined;
  }

  /** The path a new volume is snapshotted from: the snapshot or volume of that identity, checked at its name. */
  private async sourcePath(from: VolumeSourceRef): Promise<string> {
    const identity = from.snapshot ?? from.volume;
    const source = (await this.subvolumes()).find((s) => s.uuid === identity);
    const name = source && path.basename(source.path);
    const atName = (n: string) => (from.snapshot ? this.snapshotNamed(n) : isPoolVolumeName(n) ? this.subvolumeAt(n) : undefined);
    const checked = name ? await atName(name) : undefined;
    if (checked?.uuid !== identity) throw new Error(`${from.snapshot ? 'snapshot' : 'volume'} ${identity} is not in pool ${this.dir}`);
    return path.join(this.dir, name!);
  }

  pathOf(name: string): PoolVolumeLocation {
    requirePoolVolumeName(name);
    return { directory: path.join(this.dir, name) };
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
   * the file, full mode).
   */
  private async quotaMode(): Promise<QuotaMode> {
    const sysfs = await this.sysfsDir();
    let mode: string;
    try {
      mode = fs.readFileSync(`${sysfs}/qgroups/mode`, 'utf8').trim();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      return fs.existsSync(`${sysfs}/qgroups`) ? 'full' : 'off';
    }
    return mode === 'squota' ? 'simple' : 'full';
  }

  /**
   * The filesystem's directory in sysfs, `/sys/fs/btrfs/<its UUID>`. The UUID is asked of
   * its mount point (btrfs names no filesystem for a directory below one), once for the
   * filesystem the pool directory is on (its device number, which no other filesystem has
   * while that directory in sysfs is there: it goes when the filesystem is unmounted).
   */
  private async sysfsDir(): Promise<string> {
    const device = String(fs.statSync(this.dir).dev);
    if (this.sysfs?.device !== device || !fs.existsSync(this.sysfs.dir)) {
      const { mountPoint } = await mountOf(this.dir);
      const uuid = /uuid:\s+([0-9a-f-]{36})/.exec(await btrfs(['filesystem', 'show', mountPoint]))?.[1];
      if (!uuid) throw new Error(`"btrfs filesystem show ${mountPoint}" named no filesystem UUID`);
      const dir = `/sys/fs/btrfs/${uuid}`;
      if (!fs.existsSync(dir)) throw new Error(`${dir} is missing: the agent reads the quota mode there (is /sys mounted?)`);
      this.sysfs = { device, dir };
    }
    return this.sysfs.dir;
  }

  /**
   * Throws unless the kernel counts simple quotas now and group 1/`id` is there limited to
   * `limitBytes`, as sysfs shows them: a subvolume made while quotas were off joined no group
   * (the kernel then ignores `-i` without a word).
   */
  private async requireLimited(id: number, limitBytes: number): Promise<void> {
    const qgroups = path.join(await this.sysfsDir(), 'qgroups');
    const read = (file: string) => {
      try {
        return fs.readFileSync(path.join(qgroups, file), 'utf8').trim();
      } catch {
        return undefined;
      }
    };
    if (read('mode') !== 'squota' || read(`1_${id}/max_referenced`) !== String(limitBytes)) {
      throw new Error(`quota group 1/${id} is not there limited to ${limitBytes} bytes under simple quotas (were quotas turned off?); the volume is not given its name`);
    }
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
    const grouped = new Set(this.volumesIn(look).map((s) => s.id));
    for (const s of look.subvolumes) {
      if (grouped.has(s.id)) {
        const group = look.qgroups.get(`1/${s.id}`)!;
        volumes.set(s.uuid, { usedBytes: group.referenced, limitBytes: group.maxReferenced });
      } else if (recorded.has(s.uuid)) {
        volumes.set(s.uuid, { usedBytes: look.qgroups.get(`0/${s.id}`)?.referenced ?? 0 });
      }
    }
    return { freeBytes: this.freeBytes(), volumes };
  }

  /**
   * The subvolumes that are volumes: each a member of the group of its own ID, not inside
   * another such (a tenant's subvolume is never a volume, whatever group it named: it can
   * name the group made ahead for the next ID, and may get that ID), not being made.
   */
  private volumesIn(look: Look): Subvolume[] {
    const grouped = new Set(look.subvolumes.filter((s) => look.qgroups.get(`0/${s.id}`)?.parents.includes(`1/${s.id}`)).map((s) => s.id));
    const byId = new Map(look.subvolumes.map((s) => [s.id, s]));
    const inside = (s: Subvolume): boolean => {
      for (let up = byId.get(s.topLevel); up; up = byId.get(up.topLevel)) if (grouped.has(up.id)) return true;
      return false;
    };
    return look.subvolumes.filter((s) => grouped.has(s.id) && !inside(s) && !path.basename(s.path).startsWith(MAKING));
  }

  /** Every subvolume inside a volume whose group is not its volume's alone is moved there (see the header). */
  private async bringBackEscapes(look: Look): Promise<LimitEscape[]> {
    const escapes: LimitEscape[] = [];
    for (const volume of this.volumesIn(look)) {
      const group = `1/${volume.id}`;
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
   * The ID the next subvolume is expected to get (one above every ID seen: the kernel
   * gives them in order), with its group made and limited to `limitBytes`: the one made
   * ahead (`prepare`) when it is still ahead of every ID seen, or one made now.
   */
  private async groupForNext(limitBytes: number): Promise<number> {
    const prepared = await this.next;
    this.next = undefined;
    if (this.highestId === undefined) await this.subvolumes();
    const highest = this.highestId!;
    if (prepared && prepared.id > highest) {
      if (prepared.limitBytes !== limitBytes) await btrfs(['qgroup', 'limit', String(limitBytes), `1/${prepared.id}`, this.dir]);
      return prepared.id;
    }
    if (prepared) await btrfs(['qgroup', 'destroy', `1/${prepared.id}`, this.dir]).catch(() => undefined); // its ID was taken meanwhile
    const id = highest + 1;
    await this.makeGroup(id, limitBytes);
    return id;
  }

  /**
   * Group 1/`id` made and limited ahead, for the subvolume expected to get `id`: run while
   * the caller goes on, settling to undefined when it could not be made (the next create
   * makes one itself, and says why if it cannot). Until a volume is made in it, it holds
   * nothing and has a limit: a tenant may name it for a subvolume inside its volume, as
   * it may name any group, and the next look moves that subvolume back into its volume's
   * group (bringBackEscapes); if that subvolume took the ID meanwhile, the volume gets
   * another and is moved into a group of its own (regroup).
   */
  private prepare(id: number, limitBytes: number): Promise<PreparedGroup | undefined> {
    return this.makeGroup(id, limitBytes).then(() => ({ id, limitBytes }), () => undefined);
  }

  /**
   * Group 1/`id` made (one there already, left by an agent killed after making it ahead,
   * is taken unless it is the group of a subvolume `id` in it: a volume's) and limited.
   */
  private async makeGroup(id: number, limitBytes: number): Promise<void> {
    const group = `1/${id}`;
    await btrfs(['qgroup', 'create', group, this.dir]).catch(async (e: Error) => {
      if (!/File exists/.test(e.message)) throw e;
      if ((await this.qgroups()).get(`0/${id}`)?.parents.includes(group)) throw new Error(`${group} is the quota group of subvolume ${id} already`);
    });
    await btrfs(['qgroup', 'limit', String(limitBytes), group, this.dir]);
  }

  /**
   * The subvolume just made at `making` in the pool directory, from the subvolume tree:
   * the one entry of that name in the subvolume the pool directory is in (a tenant's
   * subvolume of the same name is in its volume), when it has the ID expected; otherwise
   * the entry of the ID the kernel gives for that path.
   */
  private async madeAt(making: string, expected?: number): Promise<Subvolume> {
    const at = path.join(this.dir, making);
    const dev = fs.statSync(this.dir).dev;
    if (this.poolRoot?.dev !== dev) this.poolRoot = { dev, id: Number((await btrfs(['inspect-internal', 'rootid', this.dir])).trim()) };
    const subvolumes = await this.subvolumes();
    const named = subvolumes.filter((s) => s.topLevel === this.poolRoot!.id && path.basename(s.path) === making);
    let made = named.length === 1 && named[0].id === expected ? named[0] : undefined;
    if (!made) {
      const id = Number((await btrfs(['inspect-internal', 'rootid', at])).trim());
      made = subvolumes.find((s) => s.id === id);
    }
    if (!made || path.basename(made.path) !== making || !this.isSubvolume(making)) throw new Error(`${at} is not the subvolume just made there`);
    return made;
  }

  /**
   * A new subvolume that did not get the ID its group was made for (another subvolume,
   * made meanwhile, a tenant's, took it): moved into a group of its own ID with the same
   * limit, and the other group removed (the kernel keeps it while a tenant's subvolume
   * named it is in it, until the next look moves that one out).
   */
  private async regroup(id: number, expected: number, limitBytes: number): Promise<void> {
    await this.makeGroup(id, limitBytes);
    await btrfs(['qgroup', 'assign', `0/${id}`, `1/${id}`, this.dir]);
    await btrfs(['qgroup', 'remove', `0/${id}`, `1/${expected}`, this.dir]);
    await btrfs(['qgroup', 'destroy', `1/${expected}`, this.dir]).catch(() => undefined);
  }

  /**
   * What a making cut short left under a making name (the agent killed, a command
   * failed) removed with its groups: it never had a volume's name, so nothing of a
   * tenant's is in it, and the volume is made again from the start.
   */
  private async removeMaking(making: string): Promise<void> {
    if (!this.isSubvolume(making)) throw new Error(`${path.join(this.dir, making)} is there but is not a subvolume; it is left alone`);
    const made = await this.madeAt(making);
    const groups = (await this.qgroups()).get(`0/${made.id}`)?.parents ?? [];
    await this.destroy(made.uuid);
    for (const group of groups.filter((g) => g.startsWith('1/') && g !== `1/${made.id}`)) {
      await btrfs(['qgroup', 'destroy', group, this.dir]).catch(() => undefined); // kept by the kernel while anything is in it
    }
  }

  /** Whatever makings cut short left in the pool directory, removed (each is tried again at the next look if it cannot be); whether there was any. */
  private async removeMakings(): Promise<boolean> {
    const left = fs.readdirSync(this.dir).filter((n) => n.startsWith(MAKING) && isPoolVolumeName(n.slice(MAKING.length)) && !this.making.has(n));
    for (const making of left) await this.removeMaking(making).catch(() => undefined);
    return left.length > 0;
  }

  /**
   * The subvolume at this name in the pool, when what is at the name is a subvolume
   * before and after it is read (a symlink or a plain directory, or anything swapped in
   * meanwhile, is none).
   */
  private async subvolumeAt(name: string): Promise<Subvolume | undefined> {
    if (!isPoolVolumeName(name)) requireSnapshotName(name);
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
    const listed = await btrfs(['subvolume', 'list', '-u', '-q', this.dir]);
    const subvolumes = listed.split('\n').flatMap((line) => {
      const m = /^ID (\d+) gen \d+ top level (\d+) parent_uuid (\S+)\s+uuid (\S+) path (.*)$/.exec(line);
      return m ? [{ id: Number(m[1]), topLevel: Number(m[2]), ...m[3] === '-' ? {} : { parentUuid: m[3] }, uuid: m[4], path: m[5] }] : [];
    });
    this.highestId = subvolumes.reduce((highest, s) => Math.max(highest, s.id), this.highestId ?? FIRST_SUBVOLUME_ID - 1);
    return subvolumes;
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
