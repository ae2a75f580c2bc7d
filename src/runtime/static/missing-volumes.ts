/**
 * PVs whose volume has gone (disk pulled, unmounted, filtered out by a config
 * change). An Available one holds no claim, so after a grace period (a remount
 * or a reboot can take a while) it is deleted and discovery recreates it if the
 * volume comes back. A Released one may still hold wanted data on a disk that
 * comes back, so by default it is only reported; a user may opt in to deleting it.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';

export interface MissingVolumePolicy {
  readonly gracePeriodMs: number;
  readonly deleteReleased: boolean;
}

export interface MissingVolumeVerdict {
  /** Every PV whose volume is missing now (for the volume_state metric and Events). */
  readonly missing: readonly V1PersistentVolume[];
  /** Those missing past the grace period that may be deleted. */
  readonly deleteNow: readonly V1PersistentVolume[];
}

/** Remembers since when each PV (by UID) has been missing. */
export class MissingVolumeTracker {
  private readonly since = new Map<string, number>();

  /**
   * `present(pv)` answers true, false, or undefined when this pass could not tell
   * (e.g. the class directory was unreadable): undefined keeps the clock as it is.
   */
  observe(
    pvs: readonly V1PersistentVolume[],
    present: (pv: V1PersistentVolume) => boolean | undefined,
    policy: MissingVolumePolicy,
    nowMs: number,
  ): MissingVolumeVerdict {
    const missing: V1PersistentVolume[] = [];
    const deleteNow: V1PersistentVolume[] = [];
    const seen = new Set<string>();
    for (const pv of pvs) {
      const uid = pv.metadata?.uid;
      const phase = pv.status?.phase;
      if (!uid || pv.metadata?.deletionTimestamp || (phase !== 'Available' && phase !== 'Released')) continue;
      seen.add(uid);
      const answer = present(pv);
      if (answer === undefined) continue;
      if (answer) {
        this.since.delete(uid);
        continue;
      }
      const since = this.since.get(uid) ?? nowMs;
      this.since.set(uid, since);
      missing.push(pv);
      const expired = nowMs - since >= policy.gracePeriodMs;
      if (expired && (phase === 'Available' || policy.deleteReleased)) deleteNow.push(pv);
    }
    for (const uid of [...this.since.keys()]) if (!seen.has(uid)) this.since.delete(uid);
    return { missing, deleteNow };
  }
}
