/**
 * The one owner of a command's long-running parts (caches, watchers, the pass
 * loop, the HTTP endpoints): each is started in the order it is given, and on
 * stop they are stopped in reverse, so no part stops while a part started after
 * it, which may use it, still runs. topolvm's node agent keeps its runners so.
 *
 * Parts are built first and started only here: a callback one part holds into
 * another can never run before that other part exists.
 */
import type { Logger } from '../observability';

/** A long-running part. Either step may be absent (a watcher runs from its construction; a setting needs no stop). */
export interface Runner {
  start?(): void | Promise<void>;
  stop?(): void | Promise<void>;
}

/** Runners started together (independent of each other, e.g. caches listing at once) and stopped together. */
export function together(...runners: Runner[]): Runner {
  return {
    start: async () => {
      const started = await Promise.allSettled(runners.map(async (r) => r.start?.()));
      const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) {
        // Those that did start are stopped, as Runners stops what started before a failure.
        await Promise.allSettled(runners.filter((_, i) => started[i].status === 'fulfilled').map(async (r) => r.stop?.()));
        throw failed.reason;
      }
    },
    stop: async () => {
      await Promise.all(runners.map(async (r) => r.stop?.()));
    },
  };
}

/** A runner that only stops something already running (a timer, a connection). */
export function stopping(stop: () => void | Promise<void>): Runner {
  return { stop };
}

export class Runners {
  private readonly started: { readonly name: string; readonly runner: Runner }[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly logger: Logger) {}

  /**
   * Starts `runner` after every runner started before it. When its start throws,
   * the runners already started are stopped, in reverse, and the error is thrown on.
   */
  async start(name: string, runner: Runner): Promise<void> {
    if (this.stopping) throw new Error(`cannot start ${name}: stopping`);
    try {
      await runner.start?.();
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.started.push({ name, runner });
  }

  /** Takes a runner already started elsewhere into the stop order, as if started now. */
  add(name: string, runner: Runner): void {
    if (this.stopping) throw new Error(`cannot add ${name}: stopping`);
    this.started.push({ name, runner });
  }

  /**
   * Stops every started runner, the last started first. A runner whose stop
   * throws is logged and the others still stop: a stuck cache must not keep the
   * HTTP endpoints, or the locks, held. Calling it again waits for the same stop.
   */
  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    for (let next = this.started.pop(); next; next = this.started.pop()) {
      try {
        await next.runner.stop?.();
      } catch (err) {
        this.logger.error({ err, runner: next.name }, 'stopping failed; stopping the others');
      }
    }
  }
}

/**
 * A runner started the first time something needs it, then owned (and stopped) by
 * `runners` like the others: a watch that costs requests, and may need RBAC a
 * deployment lacks, runs only once its configuration asks for it.
 */
export class OnDemand {
  private starting: Promise<void> | undefined;

  constructor(private readonly runners: Runners, private readonly name: string, private readonly runner: Runner) {}

  /** Starts it, once; a start that failed stops nothing else, and is tried again on the next call. */
  ensure(): Promise<void> {
    this.starting ??= (async () => {
      await this.runner.start?.();
      this.runners.add(this.name, this.runner);
    })().catch((err: unknown) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }
}
