/**
 * Looking after the PVs of ours that exist, every pass, for both dialects: what
 * is at each PV's path now, whether it is still the volume the PV was made for,
 * and the bookkeeping that keeps the data-safety protocol whole on PVs made
 * before it (by the Go provisioners, or by an older release of ours):
 * - our cleanup finalizer is added to each PV once it is bound (`finalizer` mode),
 *   a moment after the binder binds it and long before a workload can write to it:
 *   from then on a Released PV cannot go before its volume is clean. A PV never
 *   bound holds nothing of anyone and carries none, so the garbage collector (a
 *   Node deleted) and an administrator remove it at once, as upstream;
 * - the identity of the volume is recorded on a PV that lacks one, once, while
 *   the PV is Available or Bound and the volume is at its path (trust on first
 *   sight: a PV already Released keeps none, and is cleaned by its path as upstream
 *   would);
 * - a PV whose path now holds another disk or filesystem than the one recorded is
 *   reported, and counts as missing: it is never cleaned in that disk's name.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { hasCleanupFinalizer, ReclaimMode } from '../cleanup';
import { recordedIdentity } from '../discovery';
import { KubeApi } from '../kube/api-client';
import { addCleanupFinalizer, annotatePersistentVolume } from '../kube/pv-writes';
import type { Change } from '../kube/reflector';
import { Logger, volumeLogger } from '../observability';
import { VOLUME_IDENTITY_ANNOTATION } from '../well-known';

/**
 * Whether a change of one of this node's PVs needs a pass now: a PV gone (its volume
 * may be offered again), Released or being deleted (to be cleaned), or just bound
 * (to be held by our finalizer before a workload writes to it).
 */
export function needsPassNow(change: Change<V1PersistentVolume>): boolean {
  const { type, object, previous } = change;
  if (type === 'delete' || object.status?.phase === 'Released' || object.metadata?.deletionTimestamp) return true;
  return object.status?.phase === 'Bound' && previous?.status?.phase !== 'Bound';
}

/** What is at a PV's path this pass. */
export type VolumeAtPath =
  /** A volume (mount point or block device) is there; `configured` is false when the configuration would not offer it any more. */
  | { readonly state: 'present'; readonly identity: string; readonly configured: boolean }
  /** Nothing usable is there: the path is missing, no longer a mount point, or no block device. */
  | { readonly state: 'gone'; readonly reason: string }
  /** This pass cannot tell (the class is not configured, its directory cannot be read). */
  | { readonly state: 'unknown'; readonly reason: string };

/** What a PV's volume is, against what the PV recorded. */
export type VolumeVerdict =
  | { readonly kind: 'ok'; readonly configured: boolean }
  | { readonly kind: 'missing'; readonly reason: string }
  | { readonly kind: 'identity-mismatch'; readonly recorded: string; readonly current: string }
  | { readonly kind: 'unknown'; readonly reason: string };

export function judgeVolume(pv: V1PersistentVolume, at: VolumeAtPath): VolumeVerdict {
  if (at.state === 'gone') return { kind: 'missing', reason: at.reason };
  if (at.state === 'unknown') return { kind: 'unknown', reason: at.reason };
  const recorded = recordedIdentity(pv);
  if (recorded !== undefined && recorded !== at.identity) return { kind: 'identity-mismatch', recorded, current: at.identity };
  return { kind: 'ok', configured: at.configured };
}

/** The bookkeeping one PV needs, as a pure function of the PV, what is at its path and the mode. */
export function stewardship(pv: V1PersistentVolume, at: VolumeAtPath, mode: ReclaimMode): { addFinalizer: boolean; recordIdentity?: string } {
  if (mode !== 'finalizer' || pv.metadata?.deletionTimestamp) return { addFinalizer: false };
  const phase = pv.status?.phase;
  const firstSight = at.state === 'present' && recordedIdentity(pv) === undefined && (phase === 'Available' || phase === 'Bound');
  return { addFinalizer: phase === 'Bound' && !hasCleanupFinalizer(pv), ...(firstSight ? { recordIdentity: at.identity } : {}) };
}

/**
 * Applies the bookkeeping to each PV (guarded by its resourceVersion: a PV that changed
 * is seen again next pass). Returns how many PVs needed it.
 */
export async function steward(
  api: KubeApi, logger: Logger, pvs: ReadonlyArray<{ pv: V1PersistentVolume; at: VolumeAtPath }>, mode: ReclaimMode,
): Promise<number> {
  let needed = 0;
  await Promise.all(pvs.map(async ({ pv, at }) => {
    const { addFinalizer, recordIdentity } = stewardship(pv, at, mode);
    if (!addFinalizer && recordIdentity === undefined) return;
    needed++;
    const annotations: Record<string, string> = recordIdentity !== undefined ? { [VOLUME_IDENTITY_ANNOTATION]: recordIdentity } : {};
    const log = volumeLogger(logger, { pv: pv.metadata?.name ?? '', path: pv.spec?.local?.path ?? '', storageClass: pv.spec?.storageClassName ?? '' });
    try {
      const result = addFinalizer ? await addCleanupFinalizer(api, pv, annotations) : await annotatePersistentVolume(api, pv, annotations);
      const outcome = typeof result === 'string' ? result : 'done';
      log.info({ outcome, finalizer: addFinalizer, identity: recordIdentity }, 'PV brought under the cleanup protocol');
    } catch (err) {
      log.error({ err: (err as Error).message }, 'cannot add the cleanup finalizer or the volume identity to the PV');
    }
  }));
  return needed;
}
