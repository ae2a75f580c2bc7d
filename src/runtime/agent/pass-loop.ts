/**
 * A node agent's passes, as one runner: one pass at a time, on the period and on
 * triggers (PassScheduler), each under the locks of the directories it acts on
 * (VolumeLocks), and the cleanups the passes start (the process table).
 *
 * Stopping aborts those cleanups, so the pass in flight ends soon, waits for that
 * pass and for every cleanup to end, and only then lets go of the locks: the next
 * agent never acts on a volume this one is still cleaning.
 */
import type { CleanupProcessTable } from '../cleanup';
import { optimizeHeapForSize } from '../lifecycle/heap';
import { PassScheduler } from '../lifecycle/pass-scheduler';
import type { Runner } from '../lifecycle/runners';
import type { Health, Logger, ProvisionerMetrics } from '../observability';
import { VolumeLocks } from './volume-locks';

/** Runs `work` if this agent holds the locks of `dirs`; otherwise the loop tries again soon. */
export type UnderLocks = (dirs: readonly string[], work: () => Promise<void>) => Promise<boolean>;

export interface PassLoopOptions {
  /** Fallback period between passes. */
  readonly periodMs: number;
  /** One pass: what it acts on, it does inside `underLocks`. */
  readonly pass: (underLocks: UnderLocks) => Promise<void>;
  /** The cleanups the passes start. */
  readonly table: CleanupProcessTable;
  readonly health: Health;
  readonly logger: Logger;
  readonly metrics: ProvisionerMetrics;
}

export class PassLoop implements Runner {
  private readonly scheduler: PassScheduler;
  private readonly locks: VolumeLocks;
  private readonly retryTimers = new Set<NodeJS.Timeout>();

  constructor(private readonly options: PassLoopOptions) {
    const { logger, metrics, health } = options;
    this.locks = new VolumeLocks({ logger, metrics, retry: () => this.trigger() });
    this.scheduler = new PassScheduler(async () => {
      await options.pass((dirs, work) => this.locks.run(dirs, work));
      optimizeHeapForSize();
      health.markLoopAlive();
      // Ready also while another agent holds the locks, so a rollout goes on and that agent stops.
      health.markReady();
    }, { periodMs: options.periodMs, onError: (e) => logger.error({ err: e }, 'pass failed; retried on the next trigger or period') });
    // A cleanup's end is news only a pass acts on: its result to report, its volume to offer again (the
    // pass its PV's deletion triggered ran while it was still cleaning), or, once its backoff ends, its retry.
    // Without this, that waited for the period (the device dialect's is 5 minutes).
    options.table.onSettled((entry) => {
      this.trigger();
      if (entry.retryAt === undefined) return;
      const timer = setTimeout(() => {
        this.retryTimers.delete(timer);
        this.trigger();
      }, Math.max(0, entry.retryAt - Date.now()));
      timer.unref();
      this.retryTimers.add(timer);
    });
  }

  /** Asks for a pass soon; cheap to call often, and a no-op before start and after stop. */
  trigger(): void {
    this.scheduler.trigger();
  }

  /** Starts with a pass now. */
  start(): void {
    this.scheduler.start();
  }

  async stop(): Promise<void> {
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.options.table.abortAll();
    await this.scheduler.stop();
    await this.options.table.idle();
    this.locks.releaseAll();
  }
}
