import { Clock } from '../../../src/runtime/kube/clock';

/**
 * A clock whose sleeps return at once and move time forward by the amount slept,
 * so that retry and rate-limit schedules can be read off without waiting. Its timers
 * fire when time passes them (a sleep or advance()).
 */
export class VirtualClock implements Clock {
  readonly sleeps: number[] = [];
  private time = 0;
  private timers: Array<{ at: number; fn: () => void }> = [];

  now(): number {
    return this.time;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    this.sleeps.push(ms);
    this.advance(ms);
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer = { at: this.time + Math.max(0, ms), fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward, firing the timers it passes, earliest first. */
  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = Math.max(this.time, due.at);
      due.fn();
    }
    this.time = until;
  }
}
