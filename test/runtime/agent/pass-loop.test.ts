import { PassLoop } from '../../../src/runtime/agent/pass-loop';
import { CleanupProcessTable } from '../../../src/runtime/cleanup';
import { ConcurrencyLimiter } from '../../../src/runtime/cleanup/limiter';
import { createLogger, Health, ProvisionerMetrics } from '../../../src/runtime/observability';
import { eventually } from '../kube/fixtures';

/** A pass loop whose period never comes during a test, and the passes it has run. */
function loop(backoffMs = 60 * 60_000) {
  const table = new CleanupProcessTable({ limiter: new ConcurrencyLimiter(1), timeoutMs: 0, backoff: { initialMs: backoffMs, maxMs: backoffMs } });
  const passes = { count: 0, at: [] as number[] };
  const passLoop = new PassLoop({
    periodMs: 60 * 60_000,
    pass: async () => {
      passes.count++;
      passes.at.push(Date.now());
    },
    table,
    health: new Health(),
    logger: createLogger({ level: 'fatal' }),
    metrics: new ProvisionerMetrics({ version: 'test', processMetrics: false }),
  });
  return { table, passes, passLoop };
}

/** A cleanup task that ends when `end` is called. */
function heldTask(ok: boolean) {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => end = resolve);
  return { end, task: async () => { await ended; return ok ? { ok: true as const } : { ok: false as const, reason: 'cleaner exited with code 1' }; } };
}

describe('the pass loop', () => {
  let stop: (() => Promise<void>) | undefined;
  afterEach(async () => stop?.());

  /** A started loop, past its first pass, with one cleanup running until `end` is called. */
  async function runningWithCleanup(ok: boolean, backoffMs?: number) {
    const { table, passes, passLoop } = loop(backoffMs);
    stop = () => passLoop.stop();
    passLoop.start();
    await eventually(async () => passes.count === 1, 'the first pass');
    const { end, task } = heldTask(ok);
    table.start('uid-1', 'local-pv-1', task);
    return { table, passes, end };
  }

  test('a cleanup that ends starts a pass at once, not on the period: its volume is offered again and its result reported', async () => {
    const { passes, end } = await runningWithCleanup(true);

    end();

    await eventually(async () => passes.count === 2, 'a pass after the cleanup ended');
  });

  test('a failed cleanup starts a pass to report it, and another once its backoff ends, for the retry', async () => {
    const { table, passes, end } = await runningWithCleanup(false, 300);

    end();

    await eventually(async () => passes.count === 2, 'a pass to report the failure');
    await eventually(async () => passes.count === 3, 'a pass when the backoff ends');
    expect(passes.at[2]).toBeGreaterThanOrEqual(table.get('uid-1')!.retryAt!);
  });
});
