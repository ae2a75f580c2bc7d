/** The agents' pods: tolerations, security context, env, and the API server's pod spec rules over the whole. */
import { k8s } from 'cdk8s-plus-28';
import { checkEnv, checkProbe, checkUnique, checkVolume, checkVolumeMounts, fromProp, imageProblem, Origin } from '../pod-spec-rules';
import { checkTolerations, dnsLabelProblem, PropIssues } from '../prop-issues';
import { LocalVolumeProvisionerProps } from '../props';
import { AGENT_CONTAINER, AGENT_ENV, CONFIG_MOUNT_PATH, CONFIG_VOLUME, DEV_VOLUME, METRICS_PORT_NAME, STATE_VOLUME } from './constants';
import type { ResolvedProps } from './index';

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

/** A pod volume (hostPath) of the agent mounted at a path, and the prop that put it there. */
export interface ResolvedHostMount {
  readonly volume: string;
  readonly hostDir: string;
  readonly mountDir: string;
  /** The props problems with the volume's name and with the mount path are reported under. */
  readonly volumeProp: string;
  readonly pathProp: string;
}

/** The agents' own tolerations, checked; `valid` when cleanup Jobs may copy them. */
export interface AgentTolerations {
  readonly given: k8s.Toleration[];
  readonly valid: boolean;
}

export function resolveTolerations(props: LocalVolumeProvisionerProps, issues: PropIssues): AgentTolerations {
  // Node storage agents tolerate every taint by default: disks are often on dedicated, tainted nodes.
  const given = props.tolerations ?? [{ operator: 'Exists' }];
  return { given, valid: checkTolerations(issues, 'tolerations', given) };
}

/** The Helm chart's rule: a securityContext given is written as given, `privileged` added when it has none. */
export function resolveSecurityContext(props: LocalVolumeProvisionerProps, issues: PropIssues): k8s.SecurityContext {
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
export function resolveAgentEnv(props: LocalVolumeProvisionerProps, issues: PropIssues): k8s.EnvVar[] {
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

/**
 * The API server's pod spec rules over each agent pod as it will be written: the
 * construct's own volumes and mounts first, then those of the props, so a clash is
 * blamed on the prop. Only what props fill is checked; the rest is the construct's.
 */
export function checkAgentPods(props: LocalVolumeProvisionerProps, issues: PropIssues, r: ResolvedProps): void {
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
