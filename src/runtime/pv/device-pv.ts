/**
 * The PV for a device in the device dialect, as the device-selecting provisioner
 * writes it (its labels, spec annotations and Node ownerReference), with the
 * reclaim policy that really applies and our node label.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { DeviceSpecConfig } from '../../config';
import { formatBinaryQuantity } from '../volume';
import { deviceSpecAnnotations } from './device-spec-annotations';
import { volumeNodeAffinity } from './node-affinity';
import type { NodeInfo } from './node-info';
import { nodeOwnerReference } from './node-owner-reference';
import { preBoundClaimRef } from './pre-bound';
import { DEVICE_DIALECT_NODE_LABELS, NODE_LABEL, PROVISIONED_BY_ANNOTATION, VOLUME_IDENTITY_ANNOTATION } from '../well-known';

export interface DevicePVInput {
  /** From assignDevicePVNames. */
  readonly name: string;
  /** `path`: the device path as walked in deviceDir (`spec.local.path`); `capacityBytes`: its exact size; `identity`: what the disk is. */
  readonly device: { readonly path: string; readonly capacityBytes: number; readonly identity: string };
  readonly spec: DeviceSpecConfig;
  readonly node: NodeInfo;
  /** Written to `pv.kubernetes.io/provisioned-by` when given (upstream writes none). */
  readonly provisionerName?: string;
  /** The one claim (`namespace/name`) the PV is bound to in advance, so no other can have it. */
  readonly handTo?: string;
}

export function buildDevicePV(input: DevicePVInput): V1PersistentVolume {
  const { name, device, spec, node } = input;
  const labels: Record<string, string> = Object.fromEntries(DEVICE_DIALECT_NODE_LABELS.map((key) => [key, node.name]));
  labels[NODE_LABEL] = node.name;
  const annotations = {
    ...deviceSpecAnnotations(spec),
    ...(input.provisionerName ? { [PROVISIONED_BY_ANNOTATION]: input.provisionerName } : {}),
    [VOLUME_IDENTITY_ANNOTATION]: device.identity,
  };
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels, annotations, ownerReferences: [nodeOwnerReference(node, { controller: true })] },
    spec: {
      capacity: { storage: formatBinaryQuantity(device.capacityBytes) },
      local: { path: device.path, ...(spec.volumeMode === 'Filesystem' && spec.fsType !== '' ? { fsType: spec.fsType } : {}) },
      accessModes: ['ReadWriteOnce'],
      storageClassName: spec.storageClassName,
      persistentVolumeReclaimPolicy: spec.reclaimPolicy,
      volumeMode: spec.volumeMode,
      nodeAffinity: volumeNodeAffinity(node),
      ...(input.handTo ? { claimRef: preBoundClaimRef(input.handTo) } : {}),
    },
  };
}
