import { posix } from 'node:path';
import type { k8s } from 'cdk8s-plus-28';
import { absolutePathProblem, dnsLabelProblem, integerProblem, PropIssues } from './prop-issues';

/**
 * The API server's pod spec rules (Kubernetes pkg/apis/core/validation, v1.28) for the
 * parts of the agents' pods that props fill: what the server would refuse, and a few
 * things kubelet could never run, fail at synth named by the prop instead of at
 * `kubectl apply` named by a field of the DaemonSet. Each check takes the entries of
 * one pod or container with the prop (or construct default) each came from.
 */

/** A value of the pod spec and where it came from: a prop path, or what the construct adds. */
export interface Origin<T> {
  readonly value: T;
  /** The prop path a problem is reported under. */
  readonly prop: string;
  /** How another entry's message names this one (the prop path, or the construct's own volume). */
  readonly what: string;
}

/** A prop's own entry: named in messages by its path. */
export function fromProp<T>(value: T, prop: string): Origin<T> {
  return { value, prop, what: prop };
}

const VOLUME_SOURCE_FIELDS_EXCLUDED = new Set(['name']);
const HOST_PATH_TYPES = ['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'];
const MOUNT_PROPAGATIONS = ['None', 'HostToContainer', 'Bidirectional'];
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const PORT_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

/**
 * Reports each entry whose value an earlier one already has (names, mount paths), unless
 * its prop is already blamed (two classes on one directory are already an overlap).
 */
export function checkUnique(issues: PropIssues, field: string, entries: Origin<string>[]): void {
  const first = new Map<string, Origin<string>>();
  for (const e of entries) {
    const earlier = first.get(e.value);
    if (!earlier) first.set(e.value, e);
    else if (!issues.has(e.prop)) issues.add(e.prop, `"${e.value}" is also the ${field} of ${earlier.what}`);
  }
}

/** A volume a prop adds: a DNS-label name and exactly one source; a hostPath's type and path. */
export function checkVolume(issues: PropIssues, prop: string, volume: k8s.Volume): void {
  issues.check(`${prop}.name`, dnsLabelProblem(volume.name, 'volume name'));
  const sources = Object.entries(volume).filter(([key, value]) => !VOLUME_SOURCE_FIELDS_EXCLUDED.has(key) && value !== undefined);
  if (sources.length === 0) issues.add(prop, 'has no volume source (hostPath, configMap, secret, emptyDir, ...)');
  if (sources.length > 1) issues.add(prop, `has more than one volume source (${sources.map(([key]) => key).join(', ')})`);
  const hostPath = volume.hostPath;
  if (hostPath) {
    if (!HOST_PATH_TYPES.includes(hostPath.type ?? '')) {
      issues.add(`${prop}.hostPath.type`, `"${hostPath.type}" is not one of ${HOST_PATH_TYPES.filter((t) => t).join(', ')}`);
    }
    if (hostPath.path === '') issues.add(`${prop}.hostPath.path`, 'must not be empty');
    else if (hostPath.path.split('/').includes('..')) issues.add(`${prop}.hostPath.path`, `"${hostPath.path}" must not contain '..'`);
  }
}

/**
 * The volume mounts props add to one container, beside the construct's own mount paths
 * in it: each names a volume of the pod, has an absolute mount path no other mount of
 * the container has, a known propagation (Bidirectional only when privileged) and a
 * relative subPath.
 */
export function checkVolumeMounts(
  issues: PropIssues, mounts: Origin<k8s.VolumeMount>[], ownPaths: Origin<string>[], podVolumes: readonly string[], pod: string, privileged: boolean,
): void {
  for (const { value: m, prop } of mounts) {
    if (!podVolumes.includes(m.name)) {
      issues.add(`${prop}.name`, `"${m.name}" is not a volume of the ${pod} (${podVolumes.join(', ') || 'it has none'})`);
    }
    if (m.mountPath === '') issues.add(`${prop}.mountPath`, 'must not be empty');
    else issues.check(`${prop}.mountPath`, absolutePathProblem(m.mountPath));
    if (m.mountPropagation !== undefined && !MOUNT_PROPAGATIONS.includes(m.mountPropagation)) {
      issues.add(`${prop}.mountPropagation`, `"${m.mountPropagation}" is not one of ${MOUNT_PROPAGATIONS.join(', ')}`);
    } else if (m.mountPropagation === 'Bidirectional' && !privileged) {
      issues.add(`${prop}.mountPropagation`, 'Bidirectional is only allowed in a privileged container');
    }
    for (const [field, sub] of [['subPath', m.subPath], ['subPathExpr', m.subPathExpr]] as const) {
      if (sub !== undefined && (posix.isAbsolute(sub) || sub.split('/').includes('..'))) {
        issues.add(`${prop}.${field}`, `"${sub}" must be a relative path without '..'`);
      }
    }
  }
  checkUnique(issues, 'mountPath', [...ownPaths, ...mounts.map((m) => fromProp(m.value.mountPath, `${m.prop}.mountPath`))]);
}

/** A container image: required, and without surrounding spaces (kubelet could not pull it). */
export function imageProblem(image: string | undefined): string | undefined {
  if (image === undefined || image === '') return 'must not be empty';
  if (image.trim() !== image) return `"${image}" has leading or trailing spaces`;
  return undefined;
}

/** Env variables: a C-identifier-like name (dots and dashes allowed), and a value or a valueFrom, not both. */
export function checkEnv(issues: PropIssues, prop: string, env: k8s.EnvVar[]): void {
  env.forEach((e, i) => {
    if (!ENV_VAR_NAME.test(e.name)) {
      issues.add(`${prop}[${i}].name`, `"${e.name}" is not a valid environment variable name: letters, digits, '_', '-' and '.', not starting with a digit`);
    }
    if (e.value !== undefined && e.value !== '' && e.valueFrom !== undefined) {
      issues.add(`${prop}[${i}]`, 'has both value and valueFrom; give one');
    }
  });
}

/** IANA_SVC_NAME: at most 15 lower-case letters, digits and '-', with a letter, no '--'. */
export function portNameProblem(name: string): string | undefined {
  if (name.length > 15 || !PORT_NAME.test(name) || name.includes('--') || !/[a-z]/.test(name)) {
    return `"${name}" is not a valid port name: at most 15 lower-case letters, digits and '-', with at least one letter, no '--', not starting or ending with '-'`;
  }
  return undefined;
}

/**
 * A probe of the agent container: exactly one handler; its port a number from 1 to 65535
 * or the name of one of the container's ports (kubelet cannot probe another name);
 * success threshold 1 for liveness and startup probes; no negative timings.
 */
export function checkProbe(issues: PropIssues, prop: string, probe: k8s.Probe, portNames: readonly string[], kind: 'liveness' | 'readiness' | 'startup'): void {
  const handlers = (['exec', 'httpGet', 'tcpSocket', 'grpc'] as const).filter((h) => probe[h] !== undefined);
  if (handlers.length !== 1) {
    issues.add(prop, handlers.length === 0 ? 'has no handler (exec, httpGet, tcpSocket or grpc)' : `has more than one handler (${handlers.join(', ')})`);
  }
  for (const h of ['httpGet', 'tcpSocket'] as const) {
    const port = probe[h]?.port.value;
    if (typeof port === 'number') {
      issues.check(`${prop}.${h}.port`, integerProblem(port, 1, 65535));
    } else if (typeof port === 'string') {
      const problem = portNameProblem(port);
      if (problem) issues.add(`${prop}.${h}.port`, problem);
      else if (!portNames.includes(port)) issues.add(`${prop}.${h}.port`, `"${port}" is not a port of the container (${portNames.join(', ')})`);
    }
  }
  if (probe.grpc) issues.check(`${prop}.grpc.port`, integerProblem(probe.grpc.port, 1, 65535));
  for (const field of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold'] as const) {
    const value = probe[field];
    if (value !== undefined) issues.check(`${prop}.${field}`, integerProblem(value, 0));
  }
  if (kind !== 'readiness' && probe.successThreshold !== undefined && probe.successThreshold !== 1) {
    issues.add(`${prop}.successThreshold`, `must be 1 for a ${kind} probe`);
  }
  if (probe.terminationGracePeriodSeconds !== undefined) {
    if (kind === 'readiness') issues.add(`${prop}.terminationGracePeriodSeconds`, 'must not be set on a readiness probe');
    else issues.check(`${prop}.terminationGracePeriodSeconds`, integerProblem(probe.terminationGracePeriodSeconds, 1));
  }
}
