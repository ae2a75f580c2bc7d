/**
 * The PV of a pool volume, as an external provisioner writes one for the claim it
 * provisioned: bound to the claim in advance (claimRef with its UID, so the binder
 * binds exactly this claim), with the claim's access modes and requested size, and
 * our node label and cleanup finalizer as every PV of ours. A `local` PV, or, where the
 * agent serves kubelet's CSI node plugin, a CSI PV of its driver.
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
  /**
   * A CSI PV of the agent's node plugin (`spec.csi`, its volumeHandle the volume's identity),
   * which kubelet asks the agent to publish; else a `local` PV, which kubelet mounts itself.
   */
  readonly csi?: boolean;
}

export function buildPoolPV(input: PoolPVInput): V1PersistentVolume {
  const { claim, node } = input;
  const fsType = input.fsType && input.volumeMode === 'Filesystem' ? input.fsType : undefined;
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
      ...input.csi
        ? { csi: { driver: POOL_PROVISIONER, volumeHandle: input.volumeId, ...(fsType ? { fsType } : {}) } }
        : { local: { path: input.hostPath, ...(fsType ? { fsType } : {}) } },
      nodeAffinity: volumeNodeAffinity(node, input.selector),
    },
  };
}
