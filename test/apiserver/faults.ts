/**
 * Fault injection for tests: added latency, and failing the next N requests that
 * match a verb and resource with a given code (the body worded as the real server
 * words that failure, with Retry-After for 429 and 503).
 */
import { ApiError, injected } from './status';

export interface FailureSpec {
  /** Verb to match (get, list, watch, create, update, patch, delete, deletecollection). @default any verb */
  readonly verb?: string;
  /** Resource to match, e.g. `persistentvolumes` or `persistentvolumes/status`. @default any resource */
  readonly resource?: string;
  /** HTTP status to answer with (500, 503, 429, 409, ...). */
  readonly code: number;
  /** How many matching requests fail. @default 1 */
  readonly count?: number;
  /** Seconds for the Retry-After header and details.retryAfterSeconds (429 and 503). */
  readonly retryAfterSeconds?: number;
}

interface Rule {
  readonly spec: FailureSpec;
  remaining: number;
}

export class Faults {
  /** Milliseconds every request waits before it is served. */
  latency = 0;
  private rules: Rule[] = [];
  private hooks: Array<{ readonly spec: Omit<FailureSpec, 'code' | 'count' | 'retryAfterSeconds'>; readonly action: () => void }> = [];

  constructor(
    /** Ends every open watch. */
    readonly closeWatches: () => void,
    /** Drops the watch history so older resourceVersions get 410 Gone. */
    readonly compact: () => void,
  ) {}

  /** Makes the next `count` requests matching verb/resource fail with `code`. */
  failNext(spec: FailureSpec): void {
    this.rules.push({ spec, remaining: spec.count ?? 1 });
  }

  /**
   * Runs `action` right before the next request matching verb/resource is served
   * (once): something another client does in the window between two of ours.
   */
  beforeNext(spec: Omit<FailureSpec, 'code' | 'count' | 'retryAfterSeconds'>, action: () => void): void {
    this.hooks.push({ spec, action });
  }

  /** Forgets pending failures, hooks and latency. */
  clear(): void {
    this.rules = [];
    this.hooks = [];
    this.latency = 0;
  }

  /** Runs the hook waiting for this request, if any (consumes it). */
  runHook(verb: string, resource: string): void {
    const hook = this.hooks.find((h) => (!h.spec.verb || h.spec.verb === verb) && (!h.spec.resource || h.spec.resource === resource));
    if (!hook) return;
    this.hooks = this.hooks.filter((h) => h !== hook);
    hook.action();
  }

  /** The injected failure for this request, if one is pending (consumes it). */
  take(verb: string, resource: string): ApiError | undefined {
    const rule = this.rules.find((x) => x.remaining > 0
      && (!x.spec.verb || x.spec.verb === verb)
      && (!x.spec.resource || x.spec.resource === resource));
    if (!rule) return undefined;
    rule.remaining--;
    if (rule.remaining === 0) this.rules = this.rules.filter((x) => x !== rule);
    return injected(rule.spec.code, rule.spec.retryAfterSeconds);
  }
}
