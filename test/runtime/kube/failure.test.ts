import { classifyFailure, parseRetryAfter, parseStatus } from '../../../src/runtime/kube/failure';
import { HttpStatusError } from '../../../src/runtime/kube/http-transport';

const settled = { timedOut: false, cancelled: false };

function statusError(code: number, reason: string, message: string, headers: Record<string, string> = {}) {
  return new HttpStatusError(code, JSON.stringify({ kind: 'Status', status: 'Failure', code, reason, message }), headers);
}

describe('classifyFailure', () => {
  test.each([429, 500, 502, 503, 504])('HTTP %i is retryable', (code) => {
    expect(classifyFailure(statusError(code, 'X', 'x'), settled).retryable).toBe(true);
  });

  test.each([400, 401, 403, 404, 409, 410, 422, 501])('HTTP %i is not retryable', (code) => {
    expect(classifyFailure(statusError(code, 'X', 'x'), settled).retryable).toBe(false);
  });

  test('reads reason and message from the Status body', () => {
    const f = classifyFailure(statusError(409, 'AlreadyExists', 'persistentvolumes "a" already exists'), settled);
    expect(f).toMatchObject({ kind: 'status', code: 409, reason: 'AlreadyExists', serverMessage: 'persistentvolumes "a" already exists' });
  });

  test('takes Retry-After in seconds from the headers', () => {
    expect(classifyFailure(statusError(429, 'TooManyRequests', 'slow down', { 'retry-after': '3' }), settled).retryAfterMs).toBe(3000);
  });

  test('a refused connection is a retryable network failure', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(classifyFailure(err, settled)).toMatchObject({ kind: 'network', retryable: true });
  });

  test('an abort caused by our timer is a retryable timeout', () => {
    const err = Object.assign(new Error('The operation was aborted.'), { name: 'AbortError', code: 'ABORT_ERR' });
    expect(classifyFailure(err, { timedOut: true, cancelled: false })).toMatchObject({ kind: 'timeout', retryable: true });
  });

  test('an abort caused by the caller is a final cancellation', () => {
    const err = Object.assign(new Error('The operation was aborted.'), { name: 'AbortError', code: 'ABORT_ERR' });
    expect(classifyFailure(err, { timedOut: false, cancelled: true })).toMatchObject({ kind: 'cancelled', retryable: false });
  });

  test('any other error is final', () => {
    expect(classifyFailure(new TypeError('bad body'), settled)).toMatchObject({ kind: 'other', retryable: false, serverMessage: 'bad body' });
  });
});

describe('parseStatus', () => {
  test('keeps a short plain-text body as the message', () => {
    expect(parseStatus('upstream connect error\n')).toEqual({ message: 'upstream connect error' });
  });

  test('an empty body says nothing', () => {
    expect(parseStatus(undefined)).toEqual({});
  });
});

describe('parseRetryAfter', () => {
  test('reads an HTTP date relative to now', () => {
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', Date.parse('2026-01-01T00:00:00Z'))).toBe(10_000);
  });

  test('ignores garbage', () => {
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});
