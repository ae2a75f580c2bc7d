import { backoffDelay, BackoffOptions, ResolvedBackoff, resolveBackoff } from './backoff';
import { Clock, systemClock } from './clock';
import { KubeApiError } from './errors';
import { classifyFailure, mayRetry } from './failure';
import { KubeLogger, silentLogger } from './logger';
import { TokenBucket } from './rate-limiter';
import { ApiVerb, describeTarget, HTTP_METHOD, HttpMethod, RequestTarget } from './request-target';

/** One HTTP request to the API server (each retry is one more), for the apiserver_requests_* metrics. */
export interface ApiRequestRecord {
  /** HTTP method: GET, POST, PUT, PATCH, DELETE. */
  readonly method: HttpMethod;
  /** Kubernetes verb: get, list, watch, create, update, patch, delete (upstream's metrics label these `create`/`delete`). */
  readonly verb: ApiVerb;
  readonly resource: string;
  readonly durationSeconds: number;
  readonly failed: boolean;
  /** HTTP status, when the server answered. */
  readonly code?: number;
}

export type ApiRequestObserver = (record: ApiRequestRecord) => void;

export interface KubeRequesterOptions {
  /** Steady requests per second to the API server. @default 20 */
  readonly qps?: number;
  /** Requests allowed at once above the steady rate. @default 40 */
  readonly burst?: number;
  /** Limit on one attempt, from sending to the last byte of the answer. @default 30000 */
  readonly requestTimeoutMs?: number;
  /** Attempts per call, the first included, for retryable failures. @default 6 */
  readonly maxAttempts?: number;
  /** Delays between attempts; maxMs also caps a server's Retry-After. */
  readonly backoff?: BackoffOptions;
  /** Told about every request, for metrics. */
  readonly onRequest?: ApiRequestObserver;
  /** @default silent */
  readonly logger?: KubeLogger;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Source of jitter. @default Math.random */
  readonly random?: () => number;
}

export interface CallOptions {
  /** Stops waiting, the request in flight and further retries (shutdown). */
  readonly signal?: AbortSignal;
  /** Overrides the requester's maxAttempts for this call (1 = no retries). */
  readonly maxAttempts?: number;
}

/** Sends one attempt; `signal` aborts it (our timeout, or the caller's). */
export type Send<T> = (signal: AbortSignal) => Promise<T>;

/**
 * The one door to the API server: every call takes a rate-limit token, gets a timeout,
 * is retried with backoff when the failure is transient, is reported to the metrics
 * observer, and fails with a KubeApiError that says what was attempted.
 */
export class KubeRequester {
  private readonly limiter: TokenBucket;
  private readonly requestTimeoutMs: number;
  private readonly maxAttempts: number;
  private readonly backoff: ResolvedBackoff;
  private readonly onRequest: ApiRequestObserver;
  private readonly logger: KubeLogger;
  private readonly clock: Clock;
  private readonly random: () => number;

  constructor(options: KubeRequesterOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.limiter = new TokenBucket({ qps: options.qps ?? 20, burst: options.burst ?? 40, clock: this.clock });
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.maxAttempts = options.maxAttempts ?? 6;
    this.backoff = resolveBackoff(options.backoff);
    this.onRequest = options.onRequest ?? (() => {});
    this.logger = options.logger ?? silentLogger;
    this.random = options.random ?? Math.random;
  }

  async call<T>(target: RequestTarget, send: Send<T>, options: CallOptions = {}): Promise<T> {
    const maxAttempts = options.maxAttempts ?? this.maxAttempts;
    for (let attempt = 1; ; attempt++) {
      await this.waitOrCancel(target, attempt - 1, () => this.limiter.take(options.signal), options.signal);
      const outcome = await this.attempt(target, send, options);
      if (outcome.ok) return outcome.value;
      const failure = outcome.failure;
      if (!mayRetry(failure, target.verb) || attempt >= maxAttempts) {
        throw new KubeApiError(target, { ...failure, attempts: attempt });
      }
      const delay = failure.retryAfterMs !== undefined
        ? Math.min(failure.retryAfterMs, this.backoff.maxMs)
        : backoffDelay(attempt - 1, this.backoff, this.random);
      this.logger.debug({ request: describeTarget(target), attempt, code: failure.code, kind: failure.kind, delayMs: Math.round(delay) },
        'retrying kube API request');
      await this.waitOrCancel(target, attempt, () => this.clock.sleep(delay, options.signal), options.signal);
    }
  }

  /**
   * A long-lived request (a watch): a rate-limit token, then `run`, with no timeout and
   * no retries (the caller reconnects). It is reported once, when `run` says the server
   * accepted it or when it failed before that; a failure to open is a KubeApiError.
   */
  async stream(target: RequestTarget, signal: AbortSignal, run: (onOpen: () => void) => Promise<void>): Promise<void> {
    await this.waitOrCancel(target, 0, () => this.limiter.take(signal), signal);
    const started = this.clock.now();
    let opened = false;
    try {
      await run(() => {
        opened = true;
        this.report(target, (this.clock.now() - started) / 1000, false);
      });
    } catch (err) {
      if (opened || signal.aborted) throw err;
      const failure = classifyFailure(err, { timedOut: false, cancelled: false });
      this.report(target, (this.clock.now() - started) / 1000, true, failure.code);
      throw new KubeApiError(target, { ...failure, attempts: 1 });
    }
  }

  private report(target: RequestTarget, durationSeconds: number, failed: boolean, code?: number): void {
    try {
      this.onRequest({ method: HTTP_METHOD[target.verb], verb: target.verb, resource: target.resource, durationSeconds, failed, code });
    } catch (err) {
      this.logger.warn({ err }, 'kube API request observer threw');
    }
  }

  private async attempt<T>(target: RequestTarget, send: Send<T>, options: CallOptions):
  Promise<{ ok: true; value: T } | { ok: false; failure: ReturnType<typeof classifyFailure> }> {
    const timeout = new AbortController();
    const cancelTimeout = this.clock.setTimer(this.requestTimeoutMs, () => timeout.abort(new Error(`no answer within ${this.requestTimeoutMs} ms`)));
    const signal = options.signal ? AbortSignal.any([timeout.signal, options.signal]) : timeout.signal;
    const started = this.clock.now();
    try {
      const value = await send(signal);
      this.report(target, (this.clock.now() - started) / 1000, false);
      return { ok: true, value };
    } catch (err) {
      const failure = classifyFailure(err, { timedOut: timeout.signal.aborted, cancelled: options.signal?.aborted ?? false });
      this.report(target, (this.clock.now() - started) / 1000, true, failure.code);
      return { ok: false, failure };
    } finally {
      cancelTimeout();
    }
  }

  private async waitOrCancel(target: RequestTarget, attempts: number, wait: () => Promise<void>, signal?: AbortSignal): Promise<void> {
    try {
      await wait();
    } catch (cause) {
      if (signal?.aborted) throw new KubeApiError(target, { kind: 'cancelled', attempts, cause });
      throw cause;
    }
  }
}
