/**
 * What a pool class needs of the storage it draws on, whatever that storage is: a
 * volume made with a hard limit, resized, destroyed, and what is left for new ones.
 * Each backend (btrfs.ts, ...) is one implementation; the pool controller knows only
 * this interface.
 *
 * A volume is named by its PV's name (`pvc-<claim UID>`) when it is made, and known
 * from then on by the identity the backend returns (recorded on its PV): every later
 * act (a resize, the destroy) finds it by that identity, never by its name or path,
 * so nothing a tenant or anyone else puts under a volume's name is ever touched.
 * A snapshot is named likewise (`snapshot-<VolumeSnapshot UID>`, as the CSI sidecar names
 * the snapshots it asks for) and known by its own identity.
 */
import type { VolumeMode } from '../../config';

/** What one volume holds and may hold, as its backend reads it. */
export interface PoolVolumeUsage {
  /** Bytes it holds, as its limit counts them. */
  readonly usedBytes: number;
  /** Its limit; undefined when it has none now (quotas turned off, its limit lifted to destroy it). */
  readonly limitBytes?: number;
}

/** A tenant's way around its limit that the backend found and undid (it says what it did). */
export interface LimitEscape {
  /** The identity of the volume the escape was made from. */
  readonly volume: string;
  readonly what: string;
}

/** Where the agent reaches a volume: a directory pool's volume is a directory, a device pool's a block device. */
export type PoolVolumeLocation = { readonly directory: string; readonly device?: never } | { readonly device: string; readonly directory?: never };

/** A volume as the node service puts it where a pod uses it: where it is, its filesystem, its use. */
export type PublishableVolume = PoolVolumeLocation & {
  /** The filesystem on a device volume. */
  readonly fsType?: string;
  /** The options that filesystem is mounted with when the PV names none. */
  readonly mountOptions?: readonly string[];
  /** Its use and limit, as the last look at its pool read them. */
  readonly usage?: PoolVolumeUsage;
};

/** A pool as one look at it found it. */
export interface PoolState {
  /** Bytes the storage can still give, before what its volumes may still write is taken off. */
  readonly freeBytes: number;
  /** Every volume the storage holds, by identity. */
  readonly volumes: ReadonlyMap<string, PoolVolumeUsage>;
  /** Escapes found and undone by this look. */
  readonly escapes: readonly LimitEscape[];
  /** What the agent would do first, for a person (`plan`). */
  readonly note?: string;
  /** Storage that fills apart from its volumes' sizes (a thin pool's data and metadata), 0 to 1. */
  readonly fill?: { readonly data: number; readonly metadata: number };
  /** Why no Block volume is given now, when one is not (the node's LVM would read what its tenant writes). */
  readonly blockRefused?: string;
}

/** A snapshot as its backend took it. */
export interface PoolSnapshot {
  /** Its own identity in the pool (never its volume's). */
  readonly identity: string;
  /** What a volume made from it must be able to hold: its volume's size when it was taken. */
  readonly sizeBytes: number;
}

/** What a new volume is made from, by identity: a snapshot (a restore) or another volume of the pool (a clone). */
export type VolumeSourceRef = { readonly snapshot: string; readonly volume?: never } | { readonly volume: string; readonly snapshot?: never };

/** The volume a snapshot is taken of: its identity, and the name it was made under. */
export interface SnapshotSource {
  readonly identity: string;
  readonly name: string;
}

export interface PoolBackend {
  /**
   * Set by a backend whose volumes are block devices: the filesystem its Filesystem
   * volumes carry, which kubelet mounts (and grows, when a claim grows). Such a backend
   * gives Block volumes too.
   */
  readonly fsType?: string;
  /** The options kubelet mounts such Filesystem volumes with when the StorageClass names none. */
  readonly mountOptions?: readonly string[];
  /**
   * Makes the pool ready on first use (quotas turned on where none are) and reads it,
   * undoing any limit escape it finds. Throws, saying why, when it cannot give volumes
   * whose limits hold: nothing is provisioned then.
   */
  open(): Promise<PoolState>;
  /** Reads the pool without changing anything (`plan`). */
  inspect(): Promise<PoolState>;
  /**
   * The identity (volume/identity.ts) of all the storage the pool draws on: the volume
   * record gives it to one class, so no other class offers or draws on any of it.
   */
  storage(): Promise<string>;
  /**
   * Makes the volume (unless it is there) limited to `limitBytes`; returns its identity. `from`:
   * made holding what that snapshot or volume holds (only where `snapshotsRefused` is undefined),
   * sharing its blocks until either is written. Never called while another create of the same
   * backend runs (the pool controller makes one volume of a pool at a time).
   */
  create(name: string, limitBytes: number, volumeMode: VolumeMode, from?: VolumeSourceRef): Promise<string>;
  /**
   * Why this pool takes no snapshot and makes no volume from another, as read by its last
   * open (the filesystem cannot share blocks between files: ext4, XFS without reflink);
   * undefined where it does.
   */
  snapshotsRefused(): string | undefined;
  /**
   * Takes a read-only, point-in-time snapshot `name` of the volume, sharing its blocks;
   * one of that name already taken of it (a try cut short) is the one returned. Throws
   * where snapshotsRefused says why.
   */
  snapshot(volume: SnapshotSource, name: string): Promise<PoolSnapshot>;
  /** The name in the pool of the snapshot `name` (where a person finds it: LVM reserves some names). */
  snapshotNameIn(name: string): string;
  /** The identity of the snapshot at `name`, if this pool has one there. */
  snapshotAt(name: string): Promise<string | undefined>;
  /** Deletes the snapshot with what only it holds; done when it is already gone. */
  deleteSnapshot(identity: string): Promise<void>;
  /** Where the agent reaches the volume `name` (made by create): its directory, or its block device. */
  pathOf(name: string): PoolVolumeLocation;
  /** The identity of the volume at `name`, if a volume of this pool is there. */
  identityAt(name: string): Promise<string | undefined>;
  /** The names in the pool that may be volumes (for strays). */
  names(): Promise<string[]>;
  /** Sets the volume's limit; false when the volume is gone. */
  resize(identity: string, limitBytes: number): Promise<boolean>;
  /**
   * What still uses the volume at `name` (a pod's mount of it, a process holding it), for
   * a person; empty when nothing does. A volume in use is never destroyed: its tenant
   * would go on writing into storage the pool counts as free.
   */
  users(name: string): Promise<string[]>;
  /** Destroys the volume with everything in it; done when it is already gone. */
  destroy(identity: string): Promise<void>;
  /**
   * Calls `onChange` whenever the storage changes in a way a pass must see at once (a
   * thin pool filling up), until closed; undefined where the backend cannot tell.
   */
  watch?(onChange: () => void): { close(): void } | undefined;
}

/** The names a pool's volumes may have: its PVs' names, `pvc-<claim UID>`, as external provisioners name them. */
const VOLUME_NAME = /^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isPoolVolumeName(name: string): boolean {
  return VOLUME_NAME.test(name);
}

/** The names of snapshots: `snapshot-<VolumeSnapshot UID>`. */
const SNAPSHOT_NAME = /^snapshot-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Throws unless `name` is a snapshot's name: no path can be smuggled in as one. */
export function requireSnapshotName(name: string): void {
  if (!SNAPSHOT_NAME.test(name)) throw new Error(`"${name}" is not the name of a snapshot (snapshot-<VolumeSnapshot UID>)`);
}

/** Throws unless `name` is a pool volume's name: no path can be smuggled in as one. */
export function requirePoolVolumeName(name: string): void {
  if (!isPoolVolumeName(name)) throw new Error(`"${name}" is not the name of a pool volume (pvc-<claim UID>)`);
}
