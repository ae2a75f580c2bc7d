/**
 * A claim's data source, read: the VolumeSnapshot (through its content's handle, which
 * names the node and the snapshot's identity) or the claim (through its PV) a pool volume
 * is made from, checked as an external provisioner checks it (external-provisioner's
 * getSnapshotSource and getPVCSource): of this driver, ready, bound to what it names. What
 * is on this node is found by its identity in the node record; what is on another node is
 * named, for the scheduler to be told.
 */
import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { parseSnapshotHandle } from './snapshot-handle';
import { POOL_PROVISIONER } from '../../config';
import type { KubeApi } from '../kube/api-client';
import type { ClaimDataSource, PoolClassConfig, SourceVerdict } from '../pool/pool-decisions';
import { poolVolumeOf } from '../pool/pool-decisions';
import type { PoolRecord } from '../pool/pool-record';
import { parseQuantity } from '../volume';
import { NODE_LABEL } from '../well-known';

export interface ClaimSourceDeps {
  readonly api: KubeApi;
  readonly nodeName: string;
  readonly record: PoolRecord;
  /** This node's PVs, as watched. */
  readonly pvs: () => readonly V1PersistentVolume[];
  readonly pools: () => Readonly<Record<string, PoolClassConfig>>;
}

export function claimSource(deps: ClaimSourceDeps): (claim: V1PersistentVolumeClaim, source: ClaimDataSource) => Promise<SourceVerdict> {
  return (claim, source) => (source.kind === 'VolumeSnapshot' ? fromSnapshot(deps, claim, source.name) : fromClaim(deps, claim, source.name));
}

async function fromSnapshot(deps: ClaimSourceDeps, claim: V1PersistentVolumeClaim, name: string): Promise<SourceVerdict> {
  const namespace = claim.metadata!.namespace!;
  const what = `VolumeSnapshot "${name}"`;
  const snapshot = await deps.api.getVolumeSnapshot(namespace, name);
  if (!snapshot) return { verdict: 'wait', reason: `its data source ${what} does not exist (yet)` };
  if (snapshot.metadata?.deletionTimestamp) return { verdict: 'refuse', reason: `its data source ${what} is being deleted` };
  const contentName = snapshot.status?.boundVolumeSnapshotContentName;
  if (!snapshot.status?.readyToUse || !contentName) return { verdict: 'wait', reason: `its data source ${what} is not ready to use yet` };
  const content = await deps.api.getVolumeSnapshotContent(contentName);
  const ref = content?.spec?.volumeSnapshotRef;
  if (!content || ref?.uid !== snapshot.metadata?.uid || ref?.name !== name || ref?.namespace !== namespace) {
    return { verdict: 'refuse', reason: `the content of its data source ${what}, "${contentName}", is not bound to it` };
  }
  if (content.spec?.driver !== POOL_PROVISIONER) return { verdict: 'refuse', reason: `its data source ${what} is a snapshot of driver "${content.spec?.driver}"` };
  const handle = parseSnapshotHandle(content.status?.snapshotHandle ?? '');
  if (!handle) return { verdict: 'refuse', reason: `its data source ${what} has a handle the agent did not write ("${content.status?.snapshotHandle ?? ''}")` };
  if (handle.node !== deps.nodeName) {
    return { verdict: 'elsewhere', node: handle.node, reason: `its data source ${what} is on node "${handle.node}", and a pool volume is made from it only there` };
  }
  const recorded = deps.record.snapshots().find((s) => s.identity === handle.identity);
  if (!recorded) return { verdict: 'refuse', reason: `its data source ${what} names snapshot ${handle.identity}, which node "${deps.nodeName}" does not hold` };
  const sizeBytes = content.status?.restoreSize ?? parseQuantity(snapshot.status?.restoreSize) ?? 0;
  return { verdict: 'ready', className: recorded.className, from: { snapshot: handle.identity }, sizeBytes, volumeMode: recorded.volumeMode, what };
}

async function fromClaim(deps: ClaimSourceDeps, claim: V1PersistentVolumeClaim, name: string): Promise<SourceVerdict> {
  const namespace = claim.metadata!.namespace!;
  const what = `claim "${name}"`;
  const source = await deps.api.getPersistentVolumeClaim(namespace, name);
  if (!source) return { verdict: 'wait', reason: `its data source ${what} does not exist (yet)` };
  if (source.metadata?.deletionTimestamp) return { verdict: 'refuse', reason: `its data source ${what} is being deleted` };
  const pvName = source.spec?.volumeName;
  if (!pvName || source.status?.phase !== 'Bound') return { verdict: 'wait', reason: `its data source ${what} is not bound yet` };
  const pv = deps.pvs().find((p) => p.metadata?.name === pvName) ?? await deps.api.getPersistentVolume(pvName);
  if (!pv || pv.spec?.claimRef?.uid !== source.metadata?.uid) return { verdict: 'refuse', reason: `its data source ${what} is not bound to PV "${pvName}"` };
  if (pv.spec?.csi?.driver !== POOL_PROVISIONER) return { verdict: 'refuse', reason: `its data source ${what} is not a volume of driver ${POOL_PROVISIONER}` };
  const node = pv.metadata?.labels?.[NODE_LABEL];
  if (node && node !== deps.nodeName) {
    return { verdict: 'elsewhere', node, reason: `its data source ${what} is on node "${node}", and a pool volume is made from it only there` };
  }
  const volume = poolVolumeOf(pv, deps.nodeName, deps.pools());
  if (!volume) return { verdict: 'refuse', reason: `its data source ${what} is not a pool volume of node "${deps.nodeName}"` };
  const sizeBytes = Math.ceil(parseQuantity(pv.spec?.capacity?.storage) ?? 0);
  return {
    verdict: 'ready', className: volume.className, from: { volume: volume.volumeId }, sizeBytes, volumeMode: pv.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem', what,
  };
}
