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
 * A backoff that grows with consecutive failures and starts over after a success,
 * for loops that run for ever (the watch loop, leader election).
 */
export class Backoff {
  private failures = 0;

  constructor(private readonly backoff: ResolvedBackoff, private readonly random: () => number = Math.random) {}

  /** The delay to wait after one more failure. */
  next(): number {
    return backoffDelay(this.failures++, this.backoff, this.random);
  }

  reset(): void {
    this.failures = 0;
  }
}
