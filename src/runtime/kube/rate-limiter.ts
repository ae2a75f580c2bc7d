import { Clock, systemClock } from './clock';

export interface TokenBucketOptions {
  /** Tokens added per second: the steady request rate. */
  readonly qps: number;
  /** Bucket size: how many requests may go at once after a quiet period. */
  readonly burst: number;
  /** @default systemClock */
  readonly clock?: Clock;
}

/**
 * A token bucket like client-go's flowcontrol rate limiter. Waiters reserve their
 * token up front (the balance may go negative), so they are served in arrival order
 * and never starve one another.
 */
export class TokenBucket {
  private readonly qps: number;
  private readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private last: number;

  constructor(options: TokenBucketOptions) {
    if (!(options.qps > 0) || !Number.isFinite(options.qps)) {
      throw new Error(`kube API QPS must be a positive number, got ${options.qps}`);
    }
    if (!(options.burst >= 1) || !Number.isInteger(options.burst)) {
      throw new Error(`kube API burst must be a whole number of at least 1, got ${options.burst}`);
    }
    this.qps = options.qps;
    this.burst = options.burst;
    this.clock = options.clock ?? systemClock;
    this.tokens = options.burst;
    this.last = this.clock.now();
  }

  /** Takes a token if one is available now, without waiting. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Reserves the next token and returns how many milliseconds to wait before using it. */
  reserve(): number {
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Waits for a token. If the signal aborts while waiting, the reserved token is returned. */
  async take(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const wait = this.reserve();
    if (wait <= 0) return;
    try {
      await this.clock.sleep(wait, signal);
    } catch (err) {
      this.tokens += 1;
      throw err;
    }
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }
}
