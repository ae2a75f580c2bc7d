/** Small conversions and checks the parts share: durations with defaults, namespaces, the model's issues under prop names, names and hashes. */
import { createHash } from 'node:crypto';
import { Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { ConfigIssue, ConfigMapData, ParseResult } from '../../config';
import { durationMs, namespaceNameProblem, PropIssues } from '../prop-issues';

export function resolveNamespace(issues: PropIssues, prop: string, value: string | undefined, fallback: string): string {
  if (value !== undefined) issues.check(prop, namespaceNameProblem(value));
  return value ?? fallback;
}

export function optionalDuration(issues: PropIssues, prop: string, value: Duration | undefined, fallback: Duration, minMs = 1): number {
  return (value && durationMs(issues, prop, value, minMs)) ?? fallback.toMilliseconds();
}

export function optionalDurationInput(issues: PropIssues, prop: string, value: Duration | undefined, minMs = 1): number | undefined {
  return value && durationMs(issues, prop, value, minMs);
}

/**
 * Adds the model's errors under prop names; returns the config when there were none.
 * A prop the construct's own checks already blamed is not blamed again in the model's words.
 */
export function reportModelIssues<T>(result: ParseResult<T>, issues: PropIssues, propPath: (path: string) => string): T | undefined {
  if (result.ok) return result.config;
  const own = result.errors.map((e: ConfigIssue) => ({ prop: propPath(e.path), message: e.message })).filter((e) => !issues.has(e.prop));
  own.forEach((e) => issues.add(e.prop, e.message));
  return undefined;
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
export function volumeName(prefix: string, key: string): string {
  const readable = `${prefix}-${key.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '')}`;
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 8);
  const base = readable.length <= 54 ? readable : readable.slice(0, 54).replace(/-+$/, '');
  return `${base}-${hash}`;
}

export function quantity(value: string): k8s.Quantity {
  return k8s.Quantity.fromString(value);
}

export function intOrString(value: number): k8s.IntOrString {
  return k8s.IntOrString.fromNumber(value);
}
