import { Clock } from '../../../src/runtime/kube/clock';

/**
 * A clock whose sleeps return at once and move time forward by the amount slept,
 * so that retry and rate-limit schedules can be read off without waiting.
 */
export class VirtualClock implements Clock {
  readonly sleeps: number[] = [];
  private time = 0;

  now(): number {
    return this.time;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    this.sleeps.push(ms);
    this.time += ms;
  }

  advance(ms: number): void {
    this.time += ms;
  }
}
