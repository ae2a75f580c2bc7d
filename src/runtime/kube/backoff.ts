export interface BackoffOptions {
  /** Delay before the first retry. @default 250 */
  readonly initialMs?: number;
  /** Largest delay, and the cap on a server's Retry-After. @default 30000 */
  readonly maxMs?: number;
  /** Growth per attempt. @default 2 */
  readonly factor?: number;
  /** Random extra, as a fraction of the delay, so that many clients do not retry in step. @default 0.5 */
  readonly jitter?: number;
}

export type ResolvedBackoff = Required<BackoffOptions>;

export function resolveBackoff(options: BackoffOptions = {}): ResolvedBackoff {
  return {
    initialMs: options.initialMs ?? 250,
    maxMs: options.maxMs ?? 30_000,
    factor: options.factor ?? 2,
    jitter: options.jitter ?? 0.5,
  };
}

/**
 * Delay before retry number `retry` (0 for the first retry): exponential growth capped
 * at maxMs, then up to `jitter` of it added at random.
 */
export function backoffDelay(retry: number, backoff: ResolvedBackoff, random: () => number = Math.random): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * backoff.factor ** retry);
  return base * (1 + backoff.jitter * random());
}

/**
 * client-go's reflector backoff between failed lists and watches
 * (wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0, clock)): 800 ms doubling up
 * to 30 s, each delay plus up to 100 % of itself at random, so that when an apiserver
 * restarts the relists of every node of the cluster are spread over [d, 2d) rather than
 * all sent at once; started over after REFLECTOR_BACKOFF_RESET_MS without a failure.
 */
export const REFLECTOR_BACKOFF: ResolvedBackoff = { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 1 };
/** A reflector's backoff starts over after this long without a failure (client-go's resetDuration). */
export const REFLECTOR_BACKOFF_RESET_MS = 120_000;

/** When a Backoff starts over by itself: after `afterMs` of `clock` time with no failure. */
export interface BackoffReset {
  readonly afterMs: number;
  readonly clock: { now(): number };
}

/**
 * A backoff that grows with consecutive failures, for loops that run for ever (the watch
 * loop, leader election). It starts over on reset() and, given `resetAfter`, by itself
 * once that long has passed since the last delay ended without another failure (a healthy
 * period). client-go's manager counts that period from when the last delay was asked
 * for, its wait included; here it counts from when the wait ended, so a long last wait
 * is not taken for health.
 */
export class Backoff {
  private failures = 0;
  /** When the last delay handed out ends (clock time). */
  private lastWaitEnds?: number;

  constructor(private readonly backoff: ResolvedBackoff, private readonly random: () => number = Math.random,
    private readonly resetAfter?: BackoffReset) {}

  /** The delay to wait after one more failure. */
  next(): number {
    const now = this.resetAfter?.clock.now();
    if (now !== undefined && this.lastWaitEnds !== undefined && now - this.lastWaitEnds > this.resetAfter!.afterMs) this.failures = 0;
    const delay = backoffDelay(this.failures++, this.backoff, this.random);
    if (now !== undefined) this.lastWaitEnds = now + delay;
    return delay;
  }

  reset(): void {
    this.failures = 0;
  }
}
