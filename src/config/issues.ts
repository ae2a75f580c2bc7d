import { ConfigIssue, ParseResult } from './model';

/** `storageClassMap.fast-disks.volumeMode: "block" is not one of Filesystem, Block` */
export function formatIssue(issue: ConfigIssue): string {
  return issue.path === '' ? issue.message : `${issue.path}: ${issue.message}`;
}

/** Renders a value the way an issue quotes it: strings in double quotes, collections by kind. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object' && value !== null) return 'a map';
  return String(value);
}

/**
 * Collects every problem of one configuration instead of stopping at the first,
 * so a user fixes a broken ConfigMap in one edit rather than one per restart.
 */
export class IssueCollector {
  constructor(
    readonly errors: ConfigIssue[] = [],
    readonly warnings: ConfigIssue[] = [],
    /** Marks every issue recorded through this collector (e.g. the class it is confined to). */
    private readonly mark: Pick<ConfigIssue, 'storageClass'> = {},
  ) {}

  error(path: string, message: string): void {
    this.errors.push({ path, message, ...this.mark });
  }

  /** An error the Go provisioner does not check (see {@link ConfigIssue.upstreamAccepts}). */
  beyondUpstream(path: string, message: string): void {
    this.errors.push({ path, message, ...this.mark, upstreamAccepts: true });
  }

  warn(path: string, message: string): void {
    this.warnings.push({ path, message, ...this.mark });
  }

  /** A collector into the same lists whose issues are confined to class `name`. */
  forClass(name: string): IssueCollector {
    return new IssueCollector(this.errors, this.warnings, { storageClass: name });
  }

  /** Adds issues collected elsewhere (e.g. the resolver's, after filtering). */
  absorb(other: { errors: ConfigIssue[]; warnings: ConfigIssue[] }): void {
    this.errors.push(...other.errors);
    this.warnings.push(...other.warnings);
  }

  /** The outcome: `config()` is only called (and only meaningful) when there was no error. */
  result<T>(config: () => T): ParseResult<T> {
    if (this.errors.length > 0) return { ok: false, errors: this.errors, warnings: this.warnings };
    return { ok: true, config: config(), warnings: this.warnings };
  }
}

/** Joins a dotted issue path: `join('storageClassMap', 'fast')` -> `storageClassMap.fast`. */
export function joinPath(parent: string, child: string | number): string {
  if (typeof child === 'number') return `${parent}[${child}]`;
  return parent === '' ? child : `${parent}.${child}`;
}
