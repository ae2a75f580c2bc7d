/** Label we set on every PV we create, so that each node can list and watch only its own. */
export const NODE_LABEL = 'local.storage.k8s.io/node';

/** Upstream's annotation naming the provisioner that created a PV. */
export const PROVISIONED_BY_ANNOTATION = 'pv.kubernetes.io/provisioned-by';

/** The device-selecting provisioner's node label on its PVs. */
export const UPSTREAM_DEVICE_NODE_LABEL = 'local-pv-provisioner.cybozu.io/node';

/** Event source component, as upstream's. */
export const EVENT_COMPONENT = 'local-volume-provisioner';
