/**
 * What `/healthz` and `/readyz` report. The controller loop calls {@link markLoopAlive}
 * at each turn and {@link markReady} once its first complete pass is done.
 *
 * Liveness means "the loop is not stuck", nothing more: a pass that found bad entries
 * or met API errors is still alive (those are metrics and Events). Readiness, once
 * reached, stays: upstream's readiness dropped on any discovery error, so one stray
 * file kept a node unready for ever. Only a blocker the operator must fix (such as a
 * missing permission) or a lasting condition (such as a PV cache the API server has not
 * confirmed for a minute) withdraws it, and says so.
 */
export interface HealthOptions {
  /**
   * The loop counts as stuck when no heartbeat came for this long. Make it comfortably
   * longer than the loop's longest regular interval (e.g. 3 × the discovery period, or
   * 3 × the device polling interval).
   * @default 120000 (2 minutes)
   */
  readonly stuckAfterMs?: number;
  /**
   * Clock in milliseconds.
   * @default Date.now
   */
  readonly now?: () => number;
}

export interface HealthReport {
  readonly ok: boolean;
  /** One line for the response body and the log. */
  readonly message: string;
}

export const DEFAULT_STUCK_AFTER_MS = 120_000;

export class Health {
  readonly stuckAfterMs: number;
  private readonly now: () => number;
  /** Start counts as a heartbeat: a loop that has not turned yet is starting, not stuck. */
  private lastHeartbeat: number;
  private ready = false;
  /** Why readiness is withheld, when something the operator must fix blocks the work. */
  private blockedBy: string | undefined;
  /** Conditions that withhold readiness while they last, each saying why (see {@link whileUnready}). */
  private readonly conditions: Array<() => string | undefined> = [];

  constructor(options: HealthOptions = {}) {
    this.stuckAfterMs = options.stuckAfterMs ?? DEFAULT_STUCK_AFTER_MS;
    this.now = options.now ?? Date.now;
    this.lastHeartbeat = this.now();
  }

  /** Heartbeat from the controller loop. */
  markLoopAlive(): void {
    this.lastHeartbeat = this.now();
  }

  /** The first complete pass is done; readiness stays from now on (unless {@link markBlocked}). */
  markReady(): void {
    this.ready = true;
    this.blockedBy = undefined;
  }

  /**
   * Withholds readiness for a reason the operator must fix (e.g. a permission the
   * ServiceAccount lacks), said in the `/readyz` body; {@link markReady} lifts it.
   */
  markBlocked(reason: string): void {
    this.ready = false;
    this.blockedBy = reason;
  }

  /**
   * Withholds readiness whenever `condition` returns a reason, e.g. a cache the API
   * server has not confirmed for a while (the agent then acts on an old picture).
   * Readiness comes back by itself once the condition clears.
   */
  whileUnready(condition: () => string | undefined): void {
    this.conditions.push(condition);
  }

  liveness(): HealthReport {
    const silentMs = this.now() - this.lastHeartbeat;
    if (silentMs <= this.stuckAfterMs) return { ok: true, message: 'ok' };
    return {
      ok: false,
      message: `loop stuck: no heartbeat for ${seconds(silentMs)} (threshold ${seconds(this.stuckAfterMs)})`,
    };
  }

  readiness(): HealthReport {
    if (this.ready) {
      const reason = this.conditions.map((c) => c()).find((r) => r !== undefined);
      return reason === undefined ? { ok: true, message: 'ok' } : { ok: false, message: `not ready: ${reason}` };
    }
    return { ok: false, message: `not ready: ${this.blockedBy ?? 'the first complete pass has not finished'}` };
  }
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}
