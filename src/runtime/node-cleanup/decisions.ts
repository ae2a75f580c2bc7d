/**
 * The node-cleanup controller's decisions, as pure functions: which node a
 * local PV lives on, whether that node is gone, and what may be deleted.
 *
 * Upstream's rules, kept: only PVs and claims of opted-in StorageClasses are
 * ever deleted; a node "exists" when a Node has that name or that
 * `kubernetes.io/hostname` label; a PV without hostname affinity is on an
 * *unknown* node, never a deleted one; a claim is deleted only when the node is
 * still gone, the binding is intact, the UIDs match and its class opted in.
 */
import type { V1Node, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { HOSTNAME_LABEL } from '../well-known';


/**
 * The hostname a local PV is pinned to: within one selector term the hostname
 * values intersect (all must hold), across terms they unite (any may hold).
 * Returns the names, or undefined when the affinity does not pin the PV to
 * hostnames at all (then nothing may be concluded about its node).
 */
export function nodeNamesOfPV(pv: V1PersistentVolume): string[] | undefined {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  const union = new Set<string>();
  let pinned = false;
  for (const term of terms) {
    let within: Set<string> | undefined;
    for (const req of term.matchExpressions ?? []) {
      if (req.key !== HOSTNAME_LABEL || req.operator !== 'In') continue;
      const values = new Set(req.values ?? []);
      within = within ? new Set([...within].filter((v) => values.has(v))) : values;
    }
    if (within === undefined) continue;
    pinned = true;
    for (const v of within) union.add(v);
  }
  return pinned ? [...union].sort() : undefined;
}

/** True when no Node has this name or this hostname label. */
export function isNodeGone(name: string, nodes: readonly V1Node[]): boolean {
  return !nodes.some((n) => n.metadata?.name === name || n.metadata?.labels?.[HOSTNAME_LABEL] === name);
}

/** True when every node the PV may live on is gone (and it names at least one). */
export function isPVOfGoneNode(pv: V1PersistentVolume, nodes: readonly V1Node[]): boolean {
  const names = nodeNamesOfPV(pv);
  return names !== undefined && names.length > 0 && names.every((n) => isNodeGone(n, nodes));
}

export type PVAction = { readonly delete: true } | { readonly delete: false; readonly reason: string };

/**
 * A local PV of a gone node is deleted, as upstream's deleter does, only when its
 * StorageClass opted in (`--storageclass-names`; hand-made local PVs of other
 * classes are never touched) and nothing can still need it: Available, or
 * Released with reclaim policy Delete (its data went with the node).
 */
export function decidePVOfGoneNode(pv: V1PersistentVolume, nodes: readonly V1Node[], storageClassNames: readonly string[]): PVAction {
  if (!pv.spec?.local) return { delete: false, reason: 'not a local PV' };
  const className = pv.spec.storageClassName ?? '';
  if (!storageClassNames.includes(className)) return { delete: false, reason: `StorageClass ${JSON.stringify(className)} has not opted in` };
  if (pv.metadata?.deletionTimestamp) return { delete: false, reason: 'already being deleted' };
  if (!isPVOfGoneNode(pv, nodes)) return { delete: false, reason: 'its node exists or is unknown' };
  const phase = pv.status?.phase;
  const policy = pv.spec.persistentVolumeReclaimPolicy;
  if (phase === 'Available') return { delete: true };
  if (phase === 'Released' && policy === 'Delete') return { delete: true };
  return { delete: false, reason: `phase ${phase ?? 'unknown'} with reclaim policy ${policy ?? 'unset'} may still hold wanted data` };
}

export interface ClaimDecisionInput {
  readonly pvc: V1PersistentVolumeClaim;
  /** The PV the claim is bound to, freshly read. */
  readonly pv: V1PersistentVolume | undefined;
  readonly nodes: readonly V1Node[];
  /** StorageClasses whose claims may be deleted (opt-in). */
  readonly storageClassNames: readonly string[];
  /** When the node was first seen gone (ms since epoch), if it was. */
  readonly goneSinceMs: number | undefined;
  readonly nowMs: number;
  readonly deletionDelayMs: number;
}

/**
 * A claim bound to a local PV of a gone node is deleted, so its workload can be
 * rescheduled with a new volume, only when all of upstream's conditions hold.
 */
export function decideClaimOfGoneNode(input: ClaimDecisionInput): PVAction {
  const { pvc, pv } = input;
  const className = pvc.spec?.storageClassName ?? '';
  if (!input.storageClassNames.includes(className)) return { delete: false, reason: `StorageClass ${JSON.stringify(className)} has not opted in` };
  if (pvc.metadata?.deletionTimestamp) return { delete: false, reason: 'already being deleted' };
  if (!pv) return { delete: false, reason: 'its PV is gone' };
  if (!pv.spec?.local) return { delete: false, reason: 'its PV is not local' };
  const bound = pvc.spec?.volumeName === pv.metadata?.name && pv.spec.claimRef?.uid === pvc.metadata?.uid;
  if (!bound) return { delete: false, reason: 'the binding between claim and PV is not intact' };
  if (!isPVOfGoneNode(pv, input.nodes)) return { delete: false, reason: 'its node exists or is unknown' };
  if (input.goneSinceMs === undefined || input.nowMs - input.goneSinceMs < input.deletionDelayMs) {
    return { delete: false, reason: 'the node has not been gone for the deletion delay yet' };
  }
  return { delete: true };
}
