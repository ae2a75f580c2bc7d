/**
 * When to try a failed cleanup (a command that failed, a cleanup Job that
 * failed) again: exponential backoff, so a broken disk is neither abandoned
 * nor hammered every loop. The same growth as the API client's retries, without
 * jitter (one node's cleanups do not storm a shared server), on a slower scale.
 */
import { backoffDelay, BackoffOptions, resolveBackoff } from '../kube/backoff';

export type BackoffPolicy = Pick<BackoffOptions, 'initialMs' | 'maxMs'>;

/** 10 s after the first failure, doubling up to 10 min. */
export const DEFAULT_BACKOFF: Required<BackoffPolicy> = { initialMs: 10_000, maxMs: 600_000 };

/** Delay before the next attempt after `failures` consecutive failures (1 = the first). */
export function retryDelayMs(failures: number, policy: BackoffPolicy = {}): number {
  if (failures < 1) return 0;
  return backoffDelay(failures - 1, resolveBackoff({ ...DEFAULT_BACKOFF, ...policy, jitter: 0 }));
}

/** The time (ms since the epoch) of the next attempt after the `failures`-th failure at `failedAt`. */
export function nextRetryAt(failures: number, failedAt: number, policy: BackoffPolicy = {}): number {
  return failedAt + retryDelayMs(failures, policy);
}
