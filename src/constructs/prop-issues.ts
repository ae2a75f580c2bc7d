import { posix } from 'node:path';
import type { Duration } from 'cdk8s';
import type { k8s } from 'cdk8s-plus-28';
import { IssueCollector } from '../config/issues';
import { dnsSubdomainProblem, labelValueProblem, qualifiedNameProblem } from '../config/kube-names';
import { readToleration } from '../config/tolerations';
import { readList } from '../config/values';

/**
 * Collects every problem with the props, each named by the prop's path
 * (`storageClasses[1].mountDir`), and throws them together at synth time, so a user
 * fixes them in one round instead of one per `cdk8s synth`.
 */
export class PropIssues {
  private readonly problems: string[] = [];
  private readonly props = new Set<string>();

  /** Adds a problem; the same line twice (one mistake found by two checks) is kept once. */
  add(prop: string, problem: string): void {
    const line = `${prop}: ${problem}`;
    if (!this.problems.includes(line)) this.problems.push(line);
    this.props.add(prop);
  }

  /** Whether a problem was already reported for `prop`. */
  has(prop: string): boolean {
    return this.props.has(prop);
  }

  /** Adds `problem` when it is defined; returns whether the value was fine. */
  check(prop: string, problem: string | undefined): boolean {
    if (problem !== undefined) this.add(prop, problem);
    return problem === undefined;
  }

  throwIfAny(): void {
    if (this.problems.length > 0) {
      throw new Error(`LocalVolumeProvisioner: invalid props:\n  ${this.problems.join('\n  ')}`);
    }
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const RFC1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** Names of most objects (ConfigMaps, ServiceAccounts, StorageClasses, roles). */
export function objectNameProblem(value: string): string | undefined {
  return dnsSubdomainProblem(value);
}

/** An RFC 1123 label (namespaces, pod volumes, containers), `what` naming the kind in the message. */
export function dnsLabelProblem(value: string, what: string): string | undefined {
  if (value.length > 63 || !DNS_LABEL.test(value)) {
    return `"${value}" is not a valid ${what}: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit`;
  }
  return undefined;
}

/** Namespaces: an RFC 1123 label. */
export function namespaceNameProblem(value: string): string | undefined {
  return dnsLabelProblem(value, 'namespace name');
}

/** Services (and the base name, which names the Service): an RFC 1035 label. */
export function serviceNameProblem(value: string): string | undefined {
  if (value.length > 63 || !RFC1035_LABEL.test(value)) {
    return `"${value}" is not a valid Service name: at most 63 lower-case letters, digits and '-', starting with a letter and ending with a letter or digit`;
  }
  return undefined;
}

/** Checks every key and value of a label map. */
export function checkLabels(issues: PropIssues, prop: string, labels: Record<string, string> | undefined): void {
  for (const [key, value] of Object.entries(labels ?? {})) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) issues.add(`${prop}`, `label key "${key}" ${keyProblem}`);
    const valueProblem = labelValueProblem(value);
    if (valueProblem) issues.add(`${prop}.${key}`, `label value "${value}" ${valueProblem}`);
  }
}

/**
 * Tolerations, by the API server's rules (the configuration model's reader for
 * `jobTolerations` implements them); returns whether all were fine.
 */
export function checkTolerations(issues: PropIssues, prop: string, tolerations: k8s.Toleration[]): boolean {
  const collector = new IssueCollector();
  readList(readToleration({ caseInsensitive: false }))(tolerations, prop, collector);
  collector.errors.forEach((e) => issues.add(e.path, e.message));
  return collector.errors.length === 0;
}

/** A ClusterRole rule, by the API server's rules (rbac validation's ValidatePolicyRule). */
export function checkPolicyRule(issues: PropIssues, prop: string, rule: k8s.PolicyRule): void {
  const given = (list: string[] | undefined) => (list ?? []).length > 0;
  if (!given(rule.verbs)) issues.add(`${prop}.verbs`, 'must name at least one verb');
  if (given(rule.nonResourceUrLs)) {
    if (given(rule.apiGroups) || given(rule.resources) || given(rule.resourceNames)) {
      issues.add(`${prop}.nonResourceUrLs`, 'a rule applies to non-resource URLs or to resources, not both');
    }
    return;
  }
  if (!given(rule.apiGroups)) issues.add(`${prop}.apiGroups`, 'must name at least one API group ("" is the core group)');
  if (!given(rule.resources)) issues.add(`${prop}.resources`, 'must name at least one resource');
}

/** Absolute, normalised (no `.`, `..`, `//` or trailing `/`), not `/` itself. */
export function absolutePathProblem(value: string): string | undefined {
  if (!value.startsWith('/')) return `"${value}" is not an absolute path`;
  if (value === '/') return 'must not be the root directory';
  if (posix.normalize(value) !== value || value.endsWith('/')) {
    return `"${value}" is not a normalised path (write "${posix.normalize(value).replace(/\/$/, '')}")`;
  }
  return undefined;
}

/** Whether one path is the other or lies inside it. */
export function pathsOverlap(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

/** A duration as whole milliseconds, checked to be at least `minMs`. */
export function durationMs(issues: PropIssues, prop: string, value: Duration, minMs = 1): number | undefined {
  let ms: number;
  try {
    ms = value.toMilliseconds();
  } catch (e) {
    issues.add(prop, `is not a whole number of milliseconds (${(e as Error).message})`);
    return undefined;
  }
  if (ms < minMs) {
    issues.add(prop, `must be at least ${minMs} ms, got ${ms} ms`);
    return undefined;
  }
  return ms;
}

/** A whole number of at least `min` (and at most `max`, when there is one). */
export function integerProblem(value: number, min: number, max?: number): string | undefined {
  if (!Number.isSafeInteger(value) || value < min || (max !== undefined && value > max)) {
    return max === undefined ? `${value} is not a whole number of at least ${min}` : `${value} is not a whole number from ${min} to ${max}`;
  }
  return undefined;
}
