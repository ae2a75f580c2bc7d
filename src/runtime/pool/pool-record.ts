/**
 * The pools' lines in the node's volume record (record/volume-record.ts), dialect `pool`:
 * - one per pool class, claiming the whole filesystem (or other storage) its volumes are
 *   made on, so that no static class offers any of it and no second pool class draws on
 *   it: one piece of storage is claimed once, across classes and dialects;
 * - one per volume about to be made (`pool:making:<class>/<name>`), naming the claim it
 *   is for, from before the backend makes it until its own line replaces it: a volume
 *   with no PV is a stray only once the server says that claim is gone, never because a
 *   copy of the claims lacks it;
 * - one per volume made, from just after it is made until it is destroyed, `dirty`
 *   (a tenant's data) with the claim it was made for and the reclaim policy its PV has
 *   now, so that whatever becomes of its PV, a volume whose data is to be kept (Retain)
 *   is never taken for a stray and destroyed;
 * - one per snapshot about to be taken (`pool:taking:<class>/<name>`) and, once taken, one
 *   per snapshot (`pool:snapshot:<its identity>`), `dirty` (a tenant's data), naming its
 *   VolumeSnapshotContent (`pvName`), its VolumeSnapshot (`claim`, `claimUid`) and the
 *   content's deletion policy (`reclaimPolicy`): a snapshot whose content went while no
 *   agent could act on it is found by its line, never lost or left unaccounted.
 * Each line is durable before the controller acts on what it says.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { extentsOverlap, storageExtent, type VolumeRecord, type VolumeRecordEntry } from '../record';

const POOL_LINE = 'pool:';
const MAKING_LINE = 'pool:making:';
const SNAPSHOT_LINE = 'pool:snapshot:';
const TAKING_LINE = 'pool:taking:';

/** Whether a line of the record is a volume's (made, not about to be, not a snapshot's). */
function isVolumeLine(identity: string): boolean {
  return identity.startsWith(POOL_LINE) && ![MAKING_LINE, SNAPSHOT_LINE, TAKING_LINE].some((other) => identity.startsWith(other));
}

/** What a volume's line is known by: its backend's identity of it. */
export function poolLineIdentity(volumeId: string): string {
  return `${POOL_LINE}${volumeId}`;
}

/** What the line of a volume about to be made is known by: its class and name (its identity is known only once it is made). */
function makingLineIdentity(className: string, name: string): string {
  return `${MAKING_LINE}${className}/${name}`;
}

/** A volume about to be made for a claim. */
export interface MakingVolume {
  readonly className: string;
  /** Its name, `pvc-<claim UID>`. */
  readonly name: string;
  readonly hostPath: string;
  /** `namespace/name` */
  readonly claim: string;
  readonly claimUid: string;
}

export type StorageClaim = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface MadeVolume {
  readonly volumeId: string;
  readonly className: string;
  readonly hostPath: string;
  readonly pvName: string;
  /** `namespace/name` */
  readonly claim: string;
  readonly claimUid: string;
  readonly reclaimPolicy: string;
  /** @default 'Filesystem' */
  readonly volumeMode?: 'Filesystem' | 'Block';
}

/** A snapshot about to be taken for a VolumeSnapshotContent. */
export interface TakingSnapshot {
  readonly className: string;
  /** `snapshot-<VolumeSnapshot UID>` */
  readonly name: string;
  /** Where it is on the host, for a person. */
  readonly hostPath: string;
  /** Its VolumeSnapshotContent's name. */
  readonly content: string;
  /** Its VolumeSnapshot, `namespace/name`, and that object's UID. */
  readonly volumeSnapshot: string;
  readonly volumeSnapshotUid: string;
  /** The content's deletionPolicy. */
  readonly deletionPolicy: string;
  /** Its volume's. */
  readonly volumeMode: 'Filesystem' | 'Block';
}

/** A snapshot taken, as its line says. */
export interface RecordedSnapshot extends TakingSnapshot {
  /** Its identity, once taken. */
  readonly identity?: string;
}

/** A pool volume with a PV, as a pass finds it. */
export interface FollowedVolume {
  readonly volumeId: string;
  readonly className: string;
  /** Where its class makes it on the host (its line's hostPath). */
  readonly hostPath: string;
  readonly pv: V1PersistentVolume;
}

export class PoolRecord {
  constructor(private readonly record: VolumeRecord, private readonly now: () => Date = () => new Date()) {}

  /**
   * Claims `storage` (a volume identity covering all of it) for the pool class, unless
   * something else of the record shares it: a static volume offered or used, another
   * pool class. Its claim is kept once made, whatever else appears later. A class whose
   * volumes were made on other storage (its directory unmounted, or another filesystem
   * mounted there) is refused until that storage is back: on this one its volumes would
   * look gone, and their lines be dropped while their data stays where they were made.
   */
  async claimStorage(className: string, storage: string, hostDir: string, configured: ReadonlySet<string>): Promise<StorageClaim> {
    return this.record.update<StorageClaim>((r) => {
      const mine = r.get(storage);
      if (mine?.dialect === 'pool' && mine.storageClass === className) return { writes: [], result: { ok: true } };
      const earlier = r.entries().find((e) => e.dialect === 'pool' && e.storageClass === className && !e.identity.startsWith(POOL_LINE));
      const volumes = r.entries().filter((e) => e.storageClass === className && e.identity.startsWith(POOL_LINE)).length;
      if (earlier && volumes > 0) {
        return {
          writes: [],
          result: {
            ok: false,
            reason: `${hostDir} is not on the storage the class's ${volumes} volume(s) were made on (${earlier.identity}; it is on ${storage} now): `
              + 'unmounted, or replaced? Nothing is done there until that storage is back',
          },
        };
      }
      const extent = storageExtent(storage);
      const other = r.entries().find((e) => e.state !== 'clean' && !e.identity.startsWith('pool:') && extentsOverlap(extent, storageExtent(e.identity)));
      if (other) return { writes: [], result: { ok: false, reason: `its storage (${storage}) is claimed already: ${claimedBy(r, other, configured)}` } };
      const line: VolumeRecordEntry = {
        identity: storage,
        state: 'offered',
        dialect: 'pool',
        storageClass: className,
        hostPath: hostDir,
        volumeMode: 'Filesystem',
        reason: `claimed by pool class "${className}": its volumes are made here, and nothing of it is offered as a volume of its own`,
        since: this.now().toISOString(),
      };
      // The class's earlier storage, with no volume of it left, is given up for this one.
      return { writes: [...earlier ? [{ remove: earlier.identity }] : [], line], result: { ok: true } };
    });
  }

  /**
   * The class's claim on its storage goes, unless it has volumes there: a class that
   * cannot use its storage (found unusable after it claimed it) does not keep another
   * class from it.
   */
  async releaseUnusedStorage(className: string): Promise<void> {
    await this.record.update((r) => {
      if (r.entries().some((e) => e.storageClass === className && e.identity.startsWith(POOL_LINE))) return { writes: [], result: undefined };
      const held = r.entries().filter((e) => e.dialect === 'pool' && e.storageClass === className);
      return { writes: held.map((e) => ({ remove: e.identity })), result: undefined };
    });
  }

  /** The storage the class holds, if it claimed some. */
  storageOf(className: string): string | undefined {
    return this.record.entries().find((e) => e.dialect === 'pool' && e.storageClass === className && !e.identity.startsWith(POOL_LINE))?.identity;
  }

  /** The line of the volume of this identity, if it has one. */
  line(volumeId: string): VolumeRecordEntry | undefined {
    return this.record.get(poolLineIdentity(volumeId));
  }

  /** The identities of the class's volumes that have lines (what a backend may not hand out again). */
  volumeIds(className: string): string[] {
    return this.record.entries()
      .filter((e) => e.storageClass === className && isVolumeLine(e.identity))
      .map((e) => e.identity.slice(POOL_LINE.length));
  }

  /** A snapshot about to be taken (before the backend takes it): its line names its content. */
  async taking(s: TakingSnapshot): Promise<void> {
    const identity = `${TAKING_LINE}${s.className}/${s.name}`;
    await this.record.update((r) => (r.get(identity) ? { writes: [], result: undefined } : { writes: [this.snapshotLine(identity, s, 'being taken')], result: undefined }));
  }

  /** A snapshot taken: its own line replaces the one it was being taken under. */
  async taken(s: TakingSnapshot, snapshotId: string): Promise<void> {
    const taking = `${TAKING_LINE}${s.className}/${s.name}`;
    const identity = `${SNAPSHOT_LINE}${snapshotId}`;
    await this.record.update((r) => ({
      writes: [...r.get(identity) ? [] : [this.snapshotLine(identity, s, 'taken')], ...r.get(taking) ? [{ remove: taking }] : []],
      result: undefined,
    }));
  }

  /** A snapshot deleted (or never taken): its lines go. */
  async snapshotGone(className: string, name: string, snapshotId?: string): Promise<void> {
    const lines = [`${TAKING_LINE}${className}/${name}`, ...snapshotId ? [`${SNAPSHOT_LINE}${snapshotId}`] : []];
    await this.record.update((r) => ({ writes: lines.filter((l) => r.get(l)).map((remove) => ({ remove })), result: undefined }));
  }

  /** Every snapshot the record knows of, taken or about to be. */
  snapshots(): RecordedSnapshot[] {
    return this.record.entries().flatMap((e) => {
      const taken = e.identity.startsWith(SNAPSHOT_LINE);
      if (!taken && !e.identity.startsWith(TAKING_LINE)) return [];
      const [namespace, name] = (e.claim ?? '/').split('/');
      return [{
        className: e.storageClass,
        name: `snapshot-${e.claimUid ?? ''}`,
        hostPath: e.hostPath,
        content: e.pvName ?? '',
        volumeSnapshot: `${namespace}/${name}`,
        volumeSnapshotUid: e.claimUid ?? '',
        deletionPolicy: e.reclaimPolicy ?? 'Delete',
        volumeMode: e.volumeMode,
        ...taken ? { identity: e.identity.slice(SNAPSHOT_LINE.length) } : {},
      }];
    });
  }

  private snapshotLine(identity: string, s: TakingSnapshot, what: string): VolumeRecordEntry {
    return {
      identity,
      state: 'dirty',
      dialect: 'pool',
      storageClass: s.className,
      hostPath: s.hostPath,
      volumeMode: s.volumeMode,
      pvName: s.content,
      reclaimPolicy: s.deletionPolicy,
      claim: s.volumeSnapshot,
      claimUid: s.volumeSnapshotUid,
      reason: `snapshot ${what} for VolumeSnapshot ${s.volumeSnapshot}`,
      since: this.now().toISOString(),
    };
  }

  /** A volume about to be made for a claim (before the backend makes it): its line names the claim. */
  async making(v: MakingVolume): Promise<void> {
    const identity = makingLineIdentity(v.className, v.name);
    await this.record.update((r) => (r.get(identity)?.claimUid === v.claimUid ? { writes: [], result: undefined } : {
      writes: [{
        identity,
        state: 'dirty',
        dialect: 'pool',
        storageClass: v.className,
        hostPath: v.hostPath,
        volumeMode: 'Filesystem',
        pvName: v.name,
        claim: v.claim,
        claimUid: v.claimUid,
        reason: `being made for claim ${v.claim}`,
        since: this.now().toISOString(),
      }],
      result: undefined,
    }));
  }

  /** The line of the class's volume of this name about to be made (or made, its own line not written yet), if it has one. */
  makingLine(className: string, name: string): VolumeRecordEntry | undefined {
    return this.record.get(makingLineIdentity(className, name));
  }

  /** The class's lines of volumes about to be made. */
  makingLines(className: string): VolumeRecordEntry[] {
    return this.record.entries().filter((e) => e.storageClass === className && e.identity.startsWith(MAKING_LINE));
  }

  /** A volume about to be made that will not be (its claim gone), or destroyed before its own line was written: its line goes. */
  async notMaking(className: string, name: string): Promise<void> {
    const identity = makingLineIdentity(className, name);
    await this.record.update((r) => ({ writes: r.get(identity) ? [{ remove: identity }] : [], result: undefined }));
  }

  /** A volume just made for a claim, before its PV is: its own line replaces the one it was being made under. */
  async made(v: MadeVolume): Promise<void> {
    const making = makingLineIdentity(v.className, v.pvName);
    await this.record.update((r) => ({
      writes: [
        ...r.get(poolLineIdentity(v.volumeId)) ? [] : [this.lineOf(v, `made for claim ${v.claim}`)],
        ...r.get(making) ? [{ remove: making }] : [],
      ],
      result: undefined,
    }));
  }

  /**
   * Each PV's volume has its line, with the reclaim policy the PV has now (an
   * administrator may set Retain on a bound PV): a line for a volume made by an agent
   * before lines were kept, a line changed whose policy changed.
   */
  async follow(volumes: ReadonlyArray<FollowedVolume>): Promise<void> {
    const stale = volumes.filter(({ volumeId, pv }) => this.line(volumeId)?.reclaimPolicy !== policyOf(pv));
    if (stale.length === 0) return;
    await this.record.update((r) => ({
      writes: stale.flatMap(({ volumeId, className, hostPath, pv }) => {
        const line = r.get(poolLineIdentity(volumeId));
        const ref = pv.spec?.claimRef;
        if (line) return line.reclaimPolicy === policyOf(pv) ? [] : [{ ...line, reclaimPolicy: policyOf(pv), since: this.now().toISOString() }];
        return [this.lineOf({
          volumeId,
          className,
          hostPath,
          pvName: pv.metadata?.name ?? '',
          claim: `${ref?.namespace ?? ''}/${ref?.name ?? ''}`,
          claimUid: ref?.uid ?? '',
          reclaimPolicy: policyOf(pv),
          volumeMode: pv.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem',
        }, `found with its PV ${pv.metadata?.name}`)];
      }),
      result: undefined,
    }));
  }

  /** A volume whose PV went under a policy that keeps its data: its line says so, for as long as it stays. */
  async kept(volumeId: string, reclaimPolicy: string, reason: string): Promise<void> {
    await this.record.update((r) => {
      const line = r.get(poolLineIdentity(volumeId));
      return { writes: line ? [{ ...line, reclaimPolicy, reason, since: this.now().toISOString() }] : [], result: undefined };
    });
  }

  /** A volume destroyed: its line goes. */
  async destroyed(volumeId: string): Promise<void> {
    const identity = poolLineIdentity(volumeId);
    await this.record.update((r) => ({ writes: r.get(identity) ? [{ remove: identity }] : [], result: undefined }));
  }

  /** The storage claims of pool classes no longer configured, with no volume of theirs left, go. */
  async releaseStorage(configured: ReadonlySet<string>): Promise<void> {
    await this.record.update((r) => {
      const withVolumes = new Set(r.entries().filter((e) => e.identity.startsWith('pool:')).map((e) => e.storageClass));
      const gone = r.entries().filter((e) => e.dialect === 'pool' && !e.identity.startsWith('pool:')
        && !configured.has(e.storageClass) && !withVolumes.has(e.storageClass));
      return { writes: gone.map((e) => ({ remove: e.identity })), result: undefined };
    });
  }

  private lineOf(v: MadeVolume, reason: string): VolumeRecordEntry {
    return {
      identity: poolLineIdentity(v.volumeId),
      state: 'dirty',
      dialect: 'pool',
      storageClass: v.className,
      hostPath: v.hostPath,
      volumeMode: v.volumeMode ?? 'Filesystem',
      pvName: v.pvName,
      reclaimPolicy: v.reclaimPolicy,
      claim: v.claim,
      claimUid: v.claimUid,
      reason,
      since: this.now().toISOString(),
    };
  }
}

/** Who holds a piece of storage, and, for a pool class no longer configured, what an administrator does to free it. */
function claimedBy(r: { entries(): readonly VolumeRecordEntry[] }, other: VolumeRecordEntry, configured: ReadonlySet<string>): string {
  if (other.dialect !== 'pool') return `${other.hostPath} of class "${other.storageClass}" is on it (${other.state}); a piece of storage serves one class`;
  if (configured.has(other.storageClass)) return `pool class "${other.storageClass}" draws on it; a piece of storage serves one class`;
  const volumes = r.entries().filter((e) => e.storageClass === other.storageClass && e.identity.startsWith(POOL_LINE));
  return `pool class "${other.storageClass}", no longer configured, keeps it while ${volumes.length} volume(s) of it are there `
    + `(${volumes.map((e) => e.hostPath).join(', ')}); it is given up once they are gone: delete their claims and PVs with the class configured again, `
    + 'or have each destroyed with "local-volume-provisioner volumes reclaim PATH" (in the agent\'s pod; "volumes list" shows them)';
}

function policyOf(pv: V1PersistentVolume): string {
  return pv.spec?.persistentVolumeReclaimPolicy ?? 'Delete';
}
