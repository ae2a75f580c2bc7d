/**
 * The cleanup process table: which cleanups are waiting, running, succeeded
 * or failed, keyed by PV **UID**.
 *
 * Upstream keys it by PV name, so an old "succeeded" left for a name lets a new
 * PV of the same name be deleted without being cleaned (data handed to the
 * next user). A UID is never reused, so a new PV always starts from nothing.
 *
 * Every cleanup gets the concurrency limiter's turn, a timeout (its signal is
 * aborted; cleaners stop on it), and after failures an exponential backoff
 * before it may start again. Finished entries are consumed by the controller:
 * a consumed success disappears, a consumed failure stays only to remember its
 * backoff. Put the PV deletion inside the task, so that "succeeded" means
 * "cleaned and deleted" and no success can be used later for anything else.
 */
import type { ConcurrencyLimiter } from './limiter';
import { nextRetryAt, type BackoffPolicy } from './retry-backoff';

export type CleanupState = 'queued' | 'running' | 'succeeded' | 'failed';

export type TaskOutcome =
  | { readonly ok: true }
  /** `kind` classifies the failure for its reporter (e.g. a cleanup refused for safety vs a cleaner that failed). */
  | { readonly ok: false; readonly reason: string; readonly kind?: string };

/** A cleanup's work; it must stop soon after `signal` is aborted. */
export type CleanupTask = (signal: AbortSignal) => Promise<TaskOutcome>;

export interface CleanupEntry {
  readonly pvUid: string;
  readonly pvName: string;
  readonly state: CleanupState;
  /** When it was accepted (ms since the epoch). */
  readonly queuedAt: number;
  /** When it got a slot and started. */
  readonly startedAt?: number;
  readonly finishedAt?: number;
  /** finishedAt - startedAt. */
  readonly durationMs?: number;
  /** Why it failed. */
  readonly reason?: string;
  /** The failure's kind, as the task classified it. */
  readonly failureKind?: string;
  /** Consecutive failures of this PV's cleanups (0 after a success). */
  readonly failures: number;
  /** A failed entry: not before this time may it start again. */
  readonly retryAt?: number;
  /** Whether the controller has consumed (reported) this result. */
  readonly consumed: boolean;
}

export interface ProcessTableCounts {
  readonly queued: number;
  readonly running: number;
  readonly succeeded: number;
  readonly failed: number;
}

export type StartResult = { readonly started: true } | { readonly started: false; readonly reason: string };

export interface ProcessTableOptions {
  readonly limiter: ConcurrencyLimiter;
  /** A cleanup running longer is aborted and fails. 0 = no limit. */
  readonly timeoutMs: number;
  /** Backoff after failures. */
  readonly backoff?: BackoffPolicy;
  /** Clock (ms since the epoch). @default Date.now */
  readonly now?: () => number;
  /** Called whenever an entry changes (update the proctable gauges here). */
  readonly onChange?: (entry: CleanupEntry) => void;
}

export class CleanupProcessTable {
  private readonly entries = new Map<string, CleanupEntry>();
  private readonly controllers = new Map<string, AbortController>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly settledListeners: ((entry: CleanupEntry) => void)[] = [];
  private readonly now: () => number;

  constructor(private readonly options: ProcessTableOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The entry for a PV UID, if any. */
  get(pvUid: string): CleanupEntry | undefined {
    return this.entries.get(pvUid);
  }

  /**
   * Starts `task` for the PV unless a cleanup of it is queued or running, a
   * finished one is not yet consumed, or a failed one is still backing off.
   */
  start(pvUid: string, pvName: string, task: CleanupTask): StartResult {
    if (!pvUid) return { started: false, reason: `PV "${pvName}" has no UID` };
    const previous = this.entries.get(pvUid);
    const now = this.now();
    if (previous) {
      if (previous.state === 'queued' || previous.state === 'running') {
        return { started: false, reason: `a cleanup of PV "${pvName}" is already ${previous.state}` };
      }
      if (!previous.consumed) {
        return { started: false, reason: `the last cleanup of PV "${pvName}" ${previous.state}; its result has not been consumed` };
      }
      if (previous.state === 'failed' && previous.retryAt !== undefined && now < previous.retryAt) {
        return { started: false, reason: `PV "${pvName}" is backing off until ${new Date(previous.retryAt).toISOString()} after ${previous.failures} failure(s)` };
      }
    }
    const failures = previous?.state === 'failed' ? previous.failures : 0;
    this.set({ pvUid, pvName, state: 'queued', queuedAt: now, failures, consumed: false });

    const controller = new AbortController();
    this.controllers.set(pvUid, controller);
    const run = this.options.limiter.run(async () => this.execute(pvUid, task, controller), () => {
      this.update(pvUid, { state: 'running', startedAt: this.now() });
    }).finally(() => {
      this.controllers.delete(pvUid);
      this.inFlight.delete(run);
    });
    this.inFlight.add(run);
    return { started: true };
  }

  /**
   * Takes a finished result for reporting. A success is removed; a failure is
   * kept (marked consumed) to remember its backoff. Returns undefined while
   * nothing finished is waiting.
   */
  consume(pvUid: string): CleanupEntry | undefined {
    const entry = this.entries.get(pvUid);
    if (!entry || entry.consumed || (entry.state !== 'succeeded' && entry.state !== 'failed')) return undefined;
    if (entry.state === 'succeeded') this.entries.delete(pvUid);
    else this.set({ ...entry, consumed: true });
    return entry;
  }

  /** True while a cleanup of a PV of this name is queued or running (discovery must not recreate it yet). */
  isActiveForName(pvName: string): boolean {
    for (const e of this.entries.values()) {
      if (e.pvName === pvName && (e.state === 'queued' || e.state === 'running')) return true;
    }
    return false;
  }

  /** Forgets finished entries of PVs that no longer exist (running ones finish first). */
  retainOnly(liveUids: ReadonlySet<string>): void {
    for (const [uid, e] of this.entries) {
      if (!liveUids.has(uid) && e.state !== 'queued' && e.state !== 'running') this.entries.delete(uid);
    }
  }

  counts(): ProcessTableCounts {
    const counts = { queued: 0, running: 0, succeeded: 0, failed: 0 };
    for (const e of this.entries.values()) counts[e.state]++;
    return counts;
  }

  /** Aborts every queued and running cleanup (shutdown). */
  abortAll(reason = 'the provisioner is stopping'): void {
    for (const c of this.controllers.values()) c.abort(reason);
  }

  /** Called with each cleanup's entry once it has succeeded or failed. */
  onSettled(listener: (entry: CleanupEntry) => void): void {
    this.settledListeners.push(listener);
  }

  /** Resolves when no cleanup is queued or running. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async execute(pvUid: string, task: CleanupTask, controller: AbortController): Promise<void> {
    const timer = this.options.timeoutMs > 0
      ? setTimeout(() => controller.abort(`timed out after ${this.options.timeoutMs} ms`), this.options.timeoutMs)
      : undefined;
    let outcome: TaskOutcome;
    try {
      outcome = controller.signal.aborted
        ? { ok: false, reason: `stopped before it started: ${String(controller.signal.reason)}` }
        : await task(controller.signal);
    } catch (e) {
      outcome = { ok: false, reason: e instanceof Error ? e.message : String(e) };
    } finally {
      clearTimeout(timer);
    }
    if (outcome.ok && controller.signal.aborted) {
      outcome = { ok: false, reason: `aborted: ${String(controller.signal.reason)}` };
    }
    const entry = this.entries.get(pvUid)!;
    const finishedAt = this.now();
    const durationMs = finishedAt - (entry.startedAt ?? finishedAt);
    if (outcome.ok) {
      this.update(pvUid, { state: 'succeeded', finishedAt, durationMs, failures: 0, reason: undefined, failureKind: undefined, retryAt: undefined });
    } else {
      const failures = entry.failures + 1;
      this.update(pvUid, {
        state: 'failed',
        finishedAt,
        durationMs,
        failures,
        reason: outcome.reason,
        failureKind: outcome.kind,
        retryAt: nextRetryAt(failures, finishedAt, this.options.backoff),
      });
    }
    const settled = this.entries.get(pvUid)!;
    for (const listener of this.settledListeners) listener(settled);
  }

  private update(pvUid: string, change: Partial<CleanupEntry>): void {
    this.set({ ...this.entries.get(pvUid)!, ...change });
  }

  private set(entry: CleanupEntry): void {
    this.entries.set(entry.pvUid, entry);
    this.options.onChange?.(entry);
  }
}
