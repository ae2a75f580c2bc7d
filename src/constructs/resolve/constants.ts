/** The names and paths the construct gives its own objects and the agents, and its defaults that are names. */

/** Where the agent finds its ConfigMap (the runtime's default `--config-dir`). */
export const CONFIG_MOUNT_PATH = '/etc/provisioner/config';
/** Where the image keeps the cleaner scripts. */
export const SCRIPTS_PATH = '/scripts';
/** The agent container (the Helm chart's name) and its one port. */
export const AGENT_CONTAINER = 'provisioner';
export const METRICS_PORT_NAME = 'metrics';
/** The agents' own pod volumes besides those of classes and device directories. */
export const CONFIG_VOLUME = 'config';
export const DEV_VOLUME = 'dev';
export const STATE_VOLUME = 'state';
export const KUBELET_VOLUME = 'kubelet';
/** Environment variables the construct gives the agents (the Helm chart's names). */
export const AGENT_ENV = {
  nodeName: 'MY_NODE_NAME',
  namespace: 'MY_NAMESPACE',
  jobImage: 'JOB_CONTAINER_IMAGE',
  kubeconfig: 'KUBECONFIG',
} as const;

export const DEFAULT_NAME = 'local-volume-provisioner';
/** Namespaces Kubernetes creates itself: never emitted as an object of this construct. */
export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
/** kubelet's default `--root-dir`. */
export const DEFAULT_KUBELET_DIR = '/var/lib/kubelet';
export const DEFAULT_TAINT_KEY = 'sig-storage-local-static-provisioner/agent-not-ready';
export const NO_PROVISIONER = 'kubernetes.io/no-provisioner';
