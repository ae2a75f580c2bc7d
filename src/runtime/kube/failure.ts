import { FailureKind } from './errors';
import { ConnectionError, HttpStatusError } from './http-transport';
import type { ApiVerb } from './request-target';

/** One failed attempt, sorted into what the retry loop and the error message need. */
export interface Failure {
  readonly kind: FailureKind;
  readonly code?: number;
  readonly reason?: string;
  readonly serverMessage?: string;
  /** Worth sending again, for a read: 429, 5xx that mean "try later", network errors, timeouts (see mayRetry for writes). */
  readonly retryable: boolean;
  /** The request provably never reached the server (no connection was made): safe to send again whatever it does. */
  readonly notSent?: boolean;
  /** The server's Retry-After, in milliseconds. */
  readonly retryAfterMs?: number;
  readonly cause: unknown;
}

/** How the attempt ended on our side, which the error alone cannot tell. */
export interface AttemptContext {
  /** Our per-request timer fired. */
  readonly timedOut: boolean;
  /** The caller's signal aborted (shutdown). */
  readonly cancelled: boolean;
}

const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

const NETWORK_CODES = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH',
  'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ERR_STREAM_PREMATURE_CLOSE',
  // An HTTP/2 stream or connection broken while its answer was read.
  'ERR_HTTP2_STREAM_ERROR', 'ERR_HTTP2_SESSION_ERROR', 'ERR_HTTP2_STREAM_CANCEL', 'ERR_HTTP2_INVALID_SESSION', 'ERR_HTTP2_GOAWAY_SESSION',
]);

/** Failures to connect at all: nothing of the request reached the server. */
const NOT_CONNECTED_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Whether a failed request may be sent again, as client-go's rest client decides: a read
 * (get, list) on any retryable failure; a write only when the server said when (429 or 5xx
 * with Retry-After), since a write that timed out, was cut off or got a 500 may have been
 * applied. A write is also sent again when the server provably did not process it: an
 * HTTP/2 stream it refused (REFUSED_STREAM, or above a GOAWAY's last stream), as Go's http2
 * transport retries those itself. Where client-go differs: a write is also sent again when
 * no connection was made (refused, unreachable, no DNS answer), which client-go leaves to its
 * caller; nothing was sent.
 */
export function mayRetry(failure: Failure, verb: ApiVerb): boolean {
  if (!failure.retryable) return false;
  if (verb === 'get' || verb === 'list') return true;
  return failure.notSent === true || (failure.kind === 'status' && failure.retryAfterMs !== undefined);
}

export function classifyFailure(err: unknown, attempt: AttemptContext): Failure {
  if (err instanceof HttpStatusError) {
    const code = err.code;
    const status = parseStatus(err.body);
    return {
      kind: 'status',
      code,
      reason: status.reason,
      serverMessage: status.message,
      retryable: RETRYABLE_STATUS.has(code),
      retryAfterMs: parseRetryAfter(firstValue(err.headers['retry-after'])),
      cause: err,
    };
  }
  const e = err as { code?: string; message?: string } | undefined;
  const message = e?.message ?? String(err);
  if (attempt.cancelled) return { kind: 'cancelled', retryable: false, cause: err };
  if (attempt.timedOut) return { kind: 'timeout', serverMessage: message, retryable: true, cause: err };
  if (err instanceof ConnectionError) return { kind: 'network', serverMessage: message, retryable: true, notSent: err.notSent, cause: err };
  if (e?.code !== undefined && NETWORK_CODES.has(e.code)) {
    return { kind: 'network', serverMessage: message, retryable: true, notSent: NOT_CONNECTED_CODES.has(e.code), cause: err };
  }
  return { kind: 'other', serverMessage: message, retryable: false, cause: err };
}

/** Reads `reason` and `message` from a metav1.Status body, or keeps a short plain-text body. */
export function parseStatus(body: unknown): { reason?: string; message?: string } {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      const text = body.trim();
      return text ? { message: text.length > 300 ? `${text.slice(0, 300)}…` : text } : {};
    }
  }
  if (value && typeof value === 'object') {
    const s = value as { reason?: unknown; message?: unknown };
    return {
      reason: typeof s.reason === 'string' && s.reason ? s.reason : undefined,
      message: typeof s.message === 'string' && s.message ? s.message : undefined,
    };
  }
  return {};
}

/** Retry-After as delta-seconds or an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

function firstValue(header: string | string[] | undefined): string | undefined {
  return Array.isArray(header) ? header[0] : header;
}
