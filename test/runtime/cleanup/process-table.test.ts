import { ConcurrencyLimiter } from '../../../src/runtime/cleanup/limiter';
import { CleanupProcessTable, type TaskOutcome } from '../../../src/runtime/cleanup/process-table';
import { nextRetryAt, retryDelayMs } from '../../../src/runtime/cleanup/retry-backoff';

interface Controllable {
  task: (signal: AbortSignal) => Promise<TaskOutcome>;
  finish: (o: TaskOutcome) => void;
  signal: () => AbortSignal | undefined;
}

/** A task that finishes when told to. */
function controllable(): Controllable {
  let finish!: (o: TaskOutcome) => void;
  let seen: AbortSignal | undefined;
  const done = new Promise<TaskOutcome>((resolve) => {
    finish = resolve;
  });
  return {
    task: async (signal) => {
      seen = signal;
      return done;
    },
    finish: (o) => finish(o),
    signal: () => seen,
  };
}

function table(options: { max?: number; timeoutMs?: number; now?: () => number } = {}): CleanupProcessTable {
  return new CleanupProcessTable({ limiter: new ConcurrencyLimiter(options.max ?? 4), timeoutMs: options.timeoutMs ?? 0, now: options.now });
}

describe('the cleanup process table', () => {
  test('a started cleanup is running and counted', async () => {
    const t = table();
    const c = controllable();
    expect(t.start('uid-1', 'pv-a', c.task)).toEqual({ started: true });
    await Promise.resolve();
    expect(t.get('uid-1')?.state).toBe('running');
    expect(t.counts()).toEqual({ queued: 0, running: 1, succeeded: 0, failed: 0 });
    c.finish({ ok: true });
    await t.idle();
    expect(t.counts()).toEqual({ queued: 0, running: 0, succeeded: 1, failed: 0 });
  });

  test('a second start for the same UID while one runs is refused (no duplicate attempts)', () => {
    const t = table();
    const c = controllable();
    t.start('uid-1', 'pv-a', c.task);
    expect(t.start('uid-1', 'pv-a', c.task)).toEqual({ started: false, reason: expect.stringContaining('already') });
    c.finish({ ok: true });
  });

  test('an old success for a PV name never stands for a new PV with the same name', async () => {
    const t = table();
    t.start('uid-old', 'local-pv-1', async () => ({ ok: true }));
    await t.idle();
    expect(t.get('uid-old')?.state).toBe('succeeded');
    // The PV is recreated under the same name: its UID has no entry, so it must be cleaned.
    expect(t.get('uid-new')).toBeUndefined();
    expect(t.consume('uid-new')).toBeUndefined();
    let cleaned = false;
    expect(t.start('uid-new', 'local-pv-1', async () => {
      cleaned = true;
      return { ok: true };
    })).toEqual({ started: true });
    await t.idle();
    expect(cleaned).toBe(true);
  });

  test('a consumed success expires', async () => {
    const t = table();
    t.start('uid-1', 'pv-a', async () => ({ ok: true }));
    await t.idle();
    expect(t.consume('uid-1')?.state).toBe('succeeded');
    expect(t.get('uid-1')).toBeUndefined();
    expect(t.consume('uid-1')).toBeUndefined();
  });

  test('an unconsumed result blocks a new start until it is consumed', async () => {
    const t = table();
    t.start('uid-1', 'pv-a', async () => ({ ok: true }));
    await t.idle();
    expect(t.start('uid-1', 'pv-a', async () => ({ ok: true })).started).toBe(false);
  });

  test('a failure is kept with its reason, start time, duration and a retry time', async () => {
    let now = 1_000_000;
    const t = table({ now: () => now });
    t.start('uid-1', 'pv-a', async () => {
      now += 250;
      return { ok: false, reason: 'cleaner exited with code 10' };
    });
    await t.idle();
    const e = t.consume('uid-1');
    expect(e).toMatchObject({ state: 'failed', reason: 'cleaner exited with code 10', startedAt: 1_000_000, durationMs: 250, failures: 1 });
    expect(e?.retryAt).toBe(nextRetryAt(1, 1_000_250));
    expect(t.counts().failed).toBe(1);
  });

  test('a failed cleanup is retried only after its backoff, and the backoff grows', async () => {
    let now = 0;
    const t = table({ now: () => now });
    const fail = async (): Promise<TaskOutcome> => ({ ok: false, reason: 'exit 10' });
    t.start('uid-1', 'pv-a', fail);
    await t.idle();
    t.consume('uid-1');
    expect(t.start('uid-1', 'pv-a', fail).started).toBe(false);
    now = retryDelayMs(1);
    expect(t.start('uid-1', 'pv-a', fail).started).toBe(true);
    await t.idle();
    expect(t.consume('uid-1')).toMatchObject({ failures: 2, retryAt: now + retryDelayMs(2) });
    expect(retryDelayMs(2)).toBe(2 * retryDelayMs(1));
  });

  test('a task that throws is a failure, not a crash', async () => {
    const t = table();
    t.start('uid-1', 'pv-a', async () => {
      throw new Error('boom');
    });
    await t.idle();
    expect(t.get('uid-1')).toMatchObject({ state: 'failed', reason: 'boom' });
  });

  test('a cleanup that outlives the timeout is aborted and fails', async () => {
    const t = table({ timeoutMs: 20 });
    const c = controllable();
    t.start('uid-1', 'pv-a', async (signal) => {
      const r = c.task(signal);
      signal.addEventListener('abort', () => c.finish({ ok: false, reason: `stopped: ${String(signal.reason)}` }));
      return r;
    });
    await t.idle();
    expect(t.get('uid-1')).toMatchObject({ state: 'failed', reason: expect.stringContaining('timed out after 20 ms') });
  });

  test('discovery sees a running cleanup by PV name', () => {
    const t = table();
    const c = controllable();
    t.start('uid-1', 'pv-a', c.task);
    expect(t.isActiveForName('pv-a')).toBe(true);
    expect(t.isActiveForName('pv-b')).toBe(false);
    c.finish({ ok: true });
  });

  test('finished entries of PVs that no longer exist are forgotten, running ones are kept', async () => {
    const t = table();
    t.start('uid-done', 'pv-a', async () => ({ ok: false, reason: 'x' }));
    await t.idle();
    const c = controllable();
    t.start('uid-running', 'pv-b', c.task);
    t.retainOnly(new Set());
    expect(t.get('uid-done')).toBeUndefined();
    expect(t.get('uid-running')).toBeDefined();
    c.finish({ ok: true });
  });

  test('no more cleanups run at once than the limit; the rest wait their turn', async () => {
    const t = table({ max: 2 });
    const tasks = [controllable(), controllable(), controllable()];
    tasks.forEach((c, i) => t.start(`uid-${i}`, `pv-${i}`, c.task));
    await Promise.resolve();
    expect(t.counts()).toMatchObject({ running: 2, queued: 1 });
    expect(t.get('uid-2')?.state).toBe('queued');
    tasks[0].finish({ ok: true });
    await new Promise((r) => setImmediate(r));
    expect(t.counts()).toMatchObject({ running: 2, queued: 0, succeeded: 1 });
    tasks[1].finish({ ok: true });
    tasks[2].finish({ ok: true });
    await t.idle();
  });

  test('abortAll signals every running cleanup', async () => {
    const t = table();
    const c = controllable();
    t.start('uid-1', 'pv-a', c.task);
    await Promise.resolve();
    t.abortAll();
    expect(c.signal()?.aborted).toBe(true);
    c.finish({ ok: true });
    await t.idle();
    expect(t.get('uid-1')?.state).toBe('failed');
  });
});

describe('the concurrency limiter', () => {
  test('never runs more than its limit at once', async () => {
    const limiter = new ConcurrencyLimiter(3);
    let running = 0;
    let peak = 0;
    await Promise.all(Array.from({ length: 12 }, () => limiter.run(async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 2));
      running--;
    })));
    expect(peak).toBe(3);
    expect(limiter.running).toBe(0);
  });

  test('a failing task frees its slot', async () => {
    const limiter = new ConcurrencyLimiter(1);
    await expect(limiter.run(async () => {
      throw new Error('x');
    })).rejects.toThrow('x');
    await expect(limiter.run(async () => 'next')).resolves.toBe('next');
  });

  test('refuses a limit below 1', () => {
    expect(() => new ConcurrencyLimiter(0)).toThrow('at least 1');
  });
});

describe('retry backoff', () => {
  test('doubles from the initial delay up to the maximum', () => {
    const policy = { initialMs: 1000, maxMs: 5000 };
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, policy))).toEqual([1000, 2000, 4000, 5000, 5000]);
  });

  test('the next retry time is the failure time plus the delay', () => {
    expect(nextRetryAt(2, 10_000, { initialMs: 1000 })).toBe(12_000);
  });
});
