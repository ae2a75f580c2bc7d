/**
 * A pool's volumes on LVM: each a thin logical volume of the class's thin pool, as large
 * as its claim: a device with a hard end, which no tenant writes past whatever it runs
 * (Block volumes are given as they are; Filesystem ones carry the class's filesystem,
 * made here, mounted and grown by kubelet, with `discard` so that what a tenant deletes
 * goes back to the pool).
 *
 * LVM runs as the node's own (host-command.ts), and sees only the pool's own disks:
 * every command is given them (`--devices`), found once per look by the volume group's
 * UUID (the one the node record holds for the class; by name only the first time, and
 * refused when two groups bear it). Nothing a tenant writes on its device, a label and a
 * volume group named like the pool's included, can confuse or stop a command of the
 * agent's. Whether the node's own LVM reads what tenants write is probed
 * (node-lvm-confinement.ts): where it does, no Block volume is given (its tenant could
 * make the node activate, at its next boot, a volume group of its own whose volumes take
 * a neighbour's /dev path). Every read is `lvs --reportformat json`; a volume is known by
 * its logical volume's UUID and found by it.
 *
 * No tenant reads another's data: a thin volume reads zeros where nothing was written
 * to it, and the pool must zero each block it gives a volume (its `zero` flag), else a
 * write of part of a block would leave the rest as a released volume left it; a pool that
 * does not is refused. A volume whose filesystem is not made yet carries a tag until it
 * is, so an agent killed while making one makes it again, never twice on a tenant's data
 * (no PV refers to it before).
 */
import * as fs from 'node:fs';
import {
  PoolBackend, PoolSnapshot, PoolState, PoolVolumeLocation, PoolVolumeUsage, SnapshotSource, VolumeSourceRef, isPoolVolumeName, requirePoolVolumeName,
  requireSnapshotName,
} from './backend';
import { run } from './command';
import { hostPath, lvm } from './host-command';
import { NodeLvmProbe } from './node-lvm-confinement';
import { ThinPoolEvents } from './thin-pool-events';
import type { VolumeMode } from '../../config';
import { deviceNumberOf } from '../volume/device-number';

/** The tag of a volume whose filesystem is not made yet. */
const MAKING_TAG = 'local-volume-provisioner.making';
/** LVM reserves names starting with "snapshot": a snapshot `snapshot-<UID>` is the logical volume `snap-<UID>`. */
function snapshotLv(name: string): string {
  requireSnapshotName(name);
  return name.replace(/^snapshot-/, 'snap-');
}
const SNAPSHOT_LV = /^snap-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The tag of a volume made from a snapshot or another volume whose copy of the filesystem has not its own identity yet. */
const COPY_TAG = 'local-volume-provisioner.copy';
/** Past this metadata fill no volume is made: a thin pool whose metadata runs out fails every volume in it. */
const METADATA_FILL_LIMIT = 0.9;

/** One logical volume, as `lvs --reportformat json --units b --nosuffix` gives it. */
interface LogicalVolume {
  readonly name: string;
  readonly uuid: string;
  readonly sizeBytes: number;
  /** Thin volumes and pools: how full, 0 to 1. */
  readonly dataFill: number;
  /** Thin pools: how full their metadata is, 0 to 1. */
  readonly metadataFill: number;
  /** A thin volume's pool. */
  readonly pool: string;
  /** The thin volume a snapshot was taken of (its name). */
  readonly origin: string;
  /** `t` for a thin pool, `V` for a thin volume, ... */
  readonly type: string;
  readonly open: boolean;
  /** Its device is there (LVM activated it). */
  readonly active: boolean;
  readonly zeroes: boolean;
  readonly tags: readonly string[];
  readonly major: number;
  readonly minor: number;
  readonly vgUuid: string;
  /** Its volume group's disks, as its metadata counts them, and those of them not found. */
  readonly vgDisks: number;
  readonly vgMissingDisks: number;
}

/** Where the pool is: its volume group's UUID, and the disks LVM is given to find it on. */
interface Location {
  readonly vgUuid: string;
  readonly devices: readonly string[];
}

export interface LvmThinOptions {
  readonly volumeGroup: string;
  readonly thinPool: string;
  /** The filesystem of Filesystem volumes. */
  readonly fsType: string;
  /** @default 1 */
  readonly overcommit?: number;
  /** The storage identity the node record holds for the class, once it has claimed it: its volume group's UUID is in it. */
  readonly claimed?: () => string | undefined;
  /** Asks whether the node's LVM reads what tenants write (one probe per node, shared by its classes). */
  readonly nodeLvm?: NodeLvmProbe;
}

export class LvmThinPool implements PoolBackend {
  readonly fsType: string;
  readonly mountOptions = ['discard'];
  private location?: Location;
  /** The last look's thin pool (watch names its device by it). */
  private lastPool?: LogicalVolume;
  /** What storage() read, for the open() each pass asks right after it: one read of the pool per pass. */
  private pending?: LogicalVolume[];

  constructor(private readonly options: LvmThinOptions) {
    this.fsType = options.fsType;
  }

  /**
   * The pool and every volume are made active, as they must be for kubelet to mount them
   * (left inactive by a boot, by an lvcreate cut short, or by a node whose LVM met a
   * tenant's volume group named like the pool's and skipped both).
   */
  async open(): Promise<PoolState> {
    let lvs = this.pending ?? await this.read();
    this.pending = undefined;
    const pool = this.requirePool(lvs);
    const inactive = [...pool.active ? [] : [pool], ...this.volumesIn(lvs).filter((lv) => !lv.active)];
    if (inactive.length > 0) {
      await this.lvm('lvchange', ['--activate', 'y', ...inactive.map((lv) => `${this.options.volumeGroup}/${lv.name}`)]);
      lvs = await this.lvs();
    }
    const confinement = await (this.options.nodeLvm ?? new NodeLvmProbe()).confinement();
    return { ...this.stateOf(lvs), ...(confinement.confined ? {} : { blockRefused: confinement.reason }) };
  }

  async inspect(): Promise<PoolState> {
    return this.stateOf(await this.read());
  }

  private stateOf(lvs: readonly LogicalVolume[]): PoolState {
    const pool = this.requirePool(lvs);
    const thin = this.thinIn(lvs);
    const volumes = new Map<string, PoolVolumeUsage>(this.volumesIn(lvs)
      .map((lv) => [lv.uuid, { usedBytes: Math.round(lv.sizeBytes * lv.dataFill), limitBytes: lv.sizeBytes }]));
    // What a new volume may have: no more than the pool may still promise (its size times the overcommit, less every thin
    // volume's size, an administrator's too), nor than it still holds. The controller takes off what its own volumes may
    // still write, so that is added back here.
    const promisable = pool.sizeBytes * (this.options.overcommit ?? 1) - thin.reduce((sum, lv) => sum + lv.sizeBytes, 0);
    const holds = pool.sizeBytes * (1 - pool.dataFill);
    const metadataFull = pool.metadataFill >= METADATA_FILL_LIMIT;
    const available = metadataFull ? 0 : Math.max(0, Math.min(promisable, holds));
    const stillWritable = [...volumes.values()].reduce((sum, v) => sum + (v.limitBytes ?? 0) - v.usedBytes, 0);
    return {
      freeBytes: available + stillWritable,
      volumes,
      escapes: [],
      fill: { data: pool.dataFill, metadata: pool.metadataFill },
      ...(metadataFull ? { note: `the thin pool's metadata is ${Math.round(pool.metadataFill * 100)}% full: no volume is made until it is grown (lvextend --poolmetadatasize)` } : {}),
    };
  }

  /** The thin pool as the kernel names its device (`dm:LVM-<VG UUID><LV UUID>-pool`), read from LVM's metadata, active or not. */
  async storage(): Promise<string> {
    this.pending = await this.read();
    const pool = this.requirePool(this.pending);
    return `dm:LVM-${pool.vgUuid.replace(/-/g, '')}${pool.uuid.replace(/-/g, '')}-pool`;
  }

  /**
   * A new thin volume, or (`from`) a thin snapshot of a snapshot or volume of the pool made
   * writable and active: it shares their blocks, and a filesystem on it gets an identity of
   * its own (XFS mounts no second filesystem of one UUID).
   */
  async create(name: string, limitBytes: number, volumeMode: VolumeMode, from?: VolumeSourceRef): Promise<string> {
    requirePoolVolumeName(name);
    const { volumeGroup, thinPool } = this.options;
    let lv = (await this.lvs()).find((l) => l.name === name);
    if (!lv) {
      const source = from && await this.sourceOf(from);
      await this.lvm('lvcreate', source
        ? ['--yes', '--snapshot', '--setactivationskip', 'n', '--permission', 'rw', '--name', name, '--addtag', COPY_TAG, `${volumeGroup}/${source.name}`]
        : ['--yes', '--thin', '--virtualsize', `${limitBytes}b`, '--name', name, '--addtag', MAKING_TAG, `${volumeGroup}/${thinPool}`]);
      lv = (await this.lvs()).find((l) => l.name === name);
    }
    if (!lv || lv.type !== 'V' || lv.pool !== thinPool) throw new Error(`${volumeGroup}/${name} is there but is not a thin volume of ${volumeGroup}/${thinPool}; it is left alone`);
    if (!lv.active) {
      await this.lvm('lvchange', ['--activate', 'y', `${volumeGroup}/${name}`]);
      lv = (await this.lvs()).find((l) => l.name === name)!;
    }
    if (lv.tags.includes(MAKING_TAG)) {
      if (volumeMode === 'Filesystem') await this.makeFilesystem(lv);
      await this.lvm('lvchange', ['--deltag', MAKING_TAG, `${volumeGroup}/${name}`]);
    }
    if (lv.tags.includes(COPY_TAG)) {
      if (volumeMode === 'Filesystem' && this.fsType === 'xfs') await run('xfs_admin', ['-U', 'generate', this.ownDevice(lv)]);
      await this.lvm('lvchange', ['--deltag', COPY_TAG, `${volumeGroup}/${name}`]);
    }
    return lv.uuid;
  }

  snapshotsRefused(): string | undefined {
    return undefined;
  }

  snapshotNameIn(name: string): string {
    return snapshotLv(name);
  }

  /**
   * A read-only thin snapshot `name` of the volume, found by the volume's UUID (LVM names
   * in the pool's volume group are the agent's alone). Left inactive, it takes no device.
   * Its blocks are the pool's: it is a thin volume of its volume's size, counted against
   * what the pool can promise from the moment it is taken, so the pool never promises
   * more than it holds when the volume is rewritten.
   */
  async snapshot(volume: SnapshotSource, name: string): Promise<PoolSnapshot> {
    const lvName = snapshotLv(name);
    const { volumeGroup } = this.options;
    let lvs = await this.lvs();
    const source = this.volumesIn(lvs).find((lv) => lv.uuid === volume.identity);
    if (!source) throw new Error(`volume ${volume.identity} is not in thin pool ${volumeGroup}/${this.options.thinPool}`);
    if (!lvs.some((lv) => lv.name === lvName)) {
      await this.lvm('lvcreate', ['--yes', '--snapshot', '--permission', 'r', '--name', lvName, `${volumeGroup}/${source.name}`]);
      lvs = await this.lvs();
    }
    const taken = lvs.find((lv) => lv.name === lvName);
    if (!taken || taken.type !== 'V' || taken.origin !== source.name) throw new Error(`${volumeGroup}/${lvName} is there but is not a snapshot of ${source.name}; it is left alone`);
    return { identity: taken.uuid, sizeBytes: taken.sizeBytes };
  }

  async snapshotAt(name: string): Promise<string | undefined> {
    const lvName = snapshotLv(name);
    return this.thinIn(await this.lvs()).find((lv) => lv.name === lvName)?.uuid;
  }

  async deleteSnapshot(identity: string): Promise<void> {
    const snapshot = this.thinIn(await this.lvs()).find((lv) => lv.uuid === identity);
    if (!snapshot) return;
    if (!SNAPSHOT_LV.test(snapshot.name)) throw new Error(`${this.options.volumeGroup}/${snapshot.name} (${identity}) is not a snapshot of the pool; it is left alone`);
    await this.lvm('lvremove', ['--yes', '--select', `lv_uuid=${identity}`, this.options.volumeGroup]);
  }

  /** The snapshot or volume of the pool a new one is made from, by its UUID. */
  private async sourceOf(from: VolumeSourceRef): Promise<LogicalVolume> {
    const identity = from.snapshot ?? from.volume;
    const source = this.thinIn(await this.lvs()).find((lv) => lv.uuid === identity);
    const named = source && (from.snapshot ? SNAPSHOT_LV.test(source.name) : isPoolVolumeName(source.name));
    if (!named) throw new Error(`${from.snapshot ? 'snapshot' : 'volume'} ${identity} is not in thin pool ${this.options.volumeGroup}/${this.options.thinPool}`);
    return source!;
  }

  pathOf(name: string): PoolVolumeLocation {
    requirePoolVolumeName(name);
    // The node's own device node: the container's /dev has only the devices there when it started.
    return { device: hostPath(this.devicePath(name)) };
  }

  async identityAt(name: string): Promise<string | undefined> {
    requirePoolVolumeName(name);
    return this.volumesIn(await this.lvs()).find((l) => l.name === name)?.uuid;
  }

  async names(): Promise<string[]> {
    return this.volumesIn(await this.lvs()).map((lv) => lv.name);
  }

  async users(name: string): Promise<string[]> {
    requirePoolVolumeName(name);
    const lv = (await this.lvs()).find((l) => l.name === name);
    return lv?.open ? [`its device ${this.devicePath(name)} is open (mounted, or held by a process)`] : [];
  }

  async resize(identity: string, limitBytes: number): Promise<boolean> {
    const lv = (await this.lvs()).find((l) => l.uuid === identity);
    if (!lv) return false;
    if (lv.sizeBytes < limitBytes) await this.lvm('lvextend', ['--yes', '--size', `${limitBytes}b`, `${this.options.volumeGroup}/${lv.name}`]);
    return true;
  }

  /** Removed by its UUID; LVM refuses while its device is open. */
  async destroy(identity: string): Promise<void> {
    const lv = (await this.lvs()).find((l) => l.uuid === identity);
    if (!lv) return;
    await this.lvm('lvremove', ['--yes', '--select', `lv_uuid=${identity}`, this.options.volumeGroup]);
  }

  /** The pool's device-mapper events (thin-pool-events.ts) start a pass. */
  watch(onChange: () => void): { close(): void } | undefined {
    const pool = this.lastPool;
    if (!pool) return undefined;
    return new ThinPoolEvents(`LVM-${pool.vgUuid.replace(/-/g, '')}${pool.uuid.replace(/-/g, '')}-tpool`, onChange);
  }

  /**
   * Finds the pool's volume group and its disks: by the UUID in the class's claim in the
   * node record, else (the first time) by its name, refused when more than one group
   * bears it. One read of every disk's label, of which only the group's rows are kept.
   */
  private async locate(): Promise<void> {
    const { volumeGroup } = this.options;
    const shown = JSON.parse(await lvm(['pvs', '--devicesfile', '', '--reportformat', 'json', '-o', 'pv_name,vg_name,vg_uuid'])) as {
      report: Array<{ pv: Array<{ pv_name: string; vg_name: string; vg_uuid: string }> }>;
    };
    const pvs = shown.report.flatMap((r) => r.pv);
    let vgUuid = vgUuidOf(this.options.claimed?.());
    if (!vgUuid) {
      const named = [...new Set(pvs.filter((pv) => pv.vg_name === volumeGroup).map((pv) => pv.vg_uuid))];
      if (named.length === 0) throw new Error(`no volume group ${volumeGroup} is on the node's disks`);
      if (named.length > 1) {
        const where = named.map((uuid) => `${uuid} on ${pvs.filter((pv) => pv.vg_uuid === uuid).map((pv) => pv.pv_name).join(', ')}`);
        throw new Error(`${named.length} volume groups are named ${volumeGroup} (${where.join('; ')}): the agent cannot tell which holds the pool; `
          + 'rename the others ("vgrename <UUID> <new name>")');
      }
      vgUuid = named[0];
    }
    const devices = pvs.filter((pv) => pv.vg_uuid === vgUuid);
    if (devices.length === 0) throw new Error(`the volume group of this class's volumes (UUID ${vgUuid}) is on none of the node's disks`);
    if (devices[0].vg_name !== volumeGroup) {
      throw new Error(`the volume group of this class's volumes (UUID ${vgUuid}) is named ${devices[0].vg_name} now, not ${volumeGroup}: `
        + 'its volumes\' paths are no longer their PVs\'; rename it back');
    }
    this.location = { vgUuid, devices: devices.map((pv) => pv.pv_name) };
  }

  /**
   * The pool's volumes, read on the disks it was last found on; found again (locate) when
   * it was never found, or when that read says its disks changed (the volume group not
   * there, another one, a disk missing or added).
   */
  private async read(): Promise<LogicalVolume[]> {
    if (this.location) {
      const { vgUuid, devices } = this.location;
      const lvs = await this.lvs().catch(() => undefined);
      if (lvs && lvs.length > 0 && lvs.every((lv) => lv.vgUuid === vgUuid && lv.vgDisks === devices.length && lv.vgMissingDisks === 0)) return lvs;
    }
    await this.locate();
    return this.lvs();
  }

  /** An LVM command that sees only the pool's disks. */
  private lvm(command: string, args: readonly string[]): Promise<string> {
    if (!this.location) throw new Error('the pool was not located');
    return lvm([command, '--devices', this.location.devices.join(','), ...args]);
  }


  /** The thin pool's thin volumes, an administrator's too. */
  private thinIn(lvs: readonly LogicalVolume[]): LogicalVolume[] {
    return lvs.filter((lv) => lv.type === 'V' && lv.pool === this.options.thinPool);
  }

  /** Those named as pool volumes. */
  private volumesIn(lvs: readonly LogicalVolume[]): LogicalVolume[] {
    return this.thinIn(lvs).filter((lv) => isPoolVolumeName(lv.name));
  }

  private devicePath(name: string): string {
    return `/dev/${this.options.volumeGroup}/${name}`;
  }

  /** The thin pool, when it is there and zeroes the blocks it gives; else throws, saying what to do. */
  private requirePool(lvs: readonly LogicalVolume[]): LogicalVolume {
    const { volumeGroup, thinPool } = this.options;
    const pool = lvs.find((lv) => lv.name === thinPool);
    if (!pool || pool.type !== 't') {
      throw new Error(`volume group ${volumeGroup} has no thin pool ${thinPool}${pool ? ` (${thinPool} is not a thin pool)` : ''}: `
        + `make it with "lvcreate --type thin-pool --size <size> --name ${thinPool} ${volumeGroup}"`);
    }
    if (!pool.zeroes) {
      throw new Error(`thin pool ${volumeGroup}/${thinPool} does not zero the blocks it gives a volume, so a new volume could read what a released one `
        + `wrote; turn zeroing on ("lvchange --zero y ${volumeGroup}/${thinPool}")`);
    }
    this.lastPool = pool;
    return pool;
  }

  /**
   * The class's filesystem on the new volume, through the host's /dev (the agent's
   * container mounts it), once the device there is the volume's own.
   */
  private async makeFilesystem(lv: LogicalVolume): Promise<void> {
    const device = this.ownDevice(lv);
    await run(`mkfs.${this.fsType}`, this.fsType === 'xfs' ? ['-q', '-f', device] : ['-q', '-F', device], { timeoutMs: 10 * 60_000 });
  }

  /** The volume's device in the agent's /dev (the host's, mounted), once it is the volume's own; else throws. */
  private ownDevice(lv: LogicalVolume): string {
    const device = this.devicePath(lv.name);
    let st: fs.BigIntStats;
    try {
      st = fs.statSync(device, { bigint: true });
    } catch (e) {
      throw new Error(`${device} is not in the agent's /dev (${(e as NodeJS.ErrnoException).code}): an lvm-thin pool needs the host's /dev mounted (mountDevVolume)`);
    }
    const { major, minor } = deviceNumberOf(st.rdev);
    if (!st.isBlockDevice() || major !== lv.major || minor !== lv.minor) {
      throw new Error(`${device} is not the device of logical volume ${lv.name} (${lv.major}:${lv.minor}); nothing is done to it`);
    }
    return device;
  }

  private async lvs(): Promise<LogicalVolume[]> {
    const shown = JSON.parse(await this.lvm('lvs', ['--reportformat', 'json', '--units', 'b', '--nosuffix', '-o',
      'lv_name,lv_uuid,vg_uuid,pv_count,vg_missing_pv_count,lv_size,data_percent,metadata_percent,pool_lv,lv_attr,lv_active_locally,lv_device_open,zero,'
      + 'lv_tags,lv_kernel_major,lv_kernel_minor,origin',
      this.options.volumeGroup])) as { report: Array<{ lv: Array<Record<string, string>> }> };
    return shown.report.flatMap((r) => r.lv).map((lv) => ({
      name: lv.lv_name,
      uuid: lv.lv_uuid,
      vgUuid: lv.vg_uuid,
      vgDisks: Number(lv.pv_count),
      vgMissingDisks: Number(lv.vg_missing_pv_count),
      sizeBytes: Number(lv.lv_size),
      dataFill: Number(lv.data_percent || 0) / 100,
      metadataFill: Number(lv.metadata_percent || 0) / 100,
      pool: lv.pool_lv,
      origin: lv.origin,
      type: lv.lv_attr.charAt(0),
      open: lv.lv_device_open === 'open',
      active: lv.lv_active_locally === 'active locally',
      zeroes: lv.zero === 'zero',
      tags: lv.lv_tags === '' ? [] : lv.lv_tags.split(','),
      major: Number(lv.lv_kernel_major),
      minor: Number(lv.lv_kernel_minor),
    }));
  }
}

/** The volume group UUID (LVM's dashed form) in a thin pool's storage identity (`dm:LVM-<32 characters><32 characters>-pool`). */
export function vgUuidOf(identity: string | undefined): string | undefined {
  const m = /^dm:LVM-([A-Za-z0-9]{32})[A-Za-z0-9]{32}-pool$/.exec(identity ?? '');
  if (!m) return undefined;
  const u = m[1];
  return [u.slice(0, 6), u.slice(6, 10), u.slice(10, 14), u.slice(14, 18), u.slice(18, 22), u.slice(22, 26), u.slice(26)].join('-');
}
