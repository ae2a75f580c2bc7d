/**
 * Exactly one agent acts on a node's volumes at a time: a pass runs only while
 * this agent holds the lock of every directory it discovers and cleans in (the
 * directory dialect's class directories, the device dialect's deviceDir).
 *
 * The agent that comes second waits: it serves its endpoints and reports itself
 * ready (so a DaemonSet rolling out with `maxSurge` goes on and stops the old
 * agent), says in its log and in a metric that it waits, and takes over within a
 * second of the other agent's exit. Both dialects on one node lock different
 * directories, so they never wait for each other.
 */
import * as fs from 'node:fs';
import { Logger, ProvisionerMetrics } from '../observability';
import { HeldLock, releaseLock, stillLocks, tryLockDirectory } from '../volume/directory-lock';

export interface VolumeLocksDeps {
  readonly logger: Logger;
  readonly metrics: ProvisionerMetrics;
  /** Called to try again while another agent holds the locks. */
  readonly retry: () => void;
  /** How soon to try again. @default 1000 */
  readonly retryMs?: number;
}

export type LocksState =
  | { readonly held: true }
  /** Another agent holds these directories. */
  | { readonly held: false; readonly busy: readonly string[] };

export class VolumeLocks {
  private readonly locks = new Map<string, HeldLock>();
  private waitingFor = '';
  private retryTimer?: NodeJS.Timeout;

  constructor(private readonly deps: VolumeLocksDeps) {}

  /**
   * Runs `pass` when this agent holds the locks of `dirs`; otherwise says that it
   * waits (once per change) and tries again soon. Returns whether the pass ran.
   */
  async run(dirs: readonly string[], pass: () => Promise<void>): Promise<boolean> {
    const state = await this.hold(dirs);
    this.deps.metrics.setWaitingForAnotherAgent(!state.held);
    if (!state.held) {
      const key = state.busy.join(',');
      if (key !== this.waitingFor) {
        this.deps.logger.warn({ directories: state.busy }, 'another agent on this node holds these volume directories; waiting for it to stop');
      }
      this.waitingFor = key;
      clearTimeout(this.retryTimer);
      this.retryTimer = setTimeout(this.deps.retry, this.deps.retryMs ?? 1000);
      this.retryTimer.unref();
      return false;
    }
    if (this.waitingFor) this.deps.logger.info('the other agent let go of the volume directories; this agent acts on them now');
    this.waitingFor = '';
    await pass();
    return true;
  }

  /**
   * Holds the locks of exactly `dirs` (taking new ones, letting go of those no
   * longer wanted), and says whether this agent holds them all. A directory that
   * does not exist needs no lock: nothing can be discovered or cleaned in it.
   */
  async hold(dirs: readonly string[]): Promise<LocksState> {
    const wanted = new Set(dirs);
    for (const [dir, lock] of this.locks) {
      if (!wanted.has(dir) || !stillLocks(lock)) {
        releaseLock(lock);
        this.locks.delete(dir);
      }
    }
    const busy: string[] = [];
    for (const dir of wanted) {
      if (this.locks.has(dir) || !fs.existsSync(dir)) continue;
      // Two classes may name one directory (two mounts of one host directory): one lock serves both.
      const st = fs.statSync(dir, { bigint: true });
      const same = [...this.locks.values()].find((l) => l.dev === st.dev && l.ino === st.ino);
      if (same) continue;
      const lock = await tryLockDirectory(dir);
      if (lock) this.locks.set(dir, lock);
      else busy.push(dir);
    }
    return busy.length === 0 ? { held: true } : { held: false, busy };
  }

  /** Lets go of every lock (shutdown). */
  releaseAll(): void {
    clearTimeout(this.retryTimer);
    for (const lock of this.locks.values()) releaseLock(lock);
    this.locks.clear();
  }
}
