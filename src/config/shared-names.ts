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

/**
 * Ours, on a claim of a pool class: the node the scheduler put it on, copied from its
 * `volume.kubernetes.io/selected-node` annotation by the construct's claim routing (a
 * MutatingAdmissionPolicy), so that each node's agent lists and watches only its own
 * claims. A node name longer than a label value may be (63) gives POOL_CLAIM_LONG_NODE:
 * those nodes' agents watch that value and keep their own claims by the annotation.
 */
export const POOL_CLAIM_NODE_LABEL = 'local.storage.k8s.io/selected-node';
export const POOL_CLAIM_LONG_NODE = 'long-node-name';

/** The value of POOL_CLAIM_NODE_LABEL a claim put on `nodeName` carries. */
export function poolClaimNodeLabelValue(nodeName: string): string {
  return nodeName.length <= 63 ? nodeName : POOL_CLAIM_LONG_NODE;
}

/** The Lease whose holder labels the claims made before the claim routing was installed (one agent, not every node). */
export const CLAIM_ROUTING_LEASE = 'local-volume-provisioner-claim-routing';
