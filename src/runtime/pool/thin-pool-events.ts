/**
 * A thin pool's device-mapper events, as they happen: the kernel raises one when the
 * pool's data passes its low-water mark, when it runs out of space and when its mode
 * changes. `dmsetup wait <device> <last event number>` blocks until the next; each
 * starts a pass, so a pool filling up has its capacity withdrawn at once, not a pass
 * period later (when it is full, a tenant's writes hang 60 s and then fail).
 */
import { runOnHost, startOnHost } from './host-command';

/** After a wait that failed (the pool deactivated, dmsetup missing): tried again, not spun on. */
const RETRY_MS = 30_000;

export class ThinPoolEvents {
  private waiting?: { kill(): void };
  private retry?: NodeJS.Timeout;
  private closed = false;

  /** @param uuid the device-mapper UUID of the pool's `-tpool` device */
  constructor(private readonly uuid: string, private readonly onEvent: () => void) {
    void this.next();
  }

  close(): void {
    this.closed = true;
    this.waiting?.kill();
    clearTimeout(this.retry);
  }

  private async next(): Promise<void> {
    if (this.closed) return;
    const count = await runOnHost('dmsetup', ['info', '--columns', '--noheadings', '-o', 'events', '-u', this.uuid]).catch(() => undefined);
    if (this.closed) return;
    if (count === undefined || !/^\d+$/.test(count.trim())) {
      this.retry = setTimeout(() => void this.next(), RETRY_MS);
      this.retry.unref();
      return;
    }
    const wait = startOnHost('dmsetup', ['wait', '-u', this.uuid, count.trim()]);
    this.waiting = wait;
    const code = await wait.exited;
    if (this.closed) return;
    if (code === 0) {
      this.onEvent();
      void this.next();
    } else {
      this.retry = setTimeout(() => void this.next(), RETRY_MS);
      this.retry.unref();
    }
  }
}
