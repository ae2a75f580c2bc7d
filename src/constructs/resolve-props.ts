import { createHash } from 'node:crypto';
import { Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import {
  compileRe2, ConfigIssue, ConfigMapData, DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS, DEFAULT_STATE_DIR,
  DeviceSpecConfig, NodeSelectorTerm, ParseResult, ProvisionerConfig, ProvisionerConfigInput, ReclaimPolicy, Toleration,
  resolveDeviceSpec, resolveProvisionerConfig, serializeDeviceSpec, serializeProvisionerConfig,
} from '../config';
import { DEFAULT_IMAGE } from './image';
import { checkEnv, checkProbe, checkUnique, checkVolume, checkVolumeMounts, fromProp, imageProblem, Origin } from './pod-spec-rules';
import {
  absolutePathProblem, checkLabels, checkPolicyRule, checkTolerations, dnsLabelProblem, durationMs, integerProblem,
  namespaceNameProblem, objectNameProblem, pathsOverlap, PropIssues, serviceNameProblem,
} from './prop-issues';
import {
  GrafanaDashboardOptions, LocalStorageClassProps, LocalVolumeProvisionerProps, NamespaceSelector, PrometheusRuleOptions,
  RelabelConfig, StorageClassOptions,
} from './props';
import { qualifiedNameProblem } from '../config/kube-names';

/**
 * Every default of the construct, applied in this one place, and every prop checked
 * here, before any object is built. Values of the provisioner's ConfigMaps get their
 * defaults from the configuration model (`resolveProvisionerConfig`,
 * `resolveDeviceSpec`); the construct only adds its own (mountDir = hostDir, the
 * Helm chart's taint key) and maps the model's issues back to prop names.
 */

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
/** Environment variables the construct gives the agents (the Helm chart's names). */
export const AGENT_ENV = {
  nodeName: 'MY_NODE_NAME',
  namespace: 'MY_NAMESPACE',
  jobImage: 'JOB_CONTAINER_IMAGE',
  kubeconfig: 'KUBECONFIG',
} as const;

const DEFAULT_NAME = 'local-volume-provisioner';
/** Namespaces Kubernetes creates itself: never emitted as an object of this construct. */
const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];
const DEFAULT_TAINT_KEY = 'sig-storage-local-static-provisioner/agent-not-ready';
const NO_PROVISIONER = 'kubernetes.io/no-provisioner';

export interface ResolvedStorageClass {
  readonly name: string;
  readonly create: boolean;
  readonly reclaimPolicy: ReclaimPolicy;
  readonly isDefaultClass: boolean;
  readonly provisioner: string;
  readonly allowedTopologies: k8s.TopologySelectorTerm[];
  readonly mountOptions: string[];
}

/** A pod volume (hostPath) of the agent mounted at a path, and the prop that put it there. */
export interface ResolvedHostMount {
  readonly volume: string;
  readonly hostDir: string;
  readonly mountDir: string;
  /** The props problems with the volume's name and with the mount path are reported under. */
  readonly volumeProp: string;
  readonly pathProp: string;
}

export interface ResolvedDirectoryDialect {
  readonly config: ProvisionerConfig;
  readonly configMapName: string;
  readonly configData: ConfigMapData;
  /** sha256 of the ConfigMap data: a pod annotation, so a config change rolls the pods. */
  readonly configHash: string;
  /** One hostDir mount per class. */
  readonly mounts: ResolvedHostMount[];
  /** StorageClass name -> fewest volumes per node (alerting). */
  readonly expectedVolumesPerNode: Record<string, number>;
}

export interface ResolvedDeviceSpec {
  readonly name: string;
  readonly config: DeviceSpecConfig;
  readonly data: ConfigMapData;
}

export interface ResolvedDeviceDialect {
  readonly specs: ResolvedDeviceSpec[];
  readonly defaultSpec?: string;
  readonly pollingIntervalMs: number;
  /** deviceDirs outside the /dev mount, mounted at the same path (PV paths are container paths). */
  readonly mounts: ResolvedHostMount[];
}

export interface ResolvedNodeCleanup {
  readonly storageClassNames: string[];
  readonly pvcDeletionDelayMs: number;
  readonly stalePvDiscoveryIntervalMs: number;
  readonly replicas: number;
  readonly resources: k8s.ResourceRequirements;
  readonly nodeSelector: Record<string, string>;
  readonly tolerations: k8s.Toleration[];
  readonly affinity?: k8s.Affinity;
  readonly priorityClassName?: string;
  readonly serviceAccountName: string;
}

export interface ResolvedServiceMonitor {
  readonly namespace: string;
  readonly labels: Record<string, string>;
  readonly intervalMs: number;
  readonly scrapeTimeoutMs?: number;
  readonly relabelings: RelabelConfig[];
  readonly metricRelabelings: RelabelConfig[];
  readonly namespaceSelector: NamespaceSelector;
  readonly jobLabel?: string;
}

export interface ResolvedPrometheusRule {
  readonly namespace: string;
  readonly labels: Record<string, string>;
  readonly alertLabels: Record<string, string>;
  readonly runbookBaseUrl?: string;
}

export interface ResolvedGrafanaDashboard {
  readonly namespace: string;
  readonly labels: Record<string, string>;
  readonly folder?: string;
}

/** What the RBAC rules are derived from. */
export interface RbacFeatures {
  readonly directoryDialect: boolean;
  readonly deviceDialect: boolean;
  readonly jobCleaning: boolean;
  readonly removeNodeNotReadyTaint: boolean;
}

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
  readonly rbac: ResolvedRbac;
  readonly serviceAccount: ResolvedServiceAccount;
  readonly runtime: ResolvedRuntime;
  readonly pod: ResolvedPod;
  readonly metrics: ResolvedMetrics;
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
  readonly kubeApiQps: number;
  readonly kubeApiBurst: number;
  readonly logLevel: string;
  readonly metricsPort: number;
  /** Host directory of the volume record, mounted at the same path. */
  readonly stateDirectory: string;
}

/** The agents' pod and container settings. */
export interface ResolvedPod {
  readonly image: string;
  readonly imagePullPolicy: string;
  readonly imagePullSecrets: string[];
  readonly resources: k8s.ResourceRequirements;
  readonly securityContext: k8s.SecurityContext;
  /** The agents' env after the construct's own (KUBECONFIG from kubeConfigEnv, then `env`). */
  readonly env: k8s.EnvVar[];
  readonly hostPid: boolean;
  readonly mountDevVolume: boolean;
  readonly podAnnotations: Record<string, string>;
  readonly podLabels: Record<string, string>;
  readonly priorityClassName?: string;
  readonly nodeSelector: Record<string, string>;
  readonly tolerations: k8s.Toleration[];
  readonly affinity?: k8s.Affinity;
  readonly updateStrategy: k8s.DaemonSetUpdateStrategy;
  readonly initContainers: k8s.Container[];
  readonly extraVolumes: k8s.Volume[];
  readonly extraVolumeMounts: k8s.VolumeMount[];
  readonly livenessProbe?: k8s.Probe;
  readonly readinessProbe?: k8s.Probe;
  readonly startupProbe?: k8s.Probe;
}

export interface ResolvedMetrics {
  readonly service: boolean;
  readonly serviceName: string;
  readonly serviceMonitor?: ResolvedServiceMonitor;
  readonly prometheusRule?: ResolvedPrometheusRule;
  readonly grafanaDashboard?: ResolvedGrafanaDashboard;
}

/** What resolving the props needs to know about where the construct sits. */
export interface ConstructContext {
  /** The namespace of the enclosing chart, if it has one. */
  readonly chartNamespace?: string;
  /** Namespaces other provisioners of the same app already create, each with that construct's path. */
  readonly namespacesCreatedElsewhere: ReadonlyMap<string, string>;
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
  const classStorage: ResolvedStorageClass[] = [];
  const directory = resolveDirectoryDialect(props, name, issues, classStorage, tolerations);
  const devices = resolveDeviceDialect(props, issues, classStorage);
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

  const result: ResolvedProps = {
    warnings: props.image === undefined ? [unpublishedImageWarning()] : [],
    name,
    namespace,
    createNamespace,
    directory,
    devices,
    storageClasses: classStorage,
    nodeCleanup,
    rbac: {
      create: props.createRbac ?? true,
      extraRules: props.extraRbacRules ?? [],
      features: {
        directoryDialect: directory !== undefined,
        deviceDialect: devices !== undefined,
        jobCleaning: directory?.config.useJobForCleaning ?? false,
        removeNodeNotReadyTaint: removeTaint,
      },
    },
    serviceAccount: { create: createServiceAccount, name: serviceAccountName },
    runtime: {
      discoveryPeriodMs: optionalDuration(issues, 'discoveryPeriod', props.discoveryPeriod, Duration.seconds(10)),
      configSyncPeriodMs: optionalDuration(issues, 'configSyncPeriod', props.configSyncPeriod, Duration.seconds(5)),
      kubeApiQps,
      kubeApiBurst,
      logLevel: props.logLevel ?? 'info',
      metricsPort,
      stateDirectory,
    },
    pod: {
      image: props.image ?? DEFAULT_IMAGE,
      imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
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
 * The default image is built from image/Dockerfile but published nowhere: pods that use
 * it can never start until the user pushes it and names it.
 */
function unpublishedImageWarning(): string {
  return `image: not given, so the pods use ${DEFAULT_IMAGE}, which is not published; `
    + 'build it (image/Dockerfile), push it to a registry your nodes pull from and pass that reference as the image prop '
    + '(pass DEFAULT_IMAGE to keep this name on purpose)';
}

/**
 * The Namespace is the instance's own only when the construct chose it (named after the
 * instance): one named by `namespace` or the chart may hold other workloads, and emitting
 * it would relabel it and let `kubectl delete -f` delete it with everything in it.
 */
function resolveCreateNamespace(props: LocalVolumeProvisionerProps, context: ConstructContext, namespace: string, issues: PropIssues): boolean {
  const create = props.createNamespace ?? (props.namespace === undefined && context.chartNamespace === undefined);
  if (!create) return false;
  if (SYSTEM_NAMESPACES.includes(namespace)) {
    issues.add('createNamespace', `"${namespace}" is created by Kubernetes; the construct never emits it (set createNamespace: false)`);
  }
  const other = context.namespacesCreatedElsewhere.get(namespace);
  if (other !== undefined) {
    issues.add('createNamespace', `the Namespace "${namespace}" is already created by the LocalVolumeProvisioner ${other}; `
      + 'set createNamespace: false here, or give each instance a namespace of its own');
  }
  return true;
}

/** The agents' own tolerations, checked; `valid` when cleanup Jobs may copy them. */
interface AgentTolerations {
  readonly given: k8s.Toleration[];
  readonly valid: boolean;
}

function resolveTolerations(props: LocalVolumeProvisionerProps, issues: PropIssues): AgentTolerations {
  // Node storage agents tolerate every taint by default: disks are often on dedicated, tainted nodes.
  const given = props.tolerations ?? [{ operator: 'Exists' }];
  return { given, valid: checkTolerations(issues, 'tolerations', given) };
}

/** The Helm chart's rule: a securityContext given is written as given, `privileged` added when it has none. */
function resolveSecurityContext(props: LocalVolumeProvisionerProps, issues: PropIssues): k8s.SecurityContext {
  const privileged = props.privileged ?? true;
  const given = props.securityContext;
  if (!given || Object.keys(given).length === 0) {
    // Opening, wiping and probing block devices needs privilege (and root: device nodes
    // are root's); the root filesystem stays writable for the cleaners' tools.
    return { privileged, runAsUser: 0, runAsNonRoot: false, readOnlyRootFilesystem: false };
  }
  if (props.privileged !== undefined && given.privileged !== undefined && given.privileged !== props.privileged) {
    issues.add('securityContext.privileged', `${given.privileged} contradicts privileged: ${props.privileged}; set only one of them`);
  }
  const effective = { ...given, privileged: given.privileged ?? privileged };
  if (effective.privileged && effective.allowPrivilegeEscalation === false) {
    issues.add('securityContext.allowPrivilegeEscalation', 'cannot be false in a privileged container (the API server rejects the pair)');
  }
  return effective;
}

/** KUBECONFIG (Helm `kubeConfigEnv`) after the construct's own variables, then the user's `env`. */
function resolveAgentEnv(props: LocalVolumeProvisionerProps, issues: PropIssues): k8s.EnvVar[] {
  const kubeconfig: k8s.EnvVar[] = props.kubeConfigEnv === undefined ? [] : [{ name: AGENT_ENV.kubeconfig, value: props.kubeConfigEnv }];
  if (props.kubeConfigEnv === '') issues.add('kubeConfigEnv', 'must not be empty: give the kubeconfig path, or leave it out for the ServiceAccount');
  const taken = new Map<string, string>([
    [AGENT_ENV.nodeName, 'the construct (the node name)'],
    [AGENT_ENV.namespace, 'the construct (the namespace)'],
    [AGENT_ENV.jobImage, 'the construct (the image prop)'],
    ...kubeconfig.map((e) => [e.name, 'kubeConfigEnv'] as [string, string]),
  ]);
  (props.env ?? []).forEach((e, i) => {
    const owner = taken.get(e.name);
    if (owner !== undefined) issues.add(`env[${i}].name`, `"${e.name}" is already set by ${owner}`);
    else taken.set(e.name, `env[${i}]`);
  });
  return [...kubeconfig, ...(props.env ?? [])];
}

function resolveDirectoryDialect(
  props: LocalVolumeProvisionerProps, name: string, issues: PropIssues, storageClasses: ResolvedStorageClass[], tolerations: AgentTolerations,
): ResolvedDirectoryDialect | undefined {
  const classes = props.storageClasses ?? [];
  if (classes.length === 0) return undefined;

  const seen = new Map<string, number>();
  const mounts: ResolvedHostMount[] = [];
  const expectedVolumesPerNode: Record<string, number> = {};
  classes.forEach((c, i) => {
    const at = `storageClasses[${i}]`;
    const first = seen.get(c.name);
    if (first !== undefined) issues.add(`${at}.name`, `"${c.name}" is also the name of storageClasses[${first}]`);
    else seen.set(c.name, i);
    const mountDir = c.mountDir ?? c.hostDir;
    const hostOk = issues.check(`${at}.hostDir`, absolutePathProblem(c.hostDir));
    // A mountDir left to default is the hostDir: its problems are the hostDir's, reported once.
    const mountOk = c.mountDir === undefined ? hostOk : issues.check(`${at}.mountDir`, absolutePathProblem(mountDir));
    if (mountOk) {
      for (const reserved of [CONFIG_MOUNT_PATH, SCRIPTS_PATH]) {
        if (pathsOverlap(mountDir, reserved)) issues.add(`${at}.mountDir`, `"${mountDir}" overlaps ${reserved}, which the agent needs`);
      }
    }
    if (hostOk && mountOk) {
      mounts.forEach((other, j) => {
        if (pathsOverlap(other.mountDir, mountDir)) {
          issues.add(`${at}.mountDir`, `"${mountDir}" overlaps the mountDir "${other.mountDir}" of storageClasses[${j}]; each class needs a directory of its own`);
        } else if (pathsOverlap(other.hostDir, c.hostDir)) {
          issues.add(`${at}.hostDir`, `"${c.hostDir}" overlaps the hostDir "${other.hostDir}" of storageClasses[${j}]; each class needs a directory of its own`);
        }
      });
    }
    mounts.push({
      volume: volumeName('class', c.name), hostDir: c.hostDir, mountDir, volumeProp: `${at}.name`, pathProp: `${at}.${c.mountDir === undefined ? 'hostDir' : 'mountDir'}`,
    });
    const expected = c.expectedVolumesPerNode ?? 0;
    issues.check(`${at}.expectedVolumesPerNode`, integerProblem(expected, 0));
    if (expected > 0) expectedVolumesPerNode[c.name] = expected;
    storageClasses.push(resolveStorageClass(c.name, c.storageClass, c.storageClass?.reclaimPolicy ?? 'Delete', `${at}.storageClass`, issues));
  });

  // The props use the Kubernetes types, whose operators are free strings; the model
  // checks every value at run time whatever its static type, so they are passed as its own.
  const input: ProvisionerConfigInput = {
    storageClassMap: Object.fromEntries(classes.map((c) => [c.name, {
      hostDir: c.hostDir,
      mountDir: c.mountDir ?? c.hostDir,
      blockCleanerCommand: c.blockCleanerCommand,
      volumeMode: c.volumeMode,
      accessMode: c.accessMode,
      fsType: c.fsType,
      namePattern: c.namePattern,
      selector: c.selector as NodeSelectorTerm[] | undefined,
    }])),
    nodeLabelsForPV: props.nodeLabelsForPV,
    labelsForPV: props.labelsForPV,
    useJobForCleaning: props.useJobForCleaning,
    // A cleanup Job runs on the volume's node: as the Helm chart, it tolerates what the agent
    // tolerates there (not the startup taint, which is gone once volumes are in use).
    jobTolerations: (props.jobTolerations
      ?? (props.useJobForCleaning && tolerations.valid ? tolerations.given : undefined)) as Toleration[] | undefined,
    minResyncPeriod: optionalDurationInput(issues, 'minResyncPeriod', props.minResyncPeriod),
    useNodeNameOnly: props.useNodeNameOnly,
    setPVOwnerRef: props.setPVOwnerRef,
    removeNodeNotReadyTaint: props.removeNodeNotReadyTaint,
    provisionerNotReadyNodeTaintKey: props.provisionerNotReadyNodeTaintKey ?? DEFAULT_TAINT_KEY,
    cleanupTimeout: optionalDurationInput(issues, 'cleanupTimeout', props.cleanupTimeout, 0),
    cleanupStallTimeout: optionalDurationInput(issues, 'cleanupStallTimeout', props.cleanupStallTimeout, 0),
    maxConcurrentCleanups: props.maxConcurrentCleanups,
    missingVolumeGracePeriod: optionalDurationInput(issues, 'missingVolumeGracePeriod', props.missingVolumeGracePeriod, 0),
    deleteMissingReleasedVolumes: props.deleteMissingReleasedVolumes,
  };
  const config = reportModelIssues(resolveProvisionerConfig(input), issues, (path) => directoryPropPath(path, classes));
  if (!config) return undefined;
  const configData = serializeProvisionerConfig(config);
  return {
    config,
    configMapName: `${name}-config`,
    configData,
    configHash: hashData(configData),
    mounts,
    expectedVolumesPerNode,
  };
}

function resolveDeviceDialect(
  props: LocalVolumeProvisionerProps, issues: PropIssues, storageClasses: ResolvedStorageClass[],
): ResolvedDeviceDialect | undefined {
  const d = props.devices;
  if (!d) return undefined;
  if (d.specs.length === 0) issues.add('devices.specs', 'must name at least one PV spec ConfigMap');

  const specs: ResolvedDeviceSpec[] = [];
  const seen = new Map<string, number>();
  const policyOfClass = new Map<string, { policy: ReclaimPolicy; at: string }>();
  const directoryClasses = (props.storageClasses ?? []).map((c) => c.name);
  d.specs.forEach((s, i) => {
    const at = `devices.specs[${i}]`;
    const first = seen.get(s.name);
    if (first !== undefined) issues.add(`${at}.name`, `"${s.name}" is also the name of devices.specs[${first}]`);
    else seen.set(s.name, i);
    issues.check(`${at}.name`, objectNameProblem(s.name));
    issues.check(`${at}.deviceDir`, absolutePathProblem(s.deviceDir));
    if (s.volumeMode === 'Block' && s.fsType) issues.add(`${at}.fsType`, `"${s.fsType}" is not allowed with volumeMode Block`);
    const config = reportModelIssues(resolveDeviceSpec({
      storageClassName: s.storageClassName,
      volumeMode: s.volumeMode,
      fsType: s.fsType,
      deviceDir: s.deviceDir,
      deviceNameFilter: s.deviceNameFilter,
      reclaimPolicy: s.reclaimPolicy,
      wipeDevicesHoldingData: s.wipeDevicesHoldingData,
      wipe: s.wipe,
    }), issues, (path) => `${at}.${path}`);
    if (!config) return;
    specs.push({ name: s.name, config, data: serializeDeviceSpec(config) });
    const directoryClass = directoryClasses.indexOf(config.storageClassName);
    if (directoryClass >= 0) {
      issues.add(`${at}.storageClassName`, `"${config.storageClassName}" is also the name of storageClasses[${directoryClass}]; a StorageClass serves one dialect`);
    }
    const earlier = policyOfClass.get(config.storageClassName);
    if (earlier && earlier.policy !== config.reclaimPolicy) {
      issues.add(`${at}.reclaimPolicy`, `"${config.reclaimPolicy}" differs from ${earlier.at}.reclaimPolicy "${earlier.policy}" for the same StorageClass "${config.storageClassName}"`);
    } else if (!earlier) {
      policyOfClass.set(config.storageClassName, { policy: config.reclaimPolicy, at });
    }
  });
  if (d.defaultSpec !== undefined && !seen.has(d.defaultSpec)) {
    issues.add('devices.defaultSpec', `"${d.defaultSpec}" is not the name of any of devices.specs`);
  }

  const options = new Map<string, number>();
  (d.storageClasses ?? []).forEach((sc, i) => {
    if (!policyOfClass.has(sc.name)) {
      issues.add(`devices.storageClasses[${i}].name`, `"${sc.name}" is not the storageClassName of any of devices.specs`);
    }
    if (options.has(sc.name)) issues.add(`devices.storageClasses[${i}].name`, `"${sc.name}" is given twice`);
    options.set(sc.name, i);
  });
  for (const [className, { policy }] of policyOfClass) {
    const i = options.get(className);
    const at = i === undefined ? 'devices.specs' : `devices.storageClasses[${i}]`;
    storageClasses.push(resolveStorageClass(className, i === undefined ? undefined : d.storageClasses![i], policy, at, issues));
  }

  const firstSpecOfDir = new Map<string, number>();
  d.specs.forEach((s, i) => {
    if (!firstSpecOfDir.has(s.deviceDir)) firstSpecOfDir.set(s.deviceDir, i);
  });
  const mounts = [...new Set(specs.map((s) => s.config.deviceDir))]
    .filter((dir) => !(props.mountDevVolume ?? true) || !pathsOverlap(dir, '/dev'))
    .sort()
    .map((dir) => {
      const prop = `devices.specs[${firstSpecOfDir.get(dir)}].deviceDir`;
      return { volume: volumeName('devices', dir), hostDir: dir, mountDir: dir, volumeProp: prop, pathProp: prop };
    });
  return {
    specs,
    defaultSpec: d.defaultSpec,
    pollingIntervalMs: optionalDuration(issues, 'devices.pollingInterval', d.pollingInterval, Duration.minutes(5)),
    mounts,
  };
}

function resolveStorageClass(
  name: string, o: StorageClassOptions | undefined, reclaimPolicy: ReclaimPolicy, at: string, issues: PropIssues,
): ResolvedStorageClass {
  const provisioner = o?.provisioner ?? NO_PROVISIONER;
  issues.check(`${at}.provisioner`, qualifiedNameProblem(provisioner) && `"${provisioner}" ${qualifiedNameProblem(provisioner)}`);
  return {
    name,
    create: o?.create ?? true,
    reclaimPolicy,
    isDefaultClass: o?.isDefaultClass ?? false,
    provisioner,
    allowedTopologies: o?.allowedTopologies ?? [],
    mountOptions: o?.mountOptions ?? [],
  };
}

function checkDefaultStorageClass(classes: ResolvedStorageClass[], issues: PropIssues): void {
  if (classes.filter((c) => c.isDefaultClass).length > 1) {
    issues.add('storageClasses', `more than one StorageClass has isDefaultClass: ${classes.filter((c) => c.isDefaultClass).map((c) => c.name).join(', ')}`);
  }
}

function resolveNodeCleanup(
  props: LocalVolumeProvisionerProps, serviceAccountName: string, issues: PropIssues, classes: ResolvedStorageClass[],
): ResolvedNodeCleanup {
  const n = props.nodeCleanup!;
  const known = new Set(classes.map((c) => c.name));
  const storageClassNames = n.storageClassNames ?? [];
  storageClassNames.forEach((c, i) => {
    // Claims are deleted only for classes opted in by name; a typo would silently opt in nothing.
    if (!known.has(c)) issues.add(`nodeCleanup.storageClassNames[${i}]`, `"${c}" is not a class of this provisioner (${[...known].join(', ')})`);
  });
  const replicas = n.replicas ?? 1;
  issues.check('nodeCleanup.replicas', integerProblem(replicas, 1));
  const priorityClassName = n.priorityClassName;
  if (priorityClassName !== undefined) issues.check('nodeCleanup.priorityClassName', objectNameProblem(priorityClassName));
  const tolerations = n.tolerations ?? [];
  checkTolerations(issues, 'nodeCleanup.tolerations', tolerations);
  if (props.createServiceAccount === false && props.serviceAccountName === undefined) {
    // Its ServiceAccount would be `default-node-cleanup`; binding claim deletion to the
    // namespace's `default` instead would hand it to every pod there.
    issues.add('serviceAccountName', 'is needed with nodeCleanup and createServiceAccount: false (node cleanup runs as <serviceAccountName>-node-cleanup)');
  }
  checkLabels(issues, 'nodeCleanup.nodeSelector', n.nodeSelector);
  return {
    storageClassNames,
    pvcDeletionDelayMs: optionalDuration(issues, 'nodeCleanup.pvcDeletionDelay', n.pvcDeletionDelay, Duration.seconds(60)),
    stalePvDiscoveryIntervalMs: optionalDuration(issues, 'nodeCleanup.stalePvDiscoveryInterval', n.stalePvDiscoveryInterval, Duration.seconds(10)),
    replicas,
    resources: n.resources ?? { requests: { cpu: quantity('10m'), memory: quantity('64Mi') }, limits: { memory: quantity('256Mi') } },
    nodeSelector: { ...n.nodeSelector, 'kubernetes.io/os': 'linux' },
    tolerations,
    affinity: n.affinity,
    priorityClassName,
    serviceAccountName: `${serviceAccountName}-node-cleanup`,
  };
}

function resolveMetrics(props: LocalVolumeProvisionerProps, name: string, namespace: string, issues: PropIssues): ResolvedMetrics {
  const service = props.metricsService ?? true;
  const sm = props.serviceMonitor;
  if (sm && !service) issues.add('serviceMonitor', 'needs the metrics Service; do not set metricsService to false');
  let serviceMonitor: ResolvedServiceMonitor | undefined;
  if (sm) {
    const intervalMs = optionalDuration(issues, 'serviceMonitor.interval', sm.interval, Duration.seconds(10), 1000);
    const scrapeTimeoutMs = sm.scrapeTimeout && durationMs(issues, 'serviceMonitor.scrapeTimeout', sm.scrapeTimeout, 1000);
    if (scrapeTimeoutMs !== undefined && scrapeTimeoutMs > intervalMs) {
      issues.add('serviceMonitor.scrapeTimeout', `must not be longer than serviceMonitor.interval (${scrapeTimeoutMs} ms > ${intervalMs} ms)`);
    }
    [...(sm.relabelings ?? []).map((r, i) => [`serviceMonitor.relabelings[${i}]`, r] as const),
      ...(sm.metricRelabelings ?? []).map((r, i) => [`serviceMonitor.metricRelabelings[${i}]`, r] as const)]
      .forEach(([at, r]) => checkRelabeling(at, r, issues));
    // The Helm chart's job label; '' leaves `job` to prometheus-operator (the Service name).
    const jobLabel = sm.jobLabel ?? 'app.kubernetes.io/name';
    if (jobLabel !== '') issues.check('serviceMonitor.jobLabel', qualifiedNameProblem(jobLabel));
    checkLabels(issues, 'serviceMonitor.labels', sm.labels);
    serviceMonitor = {
      namespace: resolveNamespace(issues, 'serviceMonitor.namespace', sm.namespace, namespace),
      labels: sm.labels ?? {},
      intervalMs,
      scrapeTimeoutMs,
      relabelings: sm.relabelings ?? [],
      metricRelabelings: sm.metricRelabelings ?? [],
      namespaceSelector: sm.namespaceSelector ?? { matchNames: [namespace] },
      jobLabel: jobLabel === '' ? undefined : jobLabel,
    };
  }
  return {
    service,
    serviceName: name,
    serviceMonitor,
    prometheusRule: props.prometheusRule && resolvePrometheusRule(props.prometheusRule, namespace, issues),
    grafanaDashboard: props.grafanaDashboard && resolveGrafanaDashboard(props.grafanaDashboard, namespace, issues),
  };
}

function resolvePrometheusRule(o: PrometheusRuleOptions, namespace: string, issues: PropIssues): ResolvedPrometheusRule {
  checkLabels(issues, 'prometheusRule.labels', o.labels);
  checkLabels(issues, 'prometheusRule.alertLabels', o.alertLabels);
  return {
    namespace: resolveNamespace(issues, 'prometheusRule.namespace', o.namespace, namespace),
    labels: o.labels ?? {},
    alertLabels: o.alertLabels ?? {},
    runbookBaseUrl: o.runbookBaseUrl,
  };
}

function resolveGrafanaDashboard(o: GrafanaDashboardOptions, namespace: string, issues: PropIssues): ResolvedGrafanaDashboard {
  checkLabels(issues, 'grafanaDashboard.labels', o.labels);
  return {
    namespace: resolveNamespace(issues, 'grafanaDashboard.namespace', o.namespace, namespace),
    labels: { ...o.labels, grafana_dashboard: '1' },
    folder: o.folder,
  };
}

function checkRelabeling(at: string, r: RelabelConfig, issues: PropIssues): void {
  if (r.regex !== undefined) {
    try {
      // Prometheus reads it with Go's RE2, anchored.
      compileRe2(`^(?:${r.regex})$`);
    } catch (e) {
      issues.add(`${at}.regex`, `"${r.regex}" is not a valid regular expression (${(e as Error).message})`);
    }
  }
  (r.sourceLabels ?? []).forEach((l, i) => {
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(l)) issues.add(`${at}.sourceLabels[${i}]`, `"${l}" is not a Prometheus label name`);
  });
}

/**
 * The API server's pod spec rules over each agent pod as it will be written: the
 * construct's own volumes and mounts first, then those of the props, so a clash is
 * blamed on the prop. Only what props fill is checked; the rest is the construct's.
 */
function checkAgentPods(props: LocalVolumeProvisionerProps, issues: PropIssues, r: ResolvedProps): void {
  const own = <T>(value: T, what: string): Origin<T> => ({ value, prop: what, what });
  const ofMount = (m: ResolvedHostMount) => ({ volume: fromProp(m.volume, m.volumeProp), path: fromProp(m.mountDir, m.pathProp) });
  const dev = r.pod.mountDevVolume
    ? [{ volume: own(DEV_VOLUME, 'the host /dev (mountDevVolume)'), path: own('/dev', 'the host /dev (mountDevVolume)') }]
    : [];
  const state = [{ volume: own(STATE_VOLUME, 'the volume record (stateDirectory)'), path: fromProp(r.runtime.stateDirectory, 'stateDirectory') }];
  const pods = [
    ...(r.directory ? [{
      pod: 'directory agent\'s pod',
      mounts: [
        { volume: own(CONFIG_VOLUME, 'the agent\'s ConfigMap'), path: own(CONFIG_MOUNT_PATH, 'the agent\'s ConfigMap') },
        ...state, ...dev, ...r.directory.mounts.map(ofMount),
      ],
    }] : []),
    ...(r.devices ? [{ pod: 'device agent\'s pod', mounts: [...state, ...dev, ...r.devices.mounts.map(ofMount)] }] : []),
  ];

  const extraVolumes = props.extraVolumes ?? [];
  extraVolumes.forEach((v, i) => checkVolume(issues, `extraVolumes[${i}]`, v));
  const extraMounts = (props.extraVolumeMounts ?? []).map((m, i) => fromProp(m, `extraVolumeMounts[${i}]`));
  const initContainers = props.initContainers ?? [];
  checkUnique(issues, 'name', [
    own(AGENT_CONTAINER, 'the agent container'),
    ...initContainers.map((c, i) => fromProp(c.name, `initContainers[${i}].name`)),
  ]);
  initContainers.forEach((c, i) => {
    issues.check(`initContainers[${i}].name`, dnsLabelProblem(c.name, 'container name'));
    issues.check(`initContainers[${i}].image`, imageProblem(c.image));
    checkEnv(issues, `initContainers[${i}].env`, c.env ?? []);
  });

  for (const { pod, mounts } of pods) {
    const volumes = [...mounts.map((m) => m.volume), ...extraVolumes.map((v, i) => fromProp(v.name, `extraVolumes[${i}].name`))];
    checkUnique(issues, 'name', volumes);
    const names = volumes.map((v) => v.value);
    checkVolumeMounts(issues, extraMounts, mounts.map((m) => m.path), names, pod, r.pod.securityContext.privileged ?? false);
    initContainers.forEach((c, i) => {
      const initMounts = (c.volumeMounts ?? []).map((m, j) => fromProp(m, `initContainers[${i}].volumeMounts[${j}]`));
      checkVolumeMounts(issues, initMounts, [], names, pod, c.securityContext?.privileged ?? false);
    });
  }

  if (props.image !== undefined) issues.check('image', imageProblem(props.image));
  checkEnv(issues, 'env', props.env ?? []);
  const ports = [METRICS_PORT_NAME];
  if (props.livenessProbe) checkProbe(issues, 'livenessProbe', props.livenessProbe, ports, 'liveness');
  if (props.readinessProbe) checkProbe(issues, 'readinessProbe', props.readinessProbe, ports, 'readiness');
  if (props.startupProbe) checkProbe(issues, 'startupProbe', props.startupProbe, ports, 'startup');
}

function resolveNamespace(issues: PropIssues, prop: string, value: string | undefined, fallback: string): string {
  if (value !== undefined) issues.check(prop, namespaceNameProblem(value));
  return value ?? fallback;
}

function optionalDuration(issues: PropIssues, prop: string, value: Duration | undefined, fallback: Duration, minMs = 1): number {
  return (value && durationMs(issues, prop, value, minMs)) ?? fallback.toMilliseconds();
}

function optionalDurationInput(issues: PropIssues, prop: string, value: Duration | undefined, minMs = 1): number | undefined {
  return value && durationMs(issues, prop, value, minMs);
}

/**
 * Adds the model's errors under prop names; returns the config when there were none.
 * A prop the construct's own checks already blamed is not blamed again in the model's words.
 */
function reportModelIssues<T>(result: ParseResult<T>, issues: PropIssues, propPath: (path: string) => string): T | undefined {
  if (result.ok) return result.config;
  const own = result.errors.map((e: ConfigIssue) => ({ prop: propPath(e.path), message: e.message })).filter((e) => !issues.has(e.prop));
  own.forEach((e) => issues.add(e.prop, e.message));
  return undefined;
}

/** `storageClassMap.fast-disks.namePattern` -> `storageClasses[0].namePattern`. */
function directoryPropPath(path: string, classes: LocalStorageClassProps[]): string {
  const prefix = 'storageClassMap.';
  if (!path.startsWith(prefix)) return path;
  const rest = path.slice(prefix.length);
  // Longest name first: a class name may contain dots.
  const match = classes
    .map((c, i) => ({ n: c.name, i }))
    .filter(({ n }) => rest === n || rest.startsWith(`${n}.`) || rest.startsWith(`${n}[`))
    .sort((a, b) => b.n.length - a.n.length)[0];
  if (!match) return path;
  // An issue on the map key itself is about the class name; one on a mountDir the props
  // leave to default is about the hostDir it was copied from.
  const field = rest.slice(match.n.length);
  if (field === '') return `storageClasses[${match.i}].name`;
  if (field === '.mountDir' && classes[match.i].mountDir === undefined) return `storageClasses[${match.i}].hostDir`;
  return `storageClasses[${match.i}]${field}`;
}

/** sha256 over the data in key order, so equal configs give equal hashes. */
export function hashData(data: ConfigMapData): string {
  const sorted = Object.keys(data).sort().map((k) => [k, data[k]]);
  return createHash('sha256').update(JSON.stringify(sorted)).digest('hex');
}

/**
 * A pod volume name (a DNS label, at most 63 characters) for a class or directory:
 * readable, and stable when other classes are added or reordered.
 */
function volumeName(prefix: string, key: string): string {
  const readable = `${prefix}-${key.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')}`;
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 8);
  const base = readable.length <= 54 ? readable : readable.slice(0, 54).replace(/-+$/, '');
  return `${base}-${hash}`;
}

function quantity(value: string): k8s.Quantity {
  return k8s.Quantity.fromString(value);
}

function intOrString(value: number): k8s.IntOrString {
  return k8s.IntOrString.fromNumber(value);
}
