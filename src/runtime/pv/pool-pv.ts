/**
 * The PV of a pool volume, as an external provisioner writes one for the claim it
 * provisioned: bound to the claim in advance (claimRef with its UID, so the binder
 * binds exactly this claim), with the claim's access modes and requested size, and
 * our node label and cleanup finalizer as every PV of ours.
 */
import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { volumeNodeAffinity } from './node-affinity';
import type { NodeInfo } from './node-info';
import type { StorageClassFields } from './storage-class-fields';
import { POOL_PROVISIONER } from '../../config';
import type { NodeSelectorTerm, VolumeMode } from '../../config';
import { CLEANUP_FINALIZER, NODE_LABEL, POOL_VOLUME_ANNOTATION, PROVISIONED_BY_ANNOTATION } from '../well-known';

export interface PoolPVInput {
  readonly name: string;
  /** The volume's identity (its subvolume's UUID). */
  readonly volumeId: string;
  readonly claim: V1PersistentVolumeClaim;
  readonly className: string;
  /** The pool volume's path on the host: `spec.local.path`. */
  readonly hostPath: string;
  readonly selector: readonly NodeSelectorTerm[];
  readonly node: NodeInfo;
  readonly storageClass: StorageClassFields;
  readonly volumeMode: VolumeMode;
  /** A device's filesystem, which kubelet mounts (`spec.local.fsType`); none for a directory. */
  readonly fsType?: string;
}

export function buildPoolPV(input: PoolPVInput): V1PersistentVolume {
  const { claim, node } = input;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: input.name,
      labels: { [NODE_LABEL]: node.name },
      annotations: { [PROVISIONED_BY_ANNOTATION]: POOL_PROVISIONER, [POOL_VOLUME_ANNOTATION]: input.volumeId },
      finalizers: [CLEANUP_FINALIZER],
    },
    spec: {
      capacity: { storage: claim.spec!.resources!.requests!.storage },
      accessModes: [...(claim.spec?.accessModes ?? ['ReadWriteOnce'])],
      volumeMode: input.volumeMode,
      storageClassName: input.className,
      persistentVolumeReclaimPolicy: input.storageClass.reclaimPolicy,
      ...(input.storageClass.mountOptions.length > 0 ? { mountOptions: [...input.storageClass.mountOptions] } : {}),
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.metadata!.namespace,
        name: claim.metadata!.name,
        uid: claim.metadata!.uid,
        resourceVersion: claim.metadata!.resourceVersion,
      },
      local: { path: input.hostPath, ...(input.fsType && input.volumeMode === 'Filesystem' ? { fsType: input.fsType } : {}) },
      nodeAffinity: volumeNodeAffinity(node, input.selector),
    },
  };
}
