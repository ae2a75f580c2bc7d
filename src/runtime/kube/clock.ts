/**
 * Time as the kube edge sees it: a monotonic clock for rate limits, backoff and
 * lease expiry, a cancellable sleep, and timers. Tests swap in a fake.
 */
export interface Clock {
  /** Monotonic milliseconds; only differences mean anything. */
  now(): number;
  /** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `ms`, without keeping the process alive for it; returns what cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer: (ms, fn) => {
    const timer = setTimeout(fn, Math.max(0, ms));
    timer.unref();
    return () => clearTimeout(timer);
  },
  sleep: (ms, signal) => new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  }),
};
