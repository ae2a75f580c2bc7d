/**
 * What a node's pool can still give, as the scheduler reads it: one
 * CSIStorageCapacity object per node and pool class. The scheduler's volume binding
 * filters nodes by these objects once the CSIDriver named like the class's
 * provisioner says `storageCapacity: true` (the construct writes it).
 */
import type { V1CSIStorageCapacity } from '@kubernetes/client-node';
import { fnv1a32, nodeHostname, type NodeInfo } from '../pv';
import { formatBinaryQuantity } from '../volume';
import { HOSTNAME_LABEL, NODE_LABEL } from '../well-known';
import type { PoolVolumeUsage } from './backend';

/** The label naming the pool class of a capacity object, so the agent finds its own. */
export const POOL_CLASS_LABEL = 'local.storage.k8s.io/pool-class';

/**
 * Bytes a new volume may still have: the filesystem's free bytes less what the pool's
 * volumes may still write (each volume's limit less what it holds). A promise is
 * counted until the volume is gone, so two claims are never given the same space; a
 * volume promised more than its limit says (its PV's size, by `promisedOf`: a limit
 * lost while quotas were off, not given back yet) counts for what was promised.
 */
export function availableBytes(freeBytes: number, volumes: ReadonlyMap<string, PoolVolumeUsage>,
  promisedOf: (identity: string) => number | undefined = () => undefined): number {
  let promised = 0;
  for (const [identity, v] of volumes) promised += Math.max(0, Math.max(v.limitBytes ?? 0, promisedOf(identity) ?? 0) - v.usedBytes);
  return Math.max(0, freeBytes - promised);
}

const MiB = 1024 * 1024;

/** Bytes down to whole MiB: what the capacity objects and messages say, so a volume's every write does not change them. */
export function wholeMiB(bytes: number): number {
  return Math.floor(bytes / MiB) * MiB;
}

/** One name per node and class, stable across restarts (a DNS subdomain, whatever the names' length). */
export function storageCapacityName(nodeName: string, className: string): string {
  return `pool-${fnv1a32(`${nodeName}/${className}`).toString(16).padStart(8, '0')}-${fnv1a32(`${className}/${nodeName}`).toString(16).padStart(8, '0')}`;
}

export function buildStorageCapacity(namespace: string, node: NodeInfo, className: string, bytes: number): V1CSIStorageCapacity {
  const quantity = formatBinaryQuantity(bytes);
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIStorageCapacity',
    metadata: {
      name: storageCapacityName(node.name, className),
      namespace,
      labels: { [NODE_LABEL]: node.name, [POOL_CLASS_LABEL]: className },
      // Gone with its Node: the garbage collector deletes it, whatever became of the agent.
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid }],
    },
    storageClassName: className,
    nodeTopology: { matchLabels: { [HOSTNAME_LABEL]: nodeHostname(node) } },
    capacity: quantity,
    maximumVolumeSize: quantity,
  };
}
