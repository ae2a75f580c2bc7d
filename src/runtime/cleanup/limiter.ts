/**
 * A limit on how many cleanups run at once on a node: wiping disks competes
 * for the same spindles and bandwidth as the workloads, so the rest wait their
 * turn in arrival order.
 */
export class ConcurrencyLimiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  /** @param max how many tasks may run at once (at least 1). */
  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new Error(`concurrency limit must be a whole number of at least 1, got ${max}`);
  }

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Runs `task` once a slot is free; `onStart` is called when it gets one. */
  async run<T>(task: () => Promise<T>, onStart?: () => void): Promise<T> {
    if (this.active >= this.max) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      onStart?.();
      return await task();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next task, so `active` never dips and overshoots.
      if (next) next();
      else this.active--;
    }
  }
}
