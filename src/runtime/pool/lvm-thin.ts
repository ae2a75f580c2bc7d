/**
 * A pool's volumes on LVM: each a thin logical volume of the class's thin pool, as large
 * as its claim: a device with a hard end, which no tenant writes past whatever it runs
 * (Block volumes are given as they are; Filesystem ones carry the class's filesystem,
 * made here, mounted and grown by kubelet).
 *
 * LVM runs as the host's own: in PID 1's mount and IPC namespaces (the agent shares the
 * host's PID namespace), so that it takes the host's configuration and locks (two LVM
 * commands that change a volume group's metadata at once must share them, or the
 * metadata is lost) and waits for the host's udev, which makes the /dev/<vg>/<lv> link
 * kubelet mounts. Every read is `lvs --reportformat json`; a volume is known by its
 * logical volume's UUID and found by it.
 *
 * No tenant reads another's data: a thin volume reads zeros where nothing was written
 * to it, and the pool must zero each block it gives a volume (its `zero` flag), else a
 * write of part of a block would leave the rest as a released volume left it; a pool that
 * does not is refused. A volume whose filesystem is not made yet carries a tag until it
 * is, so an agent killed while making one makes it again, never twice on a tenant's data
 * (no PV refers to it before).
 */
import * as fs from 'node:fs';
import { PoolBackend, PoolState, PoolVolumeUsage, isPoolVolumeName, requirePoolVolumeName } from './backend';
import { run } from './command';
import type { VolumeMode } from '../../config';
import { deviceNumberOf } from '../volume/device-number';
import { blockDeviceIdentity } from '../volume/identity';

/** The tag of a volume whose filesystem is not made yet. */
const MAKING_TAG = 'local-volume-provisioner.making';
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
  /** `t` for a thin pool, `V` for a thin volume, ... */
  readonly type: string;
  readonly open: boolean;
  /** Its device is there (LVM activated it). */
  readonly active: boolean;
  readonly zeroes: boolean;
  readonly tags: readonly string[];
  readonly major: number;
  readonly minor: number;
}

export interface LvmThinOptions {
  readonly volumeGroup: string;
  readonly thinPool: string;
  /** The filesystem of Filesystem volumes. */
  readonly fsType: string;
  /** @default 1 */
  readonly overcommit?: number;
}

export class LvmThinPool implements PoolBackend {
  readonly fsType: string;

  constructor(private readonly options: LvmThinOptions) {
    this.fsType = options.fsType;
  }

  /** Every volume is made active, as it must be for kubelet to mount it (one left inactive by a boot, or by an lvcreate cut short). */
  async open(): Promise<PoolState> {
    let lvs = await this.lvs();
    const inactive = this.volumesIn(lvs).filter((lv) => !lv.active);
    if (inactive.length > 0) {
      await lvm(['lvchange', '--activate', 'y', ...inactive.map((lv) => `${this.options.volumeGroup}/${lv.name}`)]);
      lvs = await this.lvs();
    }
    return this.stateOf(lvs);
  }

  async inspect(): Promise<PoolState> {
    return this.stateOf(await this.lvs());
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

  async storage(): Promise<string> {
    const pool = this.requirePool(await this.lvs());
    return blockDeviceIdentity({ major: pool.major, minor: pool.minor });
  }

  async create(name: string, limitBytes: number, volumeMode: VolumeMode): Promise<string> {
    requirePoolVolumeName(name);
    const { volumeGroup, thinPool } = this.options;
    let lv = (await this.lvs()).find((l) => l.name === name);
    if (!lv) {
      await lvm(['lvcreate', '--yes', '--thin', '--virtualsize', `${limitBytes}b`, '--name', name, '--addtag', MAKING_TAG, `${volumeGroup}/${thinPool}`]);
      lv = (await this.lvs()).find((l) => l.name === name);
    }
    if (!lv || lv.type !== 'V' || lv.pool !== thinPool) throw new Error(`${volumeGroup}/${name} is there but is not a thin volume of ${volumeGroup}/${thinPool}; it is left alone`);
    if (!lv.active) {
      await lvm(['lvchange', '--activate', 'y', `${volumeGroup}/${name}`]);
      // Its device numbers are known only once it is active.
      lv = (await this.lvs()).find((l) => l.name === name)!;
    }
    if (lv.tags.includes(MAKING_TAG)) {
      if (volumeMode === 'Filesystem') await this.makeFilesystem(lv);
      await lvm(['lvchange', '--deltag', MAKING_TAG, `${volumeGroup}/${name}`]);
    }
    return lv.uuid;
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
    if (lv.sizeBytes < limitBytes) await lvm(['lvextend', '--yes', '--size', `${limitBytes}b`, `${this.options.volumeGroup}/${lv.name}`]);
    return true;
  }

  /** Removed by its UUID; LVM refuses while its device is open. */
  async destroy(identity: string): Promise<void> {
    const lv = (await this.lvs()).find((l) => l.uuid === identity);
    if (!lv) return;
    await lvm(['lvremove', '--yes', '--select', `lv_uuid=${identity}`, this.options.volumeGroup]);
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
    return pool;
  }

  /**
   * The class's filesystem on the new volume, through the host's /dev (the agent's
   * container mounts it), once the device there is the volume's own.
   */
  private async makeFilesystem(lv: LogicalVolume): Promise<void> {
    const device = this.devicePath(lv.name);
    let st: fs.BigIntStats;
    try {
      st = fs.statSync(device, { bigint: true });
    } catch (e) {
      throw new Error(`${device} is not in the agent's /dev (${(e as NodeJS.ErrnoException).code}): an lvm-thin pool needs the host's /dev mounted (mountDevVolume)`);
    }
    const { major, minor } = deviceNumberOf(st.rdev);
    if (!st.isBlockDevice() || major !== lv.major || minor !== lv.minor) {
      throw new Error(`${device} is not the device of logical volume ${lv.name} (${lv.major}:${lv.minor}); nothing is made on it`);
    }
    await run(`mkfs.${this.fsType}`, this.fsType === 'xfs' ? ['-q', '-f', device] : ['-q', '-F', device], { timeoutMs: 10 * 60_000 });
  }

  private async lvs(): Promise<LogicalVolume[]> {
    const shown = JSON.parse(await lvm(['lvs', '--reportformat', 'json', '--units', 'b', '--nosuffix', '-o',
      'lv_name,lv_uuid,lv_size,data_percent,metadata_percent,pool_lv,lv_attr,lv_active_locally,lv_device_open,zero,lv_tags,lv_kernel_major,lv_kernel_minor',
      this.options.volumeGroup])) as { report: Array<{ lv: Array<Record<string, string>> }> };
    return shown.report.flatMap((r) => r.lv).map((lv) => ({
      name: lv.lv_name,
      uuid: lv.lv_uuid,
      sizeBytes: Number(lv.lv_size),
      dataFill: Number(lv.data_percent || 0) / 100,
      metadataFill: Number(lv.metadata_percent || 0) / 100,
      pool: lv.pool_lv,
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

/**
 * LVM as the host runs it (see the header): in PID 1's namespaces, or, when they are
 * this process's own (the agent run on the host), here. The image has no LVM of its own.
 */
async function lvm(args: readonly string[]): Promise<string> {
  const onHost = fs.readlinkSync('/proc/1/ns/mnt') === fs.readlinkSync('/proc/self/ns/mnt');
  try {
    // Long: an LVM command cut short leaves its work half done (a volume made, not activated), and a busy node's udev can be slow.
    const options = { timeoutMs: 10 * 60_000 };
    return await (onHost ? run('lvm', args, options) : run('nsenter', ['--target', '1', '--mount', '--ipc', '--', 'lvm', ...args], options));
  } catch (e) {
    if (onHost && /ENOENT/.test((e as Error).message)) {
      throw new Error('LVM is not here: an lvm-thin pool runs the host\'s LVM in its namespaces, which needs the host\'s PID namespace (hostPid) and LVM on the host');
    }
    throw e;
  }
}
