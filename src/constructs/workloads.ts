import { k8s } from 'cdk8s-plus-28';
import { formatGoDuration } from '../config';
import {
  AGENT_CONTAINER, AGENT_ENV, CONFIG_MOUNT_PATH, CONFIG_VOLUME, DEV_VOLUME, KUBELET_VOLUME, METRICS_PORT_NAME, ResolvedProps, STATE_VOLUME,
} from './resolve';

/**
 * Pod specs of the node agents (one DaemonSet per dialect) and of node cleanup.
 *
 * Written with the low-level `k8s` bindings on purpose: cdk8s-plus-28's defaults are
 * those of an unprivileged web workload (non-root, read-only root filesystem, no
 * ServiceAccount token, `imagePullPolicy: Always`, 1 CPU / 512Mi+ resources, an
 * automatic startupProbe), each wrong for a privileged node agent. Every such field is
 * set here explicitly instead of being left to a default.
 */

export type Component = 'agent' | 'device-agent' | 'node-cleanup';


/** Labels shared by every object of one provisioner instance. */
export function instanceLabels(r: ResolvedProps): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'local-volume-provisioner',
    'app.kubernetes.io/instance': r.name,
    'app.kubernetes.io/managed-by': 'cdk8s',
  };
}

/** Selector labels of one component's pods; stable, because selectors are immutable. */
export function selectorLabels(r: ResolvedProps, component: Component): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'local-volume-provisioner',
    'app.kubernetes.io/instance': r.name,
    'app.kubernetes.io/component': component,
  };
}

/** The directory dialect's DaemonSet: subcommand `run`, one hostPath per class. */
export function directoryAgentSpec(r: ResolvedProps): k8s.DaemonSetSpec {
  const d = r.directory!;
  const rt = r.runtime;
  return agentDaemonSetSpec(r, 'agent', {
    args: [
      'run',
      `--listen-address=:${rt.metricsPort}`,
      '--metrics-path=/metrics',
      `--discovery-period=${formatGoDuration(rt.discoveryPeriodMs)}`,
      `--config-sync-period=${formatGoDuration(rt.configSyncPeriodMs)}`,
      `--config-dir=${CONFIG_MOUNT_PATH}`,
      `--state-dir=${rt.stateDirectory}`,
      ...claimGuardFlag(r),
      // Pool classes are the directory dialect's: only its agent reads claims.
      ...r.claimRouting ? [`--claim-routing=${r.claimRouting.name}`] : [],
      ...rt.projectScanPeriodMs !== undefined ? [`--project-scan-period=${formatGoDuration(rt.projectScanPeriodMs)}`] : [],
      ...rt.kubeletDirectory ? [`--kubelet-dir=${rt.kubeletDirectory}`] : [],
      ...commonFlags(r),
    ],
    env: [{ name: AGENT_ENV.jobImage, value: r.pod.image }],
    volumes: [
      { name: CONFIG_VOLUME, configMap: { name: d.configMapName } },
      ...d.mounts.map((c) => ({ name: c.volume, hostPath: { path: c.hostDir, type: 'DirectoryOrCreate' } })),
      ...rt.kubeletDirectory ? [{ name: KUBELET_VOLUME, hostPath: { path: rt.kubeletDirectory, type: 'Directory' } }] : [],
    ],
    volumeMounts: [
      { name: CONFIG_VOLUME, mountPath: CONFIG_MOUNT_PATH, readOnly: true },
      // HostToContainer: a volume mounted on the host after the pod started is seen inside it.
      ...d.mounts.map((c) => ({ name: c.volume, mountPath: c.mountDir, mountPropagation: 'HostToContainer' })),
      // The node plugin's sockets, and the mounts it makes for pods, which must reach the node: Bidirectional.
      ...rt.kubeletDirectory ? [{ name: KUBELET_VOLUME, mountPath: rt.kubeletDirectory, mountPropagation: 'Bidirectional' }] : [],
    ],
    // Hot reload applies most changes without a restart; rolling the pods also applies
    // changes that need one and makes a bad config fail visibly on the first node.
    podAnnotations: { 'checksum/config': d.configHash },
  });
}

/** The device dialect's DaemonSet: subcommand `devices`, specs read from the API. */
export function deviceAgentSpec(r: ResolvedProps): k8s.DaemonSetSpec {
  const d = r.devices!;
  const rt = r.runtime;
  return agentDaemonSetSpec(r, 'device-agent', {
    args: [
      'devices',
      `--node-name=$(${AGENT_ENV.nodeName})`,
      `--namespace-name=$(${AGENT_ENV.namespace})`,
      `--metrics-addr=:${rt.metricsPort}`,
      '--metrics-path=/metrics',
      `--polling-interval=${formatGoDuration(d.pollingIntervalMs)}`,
      ...(d.defaultSpec ? [`--default-pv-spec-configmap=${d.defaultSpec}`] : []),
      `--state-dir=${rt.stateDirectory}`,
      ...claimGuardFlag(r),
      ...commonFlags(r),
    ],
    env: [],
    // PV paths are device paths as the container sees them, so each deviceDir outside
    // /dev is mounted at its own path. OrCreate: a spec may be for some nodes only, and a
    // missing directory must not keep the agent from starting on the others.
    volumes: d.mounts.map((v) => ({ name: v.volume, hostPath: { path: v.hostDir, type: 'DirectoryOrCreate' } })),
    volumeMounts: d.mounts.map((v) => ({ name: v.volume, mountPath: v.mountDir, mountPropagation: 'HostToContainer' })),
    // The specs are read through the API and watched, so a spec change needs no restart.
    podAnnotations: {},
  });
}

interface AgentParts {
  readonly args: string[];
  readonly env: k8s.EnvVar[];
  readonly volumes: k8s.Volume[];
  readonly volumeMounts: k8s.VolumeMount[];
  readonly podAnnotations: Record<string, string>;
}

function agentDaemonSetSpec(r: ResolvedProps, component: Component, parts: AgentParts): k8s.DaemonSetSpec {
  const p = r.pod;
  const selector = selectorLabels(r, component);
  const devVolume = p.mountDevVolume ? [{ name: DEV_VOLUME, hostPath: { path: '/dev', type: 'Directory' } }] : [];
  const devMount = p.mountDevVolume ? [{ name: DEV_VOLUME, mountPath: '/dev' }] : [];
  // The volume record outlives the pod; both dialects' agents on a node share it (and its lock).
  const stateDir = r.runtime.stateDirectory;
  const stateVolume = { name: STATE_VOLUME, hostPath: { path: stateDir, type: 'DirectoryOrCreate' } };
  const stateMount = { name: STATE_VOLUME, mountPath: stateDir };
  const container: k8s.Container = {
    name: AGENT_CONTAINER,
    image: p.image,
    imagePullPolicy: p.imagePullPolicy,
    args: parts.args,
    env: [...downwardApiEnv(), ...parts.env, ...p.env],
    ports: [{ name: METRICS_PORT_NAME, containerPort: r.runtime.metricsPort, protocol: 'TCP' }],
    livenessProbe: p.livenessProbe ?? httpProbe('/healthz', { initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 }),
    readinessProbe: p.readinessProbe ?? httpProbe('/readyz', { periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 }),
    startupProbe: p.startupProbe,
    resources: p.resources,
    securityContext: p.securityContext,
    volumeMounts: [...parts.volumeMounts, stateMount, ...devMount, ...p.extraVolumeMounts],
  };
  return {
    selector: { matchLabels: selector },
    updateStrategy: p.updateStrategy,
    template: {
      metadata: {
        labels: { ...p.podLabels, ...instanceLabels(r), ...selector },
        annotations: nonEmpty({ ...p.podAnnotations, ...parts.podAnnotations }),
      },
      spec: {
        serviceAccountName: r.serviceAccount.name,
        // The agent talks to the API server; cdk8s-plus would turn the token off.
        automountServiceAccountToken: true,
        priorityClassName: p.priorityClassName,
        hostPid: p.hostPid || undefined,
        nodeSelector: p.nodeSelector,
        tolerations: p.tolerations,
        affinity: p.affinity,
        imagePullSecrets: nonEmpty(p.imagePullSecrets.map((name) => ({ name }))),
        initContainers: nonEmpty(p.initContainers),
        containers: [container],
        volumes: [...parts.volumes, stateVolume, ...devVolume, ...p.extraVolumes],
      },
    },
  };
}

/** The node-cleanup Deployment (leader election on a Lease). */
export function nodeCleanupSpec(r: ResolvedProps): k8s.DeploymentSpec {
  const n = r.nodeCleanup!;
  const selector = selectorLabels(r, 'node-cleanup');
  const container: k8s.Container = {
    name: 'node-cleanup',
    image: r.pod.image,
    imagePullPolicy: r.pod.imagePullPolicy,
    args: [
      'node-cleanup',
      `--listen-address=:${r.runtime.metricsPort}`,
      '--metrics-path=/metrics',
      ...(n.storageClassNames.length > 0 ? [`--storageclass-names=${n.storageClassNames.join(',')}`] : []),
      `--pvc-deletion-delay=${formatGoDuration(n.pvcDeletionDelayMs)}`,
      `--stale-pv-discovery-interval=${formatGoDuration(n.stalePvDiscoveryIntervalMs)}`,
      '--leader-elect=true',
      ...commonFlags(r),
    ],
    env: [
      { name: AGENT_ENV.namespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      // The replica's identity in the Lease.
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ],
    ports: [{ name: METRICS_PORT_NAME, containerPort: r.runtime.metricsPort, protocol: 'TCP' }],
    // Liveness only: a replica that is not the leader is healthy but idle.
    livenessProbe: httpProbe('/healthz', { initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 3 }),
    resources: n.resources,
    // Node cleanup only talks to the API server: no privilege, nothing written to disk.
    securityContext: {
      runAsNonRoot: true,
      runAsUser: 65532,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
  };
  return {
    replicas: n.replicas,
    selector: { matchLabels: selector },
    template: {
      metadata: { labels: { ...instanceLabels(r), ...selector } },
      spec: {
        serviceAccountName: n.serviceAccountName,
        automountServiceAccountToken: true,
        priorityClassName: n.priorityClassName,
        nodeSelector: n.nodeSelector,
        tolerations: nonEmpty(n.tolerations),
        affinity: n.affinity,
        imagePullSecrets: nonEmpty(r.pod.imagePullSecrets.map((name) => ({ name }))),
        containers: [container],
      },
    },
  };
}

/** The claim guard each agent checks is in force. */
function claimGuardFlag(r: ResolvedProps): string[] {
  return r.claimGuard ? [`--claim-guard=${r.claimGuard.name}`] : [];
}

function commonFlags(r: ResolvedProps): string[] {
  return [
    `--kube-api-qps=${r.runtime.kubeApiQps}`,
    `--kube-api-burst=${r.runtime.kubeApiBurst}`,
    `--log-level=${r.runtime.logLevel}`,
  ];
}

function downwardApiEnv(): k8s.EnvVar[] {
  return [
    { name: AGENT_ENV.nodeName, valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    { name: AGENT_ENV.namespace, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ];
}

function httpProbe(path: string, timing: Omit<k8s.Probe, 'httpGet'>): k8s.Probe {
  return { httpGet: { path, port: k8s.IntOrString.fromString(METRICS_PORT_NAME) }, ...timing };
}

function nonEmpty<T>(value: T[]): T[] | undefined;
function nonEmpty(value: Record<string, string>): Record<string, string> | undefined;
function nonEmpty(value: unknown[] | Record<string, string>): unknown {
  return (Array.isArray(value) ? value.length : Object.keys(value).length) > 0 ? value : undefined;
}
