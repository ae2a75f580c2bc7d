/**
 * What a node's agent does for its pool classes, decided from the claims and PVs
 * it sees; pool-controller.ts acts.
 *
 * A claim is this node's to provision when the scheduler chose this node for it
 * (`volume.kubernetes.io/selected-node`), the PV controller handed it to our
 * provisioner (`volume.kubernetes.io/storage-provisioner`), its class is a pool
 * class here, and it is not bound. Its volume and PV are named `pvc-<claim UID>`,
 * so a provisioning interrupted at any point is finished, not repeated.
 */
import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { ClassConfig, PoolBackend, VolumeMode } from '../../config';
import { DEVICE_POOL_BACKENDS, POOL_PROVISIONER } from '../../config';
import type { ReboundVolume, VolumeRecordEntry } from '../record';
import { parseQuantity } from '../volume';
import { isPoolVolumeName, type VolumeSourceRef } from './backend';
import { CLEANUP_FINALIZER, NODE_LABEL, POOL_VOLUME_ANNOTATION, PROVISIONED_BY_ANNOTATION } from '../well-known';

export type PoolClassConfig = ClassConfig & { readonly pool: PoolBackend };

export const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node';
export const STORAGE_PROVISIONER_ANNOTATION = 'volume.kubernetes.io/storage-provisioner';
/** The spelling older controller managers set; both are read, as external provisioners read them. */
export const BETA_STORAGE_PROVISIONER_ANNOTATION = 'volume.beta.kubernetes.io/storage-provisioner';

/** The pool classes of a configuration. */
export function poolClassesOf(storageClassMap: Readonly<Record<string, ClassConfig>>): Record<string, PoolClassConfig> {
  return Object.fromEntries(Object.entries(storageClassMap).filter((e): e is [string, PoolClassConfig] => e[1].pool !== undefined));
}

/** The classes whose volumes are discovered (every class but the pools). */
export function discoveredClassesOf(storageClassMap: Readonly<Record<string, ClassConfig>>): Record<string, ClassConfig> {
  return Object.fromEntries(Object.entries(storageClassMap).filter(([, c]) => c.pool === undefined));
}

/**
 * Whether a change of this claim may ask something of this node: the scheduler put it
 * here, or it is bound to one of this node's PVs (a resize). A cluster's other claims
 * start no pass.
 */
export function claimConcernsNode(claim: V1PersistentVolumeClaim, nodeName: string, isOurPv: (name: string) => boolean): boolean {
  return claim.metadata?.annotations?.[SELECTED_NODE_ANNOTATION] === nodeName || isOurPv(claim.spec?.volumeName ?? '');
}

/** A pool volume's path on the host: its PV's `spec.local.path`. */
export function poolVolumeHostPath(pool: PoolClassConfig, name: string): string {
  return `${pool.hostDir.replace(/\/$/, '')}/${name}`;
}

export function poolVolumeName(claim: V1PersistentVolumeClaim): string {
  return `pvc-${claim.metadata?.uid ?? ''}`;
}

/** What a claim's volume is filled from: a VolumeSnapshot (a restore) or a claim (a clone) of its namespace, by name. */
export interface ClaimDataSource {
  readonly kind: 'VolumeSnapshot' | 'PersistentVolumeClaim';
  readonly name: string;
}

/** What a claim's data source turned out to be, read from the server and the node record (snapshots/claim-source.ts). */
export type SourceVerdict =
  /** On this node, in the pool of that class: the new volume is made from it. */
  | {
    readonly verdict: 'ready';
    readonly className: string;
    readonly from: VolumeSourceRef;
    /** What the volume made from it must hold at least. */
    readonly sizeBytes: number;
    readonly volumeMode: VolumeMode;
    /** For people: `VolumeSnapshot "x"`, `claim "y"`. */
    readonly what: string;
  }
  /** Not ready yet (a snapshot being taken, a claim not bound): the claim waits, said once. */
  | { readonly verdict: 'wait'; readonly reason: string }
  /** It cannot be used (another driver's, being deleted): said on the claim. */
  | { readonly verdict: 'refuse'; readonly reason: string }
  /** Its data is on another node, where alone the volume can be made. */
  | { readonly verdict: 'elsewhere'; readonly node: string; readonly reason: string };

export type ClaimDecision =
  /** Make its volume and PV. */
  | {
    readonly action: 'provision';
    readonly claim: V1PersistentVolumeClaim;
    readonly className: string;
    readonly sizeBytes: number;
    readonly name: string;
    readonly volumeMode: VolumeMode;
    /** Made holding the data of that source; empty without. */
    readonly source?: ClaimDataSource;
  }
  /** It cannot be provisioned as asked; say why on the claim, once. */
  | { readonly action: 'refuse'; readonly claim: V1PersistentVolumeClaim; readonly reason: string };

/** The claims this node provisions now, and those it must refuse. */
export function decideClaims(claims: readonly V1PersistentVolumeClaim[], pvNames: ReadonlySet<string>, nodeName: string,
  pools: Readonly<Record<string, PoolClassConfig>>): ClaimDecision[] {
  const decisions: ClaimDecision[] = [];
  for (const claim of claims) {
    const annotations = claim.metadata?.annotations ?? {};
    const className = claim.spec?.storageClassName ?? '';
    const provisioner = annotations[STORAGE_PROVISIONER_ANNOTATION] ?? annotations[BETA_STORAGE_PROVISIONER_ANNOTATION];
    if (annotations[SELECTED_NODE_ANNOTATION] !== nodeName || provisioner !== POOL_PROVISIONER) continue;
    if (!Object.prototype.hasOwnProperty.call(pools, className)) continue;
    if (claim.spec?.volumeName || claim.metadata?.deletionTimestamp || (claim.status?.phase ?? 'Pending') !== 'Pending') continue;
    const name = poolVolumeName(claim);
    if (pvNames.has(name)) continue;
    const volumeMode: VolumeMode = claim.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem';
    if (volumeMode === 'Block' && !DEVICE_POOL_BACKENDS.includes(pools[className].pool)) {
      decisions.push({ action: 'refuse', claim, reason: `a ${pools[className].pool} pool class gives Filesystem volumes only; class ${className} cannot give a Block volume` });
      continue;
    }
    const source = dataSourceOf(claim);
    if (typeof source === 'string') {
      decisions.push({ action: 'refuse', claim, reason: source });
      continue;
    }
    const request = claim.spec?.resources?.requests?.storage;
    const sizeBytes = parseQuantity(request);
    if (sizeBytes === undefined || sizeBytes <= 0) {
      decisions.push({ action: 'refuse', claim, reason: `its storage request ${JSON.stringify(request ?? '')} is not a size a pool volume can be limited to` });
      continue;
    }
    decisions.push({ action: 'provision', claim, className, sizeBytes: Math.ceil(sizeBytes), name, volumeMode, ...source ? { source } : {} });
  }
  return decisions;
}

/**
 * The claim's data source (dataSourceRef, else dataSource: the API server keeps the two
 * alike): none, one a pool class fills a volume from, or why it cannot (a string). A
 * source in another namespace is refused: a claim reads only its own namespace's data.
 */
export function dataSourceOf(claim: V1PersistentVolumeClaim): ClaimDataSource | string | undefined {
  const ref = claim.spec?.dataSourceRef ?? claim.spec?.dataSource;
  if (!ref) return undefined;
  const namespace = (ref as { namespace?: string }).namespace;
  if (namespace !== undefined && namespace !== claim.metadata?.namespace) {
    return `its data source is in namespace "${namespace}"; a pool class fills a volume only from a snapshot or claim of the claim's own namespace`;
  }
  if (ref.kind === 'VolumeSnapshot' && ref.apiGroup === 'snapshot.storage.k8s.io') return { kind: 'VolumeSnapshot', name: ref.name };
  if (ref.kind === 'PersistentVolumeClaim' && !ref.apiGroup) return { kind: 'PersistentVolumeClaim', name: ref.name };
  return `its data source is a ${ref.kind} of API group "${ref.apiGroup ?? ''}"; a pool class fills a volume only from a VolumeSnapshot `
    + '(snapshot.storage.k8s.io) or a PersistentVolumeClaim';
}

/**
 * A pool PV of this node: made by a pool class, labelled for this node, its path the
 * volume's in the class's pool, and carrying the volume's identity.
 */
export function poolVolumeOf(pv: V1PersistentVolume, nodeName: string, pools: Readonly<Record<string, PoolClassConfig>>):
{ readonly className: string; readonly pool: PoolClassConfig; readonly name: string; readonly volumeId: string } | undefined {
  const name = pv.metadata?.name ?? '';
  const className = pv.spec?.storageClassName ?? '';
  if (pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] !== POOL_PROVISIONER || pv.metadata?.labels?.[NODE_LABEL] !== nodeName) return undefined;
  if (!Object.prototype.hasOwnProperty.call(pools, className)) return undefined;
  const pool = pools[className];
  const volumeId = pv.metadata?.annotations?.[POOL_VOLUME_ANNOTATION];
  if (!volumeId) return undefined;
  // Its volume where its class makes it: a local PV at its path, a CSI PV of our driver with its identity for handle.
  const csi = pv.spec?.csi;
  const source = csi ? csi.driver === POOL_PROVISIONER && csi.volumeHandle === volumeId : pv.spec?.local?.path === poolVolumeHostPath(pool, name);
  return source ? { className, pool, name, volumeId } : undefined;
}

export type ReleaseAction =
  /**
   * The PV could be bound again and must not be: Released with policy Delete, or
   * Available (an administrator cleared its claimRef; a pool volume is never offered to
   * another claim). It is deleted first, with preconditions, so no claim can bind it;
   * its volume is destroyed or kept by its policy once it is being deleted.
   */
  | 'retire'
  /** The PV is being deleted and its volume may go: destroy it, then let the PV go. */
  | 'destroy-then-let-go'
  /** The PV is being deleted but its policy keeps the data: the volume stays, the PV goes. */
  | 'keep-then-let-go'
  | 'none';

/** What a pool PV's state asks of this node. */
export function decideRelease(pv: V1PersistentVolume): ReleaseAction {
  const policy = pv.spec?.persistentVolumeReclaimPolicy ?? 'Delete';
  if (pv.metadata?.deletionTimestamp) {
    // A bound PV being deleted is still a tenant's: its data stays until the claim lets it go.
    if (!(pv.metadata.finalizers ?? []).includes(CLEANUP_FINALIZER) || pv.status?.phase === 'Bound') return 'none';
    return policy === 'Delete' ? 'destroy-then-let-go' : 'keep-then-let-go';
  }
  const phase = pv.status?.phase;
  return phase === 'Available' || (phase === 'Released' && policy === 'Delete') ? 'retire' : 'none';
}

/** A bound pool volume whose claim asks for more: its new size. */
export interface Expansion {
  readonly pv: V1PersistentVolume;
  readonly claim: V1PersistentVolumeClaim;
  readonly className: string;
  readonly volumeId: string;
  /** What the claim asks now, as written and in bytes. */
  readonly quantity: string;
  readonly bytes: number;
  /** What the PV has. */
  readonly fromBytes: number;
}

/**
 * The resizes this node owes: a bound pool PV of this node whose claim (the very one,
 * by UID) requests more than the PV's capacity. The controller manager leaves a Local
 * PV's resize to an external controller; this is that controller for pool volumes.
 */
export function decideExpansions(
  pvs: readonly V1PersistentVolume[],
  claimOf: (namespace: string, name: string) => V1PersistentVolumeClaim | undefined,
  nodeName: string,
  pools: Readonly<Record<string, PoolClassConfig>>,
): Expansion[] {
  const expansions: Expansion[] = [];
  for (const pv of pvs) {
    const volume = poolVolumeOf(pv, nodeName, pools);
    const ref = pv.spec?.claimRef;
    if (!volume || pv.status?.phase !== 'Bound' || !ref?.namespace || !ref.name) continue;
    const claim = claimOf(ref.namespace, ref.name);
    if (!claim || claim.metadata?.uid !== ref.uid) continue;
    const quantity = claim.spec?.resources?.requests?.storage;
    const bytes = parseQuantity(quantity);
    const fromBytes = parseQuantity(pv.spec?.capacity?.storage) ?? 0;
    if (quantity === undefined || bytes === undefined || bytes <= fromBytes) continue;
    expansions.push({ pv, claim, className: volume.className, volumeId: volume.volumeId, quantity, bytes: Math.ceil(bytes), fromBytes });
  }
  return expansions;
}

/**
 * Volumes in a pool with no PV: named as a pool volume, no PV of that name. Each is a
 * stray only once the server says the claim its record line names is gone
 * (pool-controller.ts): a claim merely missing from a copy of the claims is never taken
 * for gone. A claim deleted after its volume was made and before its PV, or a PV deleted
 * with its finalizer stripped while the agent could not act (its claim gone too),
 * leaves one.
 */
export function volumesWithoutPv(entries: readonly string[], pvNames: ReadonlySet<string>): string[] {
  return entries.filter((name) => isPoolVolumeName(name) && !pvNames.has(name));
}

/**
 * Why a stray volume (its claim gone) is kept, or undefined when it is destroyed:
 * - `retained`: its line says its PV's policy kept the data (Retain);
 * - `pv-gone-unseen`: it has a line, so a PV may have been made for it (the line is
 *   written before the PV), and that PV went without the agent destroying the volume
 *   (it removes the line when it does): deleted with its finalizer stripped while no
 *   agent could act, maybe after a change of policy the record never saw;
 * - `class-keeps`: only the line it was being made under (made, and its claim gone
 *   before its own line and its PV were) and its class does not delete.
 * An administrator's `volumes reclaim` has it destroyed in every case.
 */
export type StrayKeeping = 'retained' | 'pv-gone-unseen' | 'class-keeps';

export function strayKeeping(line: VolumeRecordEntry | undefined, classPolicy: string | undefined): StrayKeeping | undefined {
  if (line) {
    if (line.admin === 'reclaim') return undefined;
    return line.reclaimPolicy === 'Delete' ? 'pv-gone-unseen' : 'retained';
  }
  return classPolicy === 'Delete' ? undefined : 'class-keeps';
}

/**
 * This node's pool PVs bound to a claim other than the one their volume was made for
 * (the UID in its name): its claimRef was cleared or changed while no agent ran, and
 * another claim got the first tenant's data. A pool volume is never offered to another
 * claim, so any other claim is another tenant.
 */
export function reboundPoolVolumes(
  pvs: readonly V1PersistentVolume[], nodeName: string, pools: Readonly<Record<string, PoolClassConfig>>,
): ReboundVolume[] {
  return pvs.flatMap((pv) => {
    const volume = poolVolumeOf(pv, nodeName, pools);
    const madeFor = volume?.name.slice('pvc-'.length);
    const boundTo = pv.spec?.claimRef?.uid;
    return volume && pv.status?.phase === 'Bound' && boundTo && boundTo !== madeFor ? [{ pv, usedBy: { uid: madeFor! } }] : [];
  });
}
