/**
 * Every default of the construct, applied in this folder, and every prop checked here,
 * before any object is built: one file per part, each resolving its props into its part
 * (storage classes, the two dialects, node cleanup, metrics, the agents' pods, the
 * namespace), this one putting them together. Values of the provisioner's ConfigMaps get
 * their defaults from the configuration model (`resolveProvisionerConfig`,
 * `resolveDeviceSpec`); the construct only adds its own (mountDir = hostDir, the Helm
 * chart's taint key) and maps the model's issues back to prop names.
 */
import { Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS, DEFAULT_STATE_DIR } from '../../config';
import { DEFAULT_IMAGE } from '../image';
import {
  absolutePathProblem, checkLabels, checkPolicyRule, integerProblem, namespaceNameProblem, objectNameProblem, PropIssues, serviceNameProblem,
} from '../prop-issues';
import { ImagePullPolicy, LocalVolumeProvisionerProps, LogLevel } from '../props';
import { ResolvedClaimGuard, resolveClaimGuard } from './claim-guard';
import { ResolvedClaimRouting, resolveClaimRouting } from './claim-routing';
import { DEFAULT_KUBELET_DIR, DEFAULT_NAME, DEFAULT_TAINT_KEY } from './constants';
import { ResolvedDeviceDialect, resolveDeviceDialect } from './device-dialect';
import { ResolvedDirectoryDialect, resolveDirectoryDialect } from './directory-dialect';
import { ResolvedMetrics, resolveMetrics } from './metrics';
import { ConstructContext, resolveCreateNamespace } from './namespace';
import { ResolvedNodeCleanup, resolveNodeCleanup } from './node-cleanup';
import { checkAgentPods, ResolvedPod, resolveAgentEnv, resolveSecurityContext, resolveTolerations } from './pod';
import { checkDefaultStorageClass, ResolvedStorageClass } from './storage-class';
import { intOrString, optionalDuration, optionalDurationInput, quantity } from './values';

export * from './constants';
export type { ResolvedClaimGuard } from './claim-guard';
export type { ResolvedClaimRouting } from './claim-routing';
export type { ResolvedDeviceDialect, ResolvedDeviceSpec } from './device-dialect';
export type { ResolvedDirectoryDialect } from './directory-dialect';
export type { ResolvedGrafanaDashboard, ResolvedMetrics, ResolvedPrometheusRule, ResolvedServiceMonitor } from './metrics';
export type { ConstructContext } from './namespace';
export type { ResolvedNodeCleanup } from './node-cleanup';
export type { ResolvedHostMount, ResolvedPod } from './pod';
export type { ResolvedStorageClass } from './storage-class';
export { hashData } from './values';

export interface ResolvedProps {
  /** What is allowed but likely wrong, each named by its prop; said at synth time. */
  readonly warnings: string[];
  readonly name: string;
  readonly namespace: string;
  readonly createNamespace: boolean;
  readonly directory?: ResolvedDirectoryDialect;
  readonly devices?: ResolvedDeviceDialect;
  readonly storageClasses: ResolvedStorageClass[];
  readonly nodeCleanup?: ResolvedNodeCleanup;
  /** The admission policy that keeps a used volume's PV from being bound again, even while no agent runs. */
  readonly claimGuard?: ResolvedClaimGuard;
  /** The admission policy that labels each pool class's claim with its node, so each agent watches only its own. */
  readonly claimRouting?: ResolvedClaimRouting;
  readonly rbac: ResolvedRbac;
  readonly serviceAccount: ResolvedServiceAccount;
  readonly runtime: ResolvedRuntime;
  readonly pod: ResolvedPod;
  readonly metrics: ResolvedMetrics;
}

/** What the RBAC rules are derived from. */
export interface RbacFeatures {
  readonly directoryDialect: boolean;
  readonly deviceDialect: boolean;
  readonly jobCleaning: boolean;
  readonly removeNodeNotReadyTaint: boolean;
  /** A pool class is configured: claims are watched, capacity published. */
  readonly pools: boolean;
  /** Pool volumes are CSI volumes: the agents take their snapshots (VolumeSnapshotContents) and fill volumes from snapshots. */
  readonly snapshots: boolean;
  /** The claim guard's name, which the agents read to check it is in force. */
  readonly claimGuard?: string;
  /** The claim routing's name, which the agents read to check it is in force. */
  readonly claimRouting?: string;
}

export interface ResolvedRbac {
  readonly create: boolean;
  readonly features: RbacFeatures;
  /** `extraRbacRules`, appended to the agents' ClusterRole. */
  readonly extraRules: k8s.PolicyRule[];
}

export interface ResolvedServiceAccount {
  readonly create: boolean;
  readonly name: string;
}

/** The agents' flags. */
export interface ResolvedRuntime {
  readonly discoveryPeriodMs: number;
  readonly configSyncPeriodMs: number;
  /** Given only when the props set it: the agent's own default otherwise. */
  readonly projectScanPeriodMs?: number;
  readonly kubeApiQps: number;
  readonly kubeApiBurst: number;
  readonly logLevel: string;
  readonly metricsPort: number;
  /** Host directory of the volume record, mounted at the same path. */
  readonly stateDirectory: string;
  /** kubelet's root directory, where the directory agent serves its CSI node plugin; undefined when it serves none. */
  readonly kubeletDirectory?: string;
}

/** Resolves and checks the props; throws one error naming every bad prop. */
export function resolveProps(props: LocalVolumeProvisionerProps, context: ConstructContext): ResolvedProps {
  const issues = new PropIssues();

  const name = props.name ?? DEFAULT_NAME;
  // The base name also names the metrics Service, the strictest of the names built from it.
  issues.check('name', serviceNameProblem(name));
  const namespace = props.namespace ?? context.chartNamespace ?? name;
  issues.check('namespace', namespaceNameProblem(namespace));
  const createNamespace = resolveCreateNamespace(props, context, namespace, issues);

  const tolerations = resolveTolerations(props, issues);
  const { dialect: directory, storageClasses: directoryClasses } = resolveDirectoryDialect(props, name, tolerations, issues);
  const { dialect: devices, storageClasses: deviceClasses } = resolveDeviceDialect(props, issues);
  const classStorage = [...directoryClasses, ...deviceClasses];
  checkDefaultStorageClass(classStorage, issues);
  if ((props.storageClasses ?? []).length === 0 && !props.devices) {
    issues.add('storageClasses', 'no class configured: give at least one storage class or the device dialect (devices)');
  }

  const createServiceAccount = props.createServiceAccount ?? true;
  // The Helm chart's rule: a ServiceAccount it does not create and is not named is `default`.
  const serviceAccountName = props.serviceAccountName ?? (createServiceAccount ? name : 'default');
  issues.check('serviceAccountName', objectNameProblem(serviceAccountName));

  const metricsPort = props.metricsPort ?? 8080;
  issues.check('metricsPort', integerProblem(metricsPort, 1, 65535));
  const kubeApiQps = props.kubeApiQps ?? DEFAULT_KUBE_API_QPS;
  if (!(kubeApiQps > 0)) issues.add('kubeApiQps', `${kubeApiQps} is not a positive number`);
  const kubeApiBurst = props.kubeApiBurst ?? DEFAULT_KUBE_API_BURST;
  issues.check('kubeApiBurst', integerProblem(kubeApiBurst, 1));
  const stateDirectory = props.stateDirectory ?? DEFAULT_STATE_DIR;
  issues.check('stateDirectory', absolutePathProblem(stateDirectory));
  const kubeletDirectory = props.kubeletDirectory ?? DEFAULT_KUBELET_DIR;
  issues.check('kubeletDirectory', absolutePathProblem(kubeletDirectory));

  // None by default, as in the Helm chart: managed clusters limit the system classes by
  // ResourceQuota outside kube-system, and pods of a quota-limited class are refused.
  const priorityClassName = props.priorityClassName;
  if (priorityClassName !== undefined) issues.check('priorityClassName', objectNameProblem(priorityClassName));
  checkLabels(issues, 'podLabels', props.podLabels);
  checkLabels(issues, 'nodeSelector', props.nodeSelector);
  (props.imagePullSecrets ?? []).forEach((s, i) => issues.check(`imagePullSecrets[${i}]`, objectNameProblem(s)));

  const removeTaint = props.removeNodeNotReadyTaint ?? false;
  const taintKey = props.provisionerNotReadyNodeTaintKey ?? DEFAULT_TAINT_KEY;
  (props.extraRbacRules ?? []).forEach((rule, i) => checkPolicyRule(issues, `extraRbacRules[${i}]`, rule));

  const nodeCleanup = props.nodeCleanup && resolveNodeCleanup(props, serviceAccountName, issues, classStorage);
  const metrics = resolveMetrics(props, name, namespace, issues);
  const classes = Object.values(directory?.config.storageClassMap ?? {});
  // Both dialects' DaemonSets run as the one agent ServiceAccount: the only user that may create a PV on a volume of ours.
  const claimGuard = resolveClaimGuard(props, name, classStorage,
    [...classes.map((c) => c.hostDir), ...(devices?.specs ?? []).map((s) => s.config.deviceDir)],
    [`system:serviceaccount:${namespace}:${serviceAccountName}`]);
  const poolClasses = Object.entries(directory?.config.storageClassMap ?? {}).filter(([, c]) => c.pool !== undefined).map(([className]) => className);
  const claimRouting = resolveClaimRouting(props, name, poolClasses);
  // An lvm-thin class runs the host's LVM in PID 1's namespaces and reaches its volumes through the host's /dev.
  if (classes.some((c) => c.pool === 'lvm-thin')) {
    if (props.hostPid === false) issues.add('hostPid', 'must be true with an lvm-thin pool class: the agent runs the host\'s LVM in its namespaces');
    if (props.mountDevVolume === false) issues.add('mountDevVolume', 'must be true with an lvm-thin pool class: its volumes are devices in the host\'s /dev');
  }

  const result: ResolvedProps = {
    warnings: [
      ...props.image === undefined ? [unpublishedImageWarning()] : [],
      ...claimGuard && props.kubeConfigEnv !== undefined ? [kubeconfigClaimGuardWarning(claimGuard)] : [],
    ],
    name,
    namespace,
    createNamespace,
    directory,
    devices,
    storageClasses: classStorage,
    nodeCleanup,
    claimGuard,
    claimRouting,
    rbac: {
      create: props.createRbac ?? true,
      extraRules: props.extraRbacRules ?? [],
      features: {
        directoryDialect: directory !== undefined,
        deviceDialect: devices !== undefined,
        jobCleaning: directory?.config.useJobForCleaning ?? false,
        removeNodeNotReadyTaint: removeTaint,
        pools: classes.some((c) => c.pool !== undefined),
        snapshots: classes.some((c) => c.pool !== undefined) && (props.poolVolumesAsCsi ?? true),
        claimGuard: claimGuard?.name,
        claimRouting: claimRouting?.name,
      },
    },
    serviceAccount: { create: createServiceAccount, name: serviceAccountName },
    runtime: {
      discoveryPeriodMs: optionalDuration(issues, 'discoveryPeriod', props.discoveryPeriod, Duration.seconds(10)),
      configSyncPeriodMs: optionalDuration(issues, 'configSyncPeriod', props.configSyncPeriod, Duration.seconds(5)),
      projectScanPeriodMs: optionalDurationInput(issues, 'projectScanPeriod', props.projectScanPeriod),
      kubeApiQps,
      kubeApiBurst,
      logLevel: props.logLevel ?? LogLevel.INFO,
      metricsPort,
      stateDirectory,
      kubeletDirectory: classes.some((c) => c.pool !== undefined) && (props.poolVolumesAsCsi ?? true) ? kubeletDirectory : undefined,
    },
    pod: {
      image: props.image ?? DEFAULT_IMAGE,
      imagePullPolicy: props.imagePullPolicy ?? ImagePullPolicy.IF_NOT_PRESENT,
      imagePullSecrets: props.imagePullSecrets ?? [],
      resources: props.resources ?? {
        requests: { cpu: quantity('50m'), memory: quantity('192Mi') },
        limits: { memory: quantity('512Mi') },
      },
      securityContext: resolveSecurityContext(props, issues),
      env: resolveAgentEnv(props, issues),
      hostPid: props.hostPid ?? true,
      mountDevVolume: props.mountDevVolume ?? true,
      podAnnotations: props.podAnnotations ?? {},
      podLabels: props.podLabels ?? {},
      priorityClassName,
      nodeSelector: { ...props.nodeSelector, 'kubernetes.io/os': 'linux' },
      tolerations: [
        ...tolerations.given,
        // Without it the agent that is to remove the taint could never start on the node.
        ...(removeTaint ? [{ key: taintKey, operator: 'Exists' }] : []),
      ],
      affinity: props.affinity,
      updateStrategy: props.updateStrategy ?? { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: intOrString(1) } },
      initContainers: props.initContainers ?? [],
      extraVolumes: props.extraVolumes ?? [],
      extraVolumeMounts: props.extraVolumeMounts ?? [],
      livenessProbe: props.livenessProbe,
      readinessProbe: props.readinessProbe,
      startupProbe: props.startupProbe,
    },
    metrics,
  };
  checkAgentPods(props, issues, result);
  issues.throwIfAny();
  return result;
}

/**
 * The claim guard lets only the agents' ServiceAccount create a PV on a volume of ours;
 * an agent that authenticates with a kubeconfig is whoever that kubeconfig names, and
 * would have every PV it makes refused.
 */
function kubeconfigClaimGuardWarning(guard: ResolvedClaimGuard): string {
  return `kubeConfigEnv: the agents then authenticate as the kubeconfig's user, but the claim guard (${guard.name}) lets only `
    + `${guard.agentUsers.join(', ')} create PVs on the provisioner's volumes: unless the kubeconfig holds that ServiceAccount's token, `
    + 'every PV the agents make is refused (leave kubeConfigEnv out, or set claimGuard: false)';
}

/**
 * The default image is built from image/Dockerfile but published nowhere: pods that use
 * it can never start until the user pushes it and names it.
 */
function unpublishedImageWarning(): string {
  return `image: not given, so the pods use ${DEFAULT_IMAGE}, which is not published; `
    + 'build it (image/Dockerfile), push it to a registry your nodes pull from and pass that reference as the image prop '
    + '(pass DEFAULT_IMAGE to keep this name on purpose)';
}
