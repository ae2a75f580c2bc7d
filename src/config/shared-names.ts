/**
 * Names the construct writes and the runtime reads, which both halves must agree on:
 * defined once here, as the configuration model is.
 */

/** The Node annotation naming a node's PV spec ConfigMap (the device-selecting provisioner's). */
export const PV_SPEC_CONFIGMAP_ANNOTATION = 'local-pv-provisioner.cybozu.io/pv-spec-configmap';

/** The Lease node-cleanup's replicas elect a leader on (the construct grants get/update on this name only). */
export const NODE_CLEANUP_LEASE = 'local-volume-provisioner-node-cleanup';
