/**
 * Names the construct writes and the runtime reads, which both halves must agree on:
 * defined once here, as the configuration model is.
 */

/** Ours, on every PV we create or adopt: lets each node list and watch only its own PVs. */
export const NODE_LABEL = 'local.storage.k8s.io/node';

/**
 * Ours, on every PV we create (and add to those we manage): a Released PV cannot
 * disappear, nor be bound while it is being deleted, until its volume is clean.
 */
export const CLEANUP_FINALIZER = 'local.storage.k8s.io/cleanup';

/** The Node annotation naming a node's PV spec ConfigMap (the device-selecting provisioner's). */
export const PV_SPEC_CONFIGMAP_ANNOTATION = 'local-pv-provisioner.cybozu.io/pv-spec-configmap';

/** The Lease node-cleanup's replicas elect a leader on (the construct grants get/update on this name only). */
export const NODE_CLEANUP_LEASE = 'local-volume-provisioner-node-cleanup';

/**
 * The provisioner name of pool classes (dynamic provisioning from a node's own storage):
 * the StorageClass's `provisioner`, the claims' storage-provisioner annotation the PV
 * controller sets, the PVs' provisioned-by, and the CSIDriver object whose
 * `storageCapacity: true` makes the scheduler read the agents' CSIStorageCapacity
 * objects. A CSIDriver's name: no "/", at most 63 characters.
 */
export const POOL_PROVISIONER = 'pool.local-volume-provisioner.io';
