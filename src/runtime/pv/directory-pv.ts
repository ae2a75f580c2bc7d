/**
 * The PV for a directory-dialect volume, field for field as the Go static
 * provisioner writes it, plus our node label.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { ClassConfig, ProvisionerConfig, VolumeMode } from '../../config';
import { formatBinaryQuantity, roundDownCapacity } from '../volume';
import { directoryPVName } from './directory-pv-name';
import { volumeNodeAffinity } from './node-affinity';
import type { NodeInfo } from './node-info';
import { nodeOwnerReference } from './node-owner-reference';
import { provisionerName } from './provisioner-name';
import type { StorageClassFields } from './storage-class-fields';
import { NODE_LABEL, PROVISIONED_BY_ANNOTATION, VOLUME_IDENTITY_ANNOTATION } from '../well-known';
import { preBoundClaimRef } from './pre-bound';

/** A discovered volume as PV building needs it. */
export interface DirectoryVolume {
  readonly className: string;
  /** The entry's base name in the discovery directory; the PV name hashes it. */
  readonly entryName: string;
  /** hostDir/entry: `spec.local.path`. */
  readonly hostPath: string;
  readonly volumeMode: VolumeMode;
  /** Measured size in bytes, before rounding. */
  readonly capacityBytes: number;
}

export interface DirectoryPVInput {
  readonly volume: DirectoryVolume;
  /** What the volume is (volume/identity.ts), recorded so nothing else is ever cleaned in its name. */
  readonly identity: string;
  readonly classConfig: Pick<ClassConfig, 'fsType' | 'accessMode' | 'selector'>;
  readonly config: Pick<ProvisionerConfig, 'nodeLabelsForPV' | 'labelsForPV' | 'useNodeNameOnly' | 'setPVOwnerRef'>;
  readonly node: NodeInfo;
  readonly storageClass: StorageClassFields;
  /** The one claim (`namespace/name`) the PV is bound to in advance, so no other can have it. */
  readonly handTo?: string;
}

/**
 * PV labels: the configured node labels the Node has, then labelsForPV (which
 * win), then our node label (which nothing may override: the node's PV watch
 * depends on it).
 */
export function directoryPVLabels(
  config: Pick<ProvisionerConfig, 'nodeLabelsForPV' | 'labelsForPV'>,
  node: NodeInfo,
): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const key of config.nodeLabelsForPV) {
    const value = node.labels[key];
    if (value !== undefined) labels[key] = value;
  }
  return { ...labels, ...config.labelsForPV, [NODE_LABEL]: node.name };
}

export function buildDirectoryPV(input: DirectoryPVInput): V1PersistentVolume {
  const { volume, classConfig, config, node, storageClass } = input;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: directoryPVName(volume.entryName, node.name, volume.className),
      labels: directoryPVLabels(config, node),
      annotations: {
        [PROVISIONED_BY_ANNOTATION]: provisionerName(node.name, node.uid, config.useNodeNameOnly),
        [VOLUME_IDENTITY_ANNOTATION]: input.identity,
      },
      ...(config.setPVOwnerRef ? { ownerReferences: [nodeOwnerReference(node)] } : {}),
    },
    spec: {
      capacity: { storage: formatBinaryQuantity(roundDownCapacity(volume.capacityBytes)) },
      local: { path: volume.hostPath, ...(classConfig.fsType !== '' ? { fsType: classConfig.fsType } : {}) },
      accessModes: [classConfig.accessMode],
      storageClassName: volume.className,
      persistentVolumeReclaimPolicy: storageClass.reclaimPolicy,
      volumeMode: volume.volumeMode,
      ...(storageClass.mountOptions.length > 0 ? { mountOptions: [...storageClass.mountOptions] } : {}),
      nodeAffinity: volumeNodeAffinity(node, classConfig.selector),
      ...(input.handTo ? { claimRef: preBoundClaimRef(input.handTo) } : {}),
    },
  };
}
