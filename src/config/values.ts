import * as path from 'node:path';
import { parseGoDuration } from './duration';
import { describeValue, IssueCollector, joinPath } from './issues';
import { DurationMs } from './model';

/**
 * Readers that turn one untyped value (from YAML, a plain ConfigMap string or a
 * construct's props) into a typed one, recording an issue instead of throwing.
 * Each returns undefined when the value is absent or unusable, so the resolver
 * can apply a default or report a missing field, and go on checking the rest.
 * `null` counts as absent, as a YAML null decodes to Go's zero value upstream.
 */

export type Reader<T> = (value: unknown, at: string, issues: IssueCollector) => T | undefined;

function isAbsent(value: unknown): value is null | undefined {
  return value === undefined || value === null;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** YAML 1.1 booleans as go-yaml v2 resolves them (the Helm chart writes `"yes"`). */
const YAML11_TRUE = /^(?:y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON)$/;
const YAML11_FALSE = /^(?:n|N|no|No|NO|false|False|FALSE|off|Off|OFF)$/;

export const readBoolean: Reader<boolean> = (value, at, issues) => {
  if (isAbsent(value)) return undefined;
  if (typeof value === 'boolean') return value;
  // A quoted "yes" is a string to YAML; upstream would fail to load it, we take what was meant.
  if (typeof value === 'string') {
    if (YAML11_TRUE.test(value)) return true;
    if (YAML11_FALSE.test(value)) return false;
  }
  issues.error(at, `${describeValue(value)} is not a boolean (true/false, yes/no, on/off)`);
  return undefined;
};

/**
 * A string. A YAML scalar that resolved to a number or boolean is turned back into
 * text as upstream's sigs.k8s.io/yaml does, with a warning since the text may differ
 * from what was written (`yes` becomes "true", `0777` becomes "511").
 */
export const readString: Reader<string> = (value, at, issues) => {
  if (isAbsent(value)) return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') {
    issues.warn(at, `${String(value)} was read as a YAML ${typeof value} and is used as the text "${String(value)}"; quote it to keep it as written`);
    return String(value);
  }
  issues.error(at, `expected a string, got ${describeValue(value)}`);
  return undefined;
};

export function readEnum<T extends string>(allowed: readonly T[]): Reader<T> {
  return (value, at, issues) => {
    const text = readString(value, at, issues);
    if (text === undefined) return undefined;
    if ((allowed as readonly string[]).includes(text)) return text as T;
    issues.error(at, `${JSON.stringify(text)} is not one of ${allowed.join(', ')}`);
    return undefined;
  };
}

/** An absolute path (paths can never hold NUL). */
export const readAbsolutePath: Reader<string> = (value, at, issues) => {
  const text = readString(value, at, issues);
  if (text === undefined) return undefined;
  if (!path.isAbsolute(text)) {
    issues.error(at, `${JSON.stringify(text)} is not an absolute path`);
    return undefined;
  }
  if (text.includes('\0')) {
    issues.error(at, `${JSON.stringify(text)} contains a NUL character`);
    return undefined;
  }
  return text;
};

export function readInteger(min: number): Reader<number> {
  return (value, at, issues) => {
    if (isAbsent(value)) return undefined;
    const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
    if (typeof n === 'number' && Number.isSafeInteger(n) && n >= min) return n;
    issues.error(at, `${describeValue(value)} is not a whole number of at least ${min}`);
    return undefined;
  };
}

/** A finite number of at least `min`, or its decimal text (`1.5`). */
export function readNumber(min: number): Reader<number> {
  return (value, at, issues) => {
    if (isAbsent(value)) return undefined;
    const n = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    if (typeof n === 'number' && Number.isFinite(n) && n >= min) return n;
    issues.error(at, `${describeValue(value)} is not a number of at least ${min}`);
    return undefined;
  };
}

/** A Go duration string (`1h30m`) or, from typed input, whole milliseconds. */
export const readDuration: Reader<DurationMs> = (value, at, issues) => {
  if (isAbsent(value)) return undefined;
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= 0) return value;
    issues.error(at, `${value} is not a non-negative whole number of milliseconds`);
    return undefined;
  }
  if (typeof value === 'string') {
    const ms = parseGoDuration(value);
    if (ms !== undefined) return ms;
  }
  issues.error(at, `${describeValue(value)} is not a non-negative Go duration such as 5m0s, 1h30m, 300ms or 1.5h`);
  return undefined;
};

export function readList<T>(element: Reader<T>): Reader<T[]> {
  return (value, at, issues) => {
    if (isAbsent(value)) return undefined;
    if (!Array.isArray(value)) {
      issues.error(at, `expected a list, got ${describeValue(value)}`);
      return undefined;
    }
    const before = issues.errors.length;
    const items = value.map((item, i) => element(item, joinPath(at, i), issues));
    if (issues.errors.length > before) return undefined;
    return items.filter((item): item is T => item !== undefined);
  };
}

/** A map of strings; `keep` checks each entry (recording its problems) and says whether it stays. */
export function readStringMap(keep: (key: string, value: string, at: string, issues: IssueCollector) => boolean): Reader<Record<string, string>> {
  return (value, at, issues) => {
    if (isAbsent(value)) return undefined;
    if (!isPlainObject(value)) {
      issues.error(at, `expected a map, got ${describeValue(value)}`);
      return undefined;
    }
    let unreadable = false;
    const result: Record<string, string> = {};
    for (const [key, raw] of Object.entries(value)) {
      const text = readString(raw, joinPath(at, key), issues) ?? (isAbsent(raw) ? '' : undefined);
      if (text === undefined) unreadable = true;
      else if (keep(key, text, joinPath(at, key), issues)) result[key] = text;
    }
    return unreadable ? undefined : result;
  };
}

/** Levenshtein distance, for "did you mean" hints on misspelt keys. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}

function isSubsequence(short: string, long: string): boolean {
  let i = 0;
  for (const c of long) if (c === short[i]) i++;
  return i === short.length;
}

/** The known key a misspelt one most likely meant, if any is close (a dropped word counts as close). */
function nearestKey(key: string, known: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: { key: string; score: number } | undefined;
  for (const candidate of known) {
    const c = candidate.toLowerCase();
    const distance = editDistance(lower, c);
    const limit = Math.max(2, Math.floor(Math.max(lower.length, c.length) / 4));
    if (distance > limit) continue;
    const score = distance - (isSubsequence(lower, c) || isSubsequence(c, lower) ? 0.5 : 0);
    if (!best || score < best.score) best = { key: candidate, score };
  }
  return best?.key;
}

export interface FieldsOptions {
  /**
   * Match keys ignoring case, as upstream's JSON decoding does (`hostdir` fills
   * `hostDir`), with a warning. Off for the device dialect, which reads exact keys.
   */
  readonly caseInsensitive: boolean;
}

/**
 * Splits a map into its known fields, warning about every other key (upstream
 * ignores them silently, which hides typos such as `hostdir` or `namePatern`).
 */
export function readFields<K extends string>(
  value: unknown,
  known: readonly K[],
  at: string,
  issues: IssueCollector,
  options: FieldsOptions,
): Partial<Record<K, unknown>> | undefined {
  if (isAbsent(value)) return {};
  if (!isPlainObject(value)) {
    issues.error(at, `expected a map, got ${describeValue(value)}`);
    return undefined;
  }
  const fields: Partial<Record<K, unknown>> = {};
  for (const [key, raw] of Object.entries(value)) {
    if ((known as readonly string[]).includes(key)) {
      fields[key as K] = raw;
      continue;
    }
    const folded = options.caseInsensitive ? known.find((k) => k.toLowerCase() === key.toLowerCase()) : undefined;
    if (folded !== undefined && !(folded in value)) {
      issues.warn(joinPath(at, key), `is read as ${folded} (keys match case-insensitively, as upstream); spell it ${folded}`);
      fields[folded] = raw;
      continue;
    }
    const near = nearestKey(key, known);
    issues.warn(joinPath(at, key), `is not a known key and is ignored${near ? `; did you mean ${near}?` : ''}`);
  }
  return fields;
}
