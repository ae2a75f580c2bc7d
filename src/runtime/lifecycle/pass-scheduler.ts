/**
 * Runs the controller's pass one at a time: on a period (the fallback the
 * upstream provisioners rely on alone) and soon after any trigger (a change in a
 * discovery directory, the mount table, a PV). Triggers that arrive during a pass
 * coalesce into one more pass, so a burst of changes costs two passes, not N.
 */
export interface PassSchedulerOptions {
  /** Fallback period between passes. */
  readonly periodMs: number;
  /** Delay after a trigger, to gather a burst of changes into one pass. */
  readonly debounceMs?: number;
  /** Called when a pass throws; the scheduler keeps going. */
  readonly onError?: (error: unknown) => void;
}

export class PassScheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private pending = false;
  private stopped = true;
  private readonly debounceMs: number;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly options: PassSchedulerOptions,
  ) {
    this.debounceMs = options.debounceMs ?? 100;
  }

  /** Starts with an immediate pass. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Asks for a pass soon; cheap to call often. */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.pending = true;
      return;
    }
    this.schedule(this.debounceMs);
  }

  /** Stops scheduling and waits for a pass in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.runOnce(), delayMs);
  }

  private async runOnce(): Promise<void> {
    if (this.stopped || this.running) return;
    this.pending = false;
    this.running = this.pass().catch((e) => this.options.onError?.(e));
    await this.running;
    this.running = undefined;
    if (!this.stopped) this.schedule(this.pending ? this.debounceMs : this.options.periodMs);
  }
}
