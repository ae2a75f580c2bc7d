/**
 * The label, annotation and Event names the runtime reads and writes. Users'
 * tooling and the PVs of the systems we replace depend on these exact strings,
 * so every part imports them from here.
 */

/** Upstream annotation naming the provisioner that created a PV. */
export const PROVISIONED_BY_ANNOTATION = 'pv.kubernetes.io/provisioned-by';

/** Ours, shared with the construct (its claim guard matches our PVs by them): defined in the configuration model. */
export { CLEANUP_FINALIZER, NODE_LABEL } from '../config/shared-names';

/** Ours: the stable identity of the disk or filesystem a PV was made for (volume/identity.ts). */
export const VOLUME_IDENTITY_ANNOTATION = 'local.storage.k8s.io/volume-identity';

/** Ours, on a pool volume's PV: the UUID of its btrfs subvolume, by which alone it is ever deleted. */
export const POOL_VOLUME_ANNOTATION = 'local.storage.k8s.io/pool-volume';

/** Set by the PV binder on a volume it bound; it stays when an administrator clears claimRef. */
export const BOUND_BY_CONTROLLER_ANNOTATION = 'pv.kubernetes.io/bound-by-controller';

/** The Node label that the hostname affinity term matches. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** The device-selecting provisioner's node labels on its PVs (current and legacy spelling). */
export const DEVICE_DIALECT_NODE_LABELS = ['local-pv-provisioner.cybozu.io/node', 'local-pv-provisioner.cybozu.com/node'] as const;

/** Prefix of the device dialect's spec annotations (`.../storageClassName` and friends). */
export const DEVICE_SPEC_ANNOTATION_PREFIX = 'local-pv-provisioner.cybozu.io/';

/** Event source component, as upstream's. */
export const EVENT_COMPONENT = 'local-volume-provisioner';
