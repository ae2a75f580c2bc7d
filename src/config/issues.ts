import { ConfigIssue } from './model';

/** `storageClassMap.fast-disks.volumeMode: "block" is not one of Filesystem, Block` */
export function formatIssue(issue: ConfigIssue): string {
  return issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`;
}

/** Renders a value the way an issue quotes it: strings in double quotes, the rest as JSON. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (value instanceof Date) return `the timestamp ${value.toISOString()}`;
  if (typeof value === 'object' && value !== null) return 'a map';
  return String(value);
}

/**
 * Collects every problem of one configuration instead of stopping at the first,
 * so a user fixes a broken ConfigMap in one edit rather than one per restart.
 */
export class IssueCollector {
  readonly errors: ConfigIssue[] = [];
  readonly warnings: ConfigIssue[] = [];

  error(path: string, message: string): void {
    this.errors.push({ path, message });
  }

  warn(path: string, message: string): void {
    this.warnings.push({ path, message });
  }

  /** Adds another collector's issues, e.g. from a nested parse. */
  absorb(other: { errors?: ConfigIssue[]; warnings: ConfigIssue[] }): void {
    this.errors.push(...(other.errors ?? []));
    this.warnings.push(...other.warnings);
  }

  result<T>(config: () => T): { ok: true; config: T; warnings: ConfigIssue[] } | { ok: false; errors: ConfigIssue[]; warnings: ConfigIssue[] } {
    if (this.errors.length > 0) return { ok: false, errors: this.errors, warnings: this.warnings };
    return { ok: true, config: config(), warnings: this.warnings };
  }
}

/** Joins a dotted issue path: `join('storageClassMap', 'fast')` -> `storageClassMap.fast`. */
export function joinPath(parent: string, child: string | number): string {
  if (typeof child === 'number') return `${parent}[${child}]`;
  return parent === '' ? child : `${parent}.${child}`;
}
