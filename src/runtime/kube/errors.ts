import { STATUS_CODES } from 'node:http';
import { describeTarget, RequestTarget } from './request-target';

/** Why a request failed: an HTTP status from the server, or no usable answer at all. */
export type FailureKind = 'status' | 'network' | 'timeout' | 'cancelled' | 'other';

export interface KubeApiErrorDetails {
  readonly kind: FailureKind;
  /** HTTP status, when the server answered. */
  readonly code?: number;
  /** The Status `reason`, e.g. `AlreadyExists`, `NotFound`, `Conflict`. */
  readonly reason?: string;
  /** The Status `message`, or the transport's error text. */
  readonly serverMessage?: string;
  /** How many requests were sent, retries included. */
  readonly attempts: number;
  readonly cause?: unknown;
}

/**
 * A failed API call, after any retries. The message names the verb, resource, object
 * and what the server (or the network) said, so that a log line is enough to act on.
 */
export class KubeApiError extends Error {
  readonly kind: FailureKind;
  readonly code?: number;
  readonly reason?: string;
  readonly serverMessage?: string;
  readonly attempts: number;

  constructor(readonly target: RequestTarget, details: KubeApiErrorDetails) {
    super(formatMessage(target, details), { cause: details.cause });
    this.name = 'KubeApiError';
    this.kind = details.kind;
    this.code = details.code;
    this.reason = details.reason;
    this.serverMessage = details.serverMessage;
    this.attempts = details.attempts;
  }
}

function formatMessage(target: RequestTarget, d: KubeApiErrorDetails): string {
  const after = d.attempts > 1 ? ` (after ${d.attempts} attempts)` : '';
  // Some answers (a 401, proxies) carry no Status: name the HTTP status instead.
  const reason = d.reason ?? (d.code !== undefined ? STATUS_CODES[d.code] : undefined);
  const what = d.kind === 'status'
    ? `${d.code}${reason ? ` ${reason}` : ''}${d.serverMessage ? `: ${d.serverMessage}` : ''}`
    : d.kind === 'timeout' ? `timed out${d.serverMessage ? `: ${d.serverMessage}` : ''}`
      : d.kind === 'cancelled' ? 'cancelled'
        : d.serverMessage ?? 'failed';
  return `${describeTarget(target)}: ${what}${after}`;
}

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 404;
}

export function isAlreadyExists(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 409 && err.reason === 'AlreadyExists';
}

/** A 409 that is not AlreadyExists: a stale resourceVersion or a failed precondition. */
export function isConflict(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 409 && err.reason !== 'AlreadyExists';
}

export function isForbidden(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 403;
}

export function isGone(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 410;
}

/**
 * A create found an object of the same name that is not the one we meant to create,
 * e.g. a PV of another path or another provisioner.
 */
export class ObjectConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ObjectConflictError';
  }
}
