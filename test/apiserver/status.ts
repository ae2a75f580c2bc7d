/**
 * Errors as the real API server reports them: `Status` bodies with a reason and
 * code, and messages worded as the apiserver words them (k8s.io/apimachinery
 * pkg/api/errors), because clients branch on reason and code.
 */
import { ResourceType, qualifiedResource } from './resources';

export interface StatusCause {
  readonly reason?: string;
  readonly message: string;
  readonly field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** An error the server answers with as a `Status` body. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  /** The body the server sends for this error. */
  toStatus(): object {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

function gr(r: ResourceType, name?: string): StatusDetails {
  return { ...(name !== undefined ? { name } : {}), ...(r.group ? { group: r.group } : {}), kind: r.resource };
}

export function notFound(r: ResourceType, name: string): ApiError {
  return new ApiError(404, 'NotFound', `${qualifiedResource(r)} "${name}" not found`, gr(r, name));
}

export function alreadyExists(r: ResourceType, name: string): ApiError {
  return new ApiError(409, 'AlreadyExists', `${qualifiedResource(r)} "${name}" already exists`, gr(r, name));
}

export function conflict(r: ResourceType, name: string, why: string): ApiError {
  return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(r)} "${name}": ${why}`, gr(r, name));
}

export const STALE_OBJECT = 'the object has been modified; please apply your changes to the latest version and try again';

export function invalid(r: ResourceType, name: string, causes: StatusCause[]): ApiError {
  const list = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
  const summary = list.length === 1 ? list[0] : `[${list.join(', ')}]`;
  return new ApiError(422, 'Invalid', `${r.kind}${r.group ? `.${r.group}` : ''} "${name}" is invalid: ${summary}`, {
    name,
    ...(r.group ? { group: r.group } : {}),
    kind: r.kind,
    causes: causes.map((c) => ({ reason: c.reason ?? 'FieldValueInvalid', message: c.message, field: c.field })),
  });
}

export function badRequest(message: string): ApiError {
  return new ApiError(400, 'BadRequest', message);
}

export function gone(message: string): ApiError {
  return new ApiError(410, 'Expired', message);
}

export function forbidden(r: ResourceType, name: string | undefined, why: string): ApiError {
  const what = name ? `${qualifiedResource(r)} "${name}"` : qualifiedResource(r);
  return new ApiError(403, 'Forbidden', `${what} is forbidden: ${why}`, gr(r, name));
}

/** 415: a body in a format this endpoint does not decode. */
export function unsupportedMediaType(accepted: string[]): ApiError {
  return new ApiError(415, 'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`);
}

/** The 404 for a URL that names no served resource. */
export function noSuchPath(): ApiError {
  return new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
}

export function methodNotAllowed(): ApiError {
  return new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
}

/** A failure injected by a test, worded as the real server words it for that code. */
export function injected(code: number, retryAfterSeconds?: number): ApiError {
  const reason = REASONS[code] ?? 'Unknown';
  switch (code) {
    case 429:
      return new ApiError(429, reason, 'Too many requests, please try again later.', { retryAfterSeconds: retryAfterSeconds ?? 1 });
    case 500:
      return new ApiError(500, reason, 'Internal error occurred: injected fault', { causes: [{ message: 'injected fault' }] });
    case 503:
      return new ApiError(503, reason, 'The server is currently unable to handle the request', retryAfterSeconds ? { retryAfterSeconds } : {});
    case 409:
      return new ApiError(409, reason, `Operation cannot be fulfilled: ${STALE_OBJECT}`, {});
    case 504:
      return new ApiError(504, reason, 'Timeout: request did not complete within requested timeout - context deadline exceeded', {});
    default:
      return new ApiError(code, reason, `injected fault with code ${code}`, {});
  }
}
