/**
 * When to try a failed cleanup (a command that failed, a cleanup Job that
 * failed) again: exponential backoff, so a broken disk is neither abandoned
 * nor hammered every loop.
 */
export interface BackoffPolicy {
  /** Delay after the first failure. @default 10 s */
  readonly initialMs?: number;
  /** Longest delay. @default 10 min */
  readonly maxMs?: number;
}

export const DEFAULT_BACKOFF: Required<BackoffPolicy> = { initialMs: 10_000, maxMs: 600_000 };

/** Delay before the next attempt after `failures` consecutive failures (1 = the first). */
export function retryDelayMs(failures: number, policy: BackoffPolicy = {}): number {
  const { initialMs, maxMs } = { ...DEFAULT_BACKOFF, ...policy };
  if (failures < 1) return 0;
  // 2^(failures-1) overflows to Infinity for absurd counts; min() then caps it.
  return Math.min(maxMs, initialMs * 2 ** (failures - 1));
}

/** The time (ms since the epoch) of the next attempt after the `failures`-th failure at `failedAt`. */
export function nextRetryAt(failures: number, failedAt: number, policy: BackoffPolicy = {}): number {
  return failedAt + retryDelayMs(failures, policy);
}
