import { VirtualClock } from './virtual-clock';
import { KubeApiError } from '../../../src/runtime/kube/errors';
import { HttpStatusError } from '../../../src/runtime/kube/http-transport';
import { ApiRequestRecord, KubeRequester } from '../../../src/runtime/kube/request';

/** A read: sent again on any failure that may pass. */
const target = { verb: 'get', resource: 'persistentvolumes', name: 'local-pv-1' } as const;
/** A write: sent again only where it cannot have been applied twice. */
const write = { verb: 'create', resource: 'persistentvolumes', name: 'local-pv-1' } as const;

function statusError(code: number, reason = 'X', message = 'x', headers: Record<string, string> = {}) {
  return new HttpStatusError(code, JSON.stringify({ kind: 'Status', code, reason, message }), headers);
}

/** A send that fails with the given errors in turn, then answers `ok`. */
function failingThen(...errors: unknown[]) {
  const calls: number[] = [];
  const send = async () => {
    calls.push(calls.length);
    const err = errors[calls.length - 1];
    if (err) throw err;
    return 'ok';
  };
  return { send, calls };
}

function requester(extra: { maxAttempts?: number } = {}) {
  const clock = new VirtualClock();
  const records: ApiRequestRecord[] = [];
  const r = new KubeRequester({
    clock, random: () => 0, onRequest: (rec) => records.push(rec), backoff: { initialMs: 100 }, burst: 100, ...extra,
  });
  return { r, clock, records };
}

describe('KubeRequester', () => {
  test('retries 500 and 503 with exponential backoff, then succeeds', async () => {
    const { r, clock } = requester();
    const { send, calls } = failingThen(statusError(500), statusError(503));
    await expect(r.call(target, send)).resolves.toBe('ok');
    expect(calls).toHaveLength(3);
    expect(clock.sleeps).toEqual([100, 200]);
  });

  test('waits as long as a 429 Retry-After asks', async () => {
    const { r, clock } = requester();
    const { send } = failingThen(statusError(429, 'TooManyRequests', 'slow down', { 'retry-after': '2' }));
    await r.call(target, send);
    expect(clock.sleeps).toEqual([2000]);
  });

  test('retries network errors', async () => {
    const { r } = requester();
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { type: 'system', code: 'ECONNREFUSED' });
    await expect(r.call(target, failingThen(refused, refused).send)).resolves.toBe('ok');
  });

  test.each([403, 404, 409, 422])('surfaces %i at once', async (code) => {
    const { r } = requester();
    const { send, calls } = failingThen(statusError(code));
    await expect(r.call(target, send)).rejects.toBeInstanceOf(KubeApiError);
    expect(calls).toHaveLength(1);
  });

  test('the error names the verb, resource, object and server message', async () => {
    const { r } = requester();
    const err = statusError(422, 'Invalid', 'PersistentVolume "local-pv-1" is invalid: spec.capacity: Required value');
    await expect(r.call(write, failingThen(err).send)).rejects.toThrow(
      'create persistentvolumes "local-pv-1": 422 Invalid: PersistentVolume "local-pv-1" is invalid: spec.capacity: Required value');
  });

  test('an answer without a Status body is named by its HTTP status', async () => {
    const { r } = requester();
    const unauthorized = new HttpStatusError(401, '', {});
    await expect(r.call(write, failingThen(unauthorized).send)).rejects.toThrow('create persistentvolumes "local-pv-1": 401 Unauthorized');
  });

  test('gives up after maxAttempts and says how many were made', async () => {
    const { r } = requester({ maxAttempts: 3 });
    const { send, calls } = failingThen(statusError(503), statusError(503), statusError(503), statusError(503));
    await expect(r.call(target, send)).rejects.toThrow('(after 3 attempts)');
    expect(calls).toHaveLength(3);
  });

  test('reports every attempt with its HTTP method and outcome', async () => {
    const { r, records } = requester();
    await r.call(target, failingThen(statusError(503)).send);
    expect(records.map(({ method, verb, failed, code }) => ({ method, verb, failed, code }))).toEqual([
      { method: 'GET', verb: 'get', failed: true, code: 503 },
      { method: 'GET', verb: 'get', failed: false, code: undefined },
    ]);
  });

  describe('a write (create, update, patch, delete), as client-go\'s rest client decides', () => {
    test('is not sent again after a 500 or 503 without Retry-After: it may have been applied', async () => {
      for (const code of [500, 503]) {
        const { r } = requester();
        const { send, calls } = failingThen(statusError(code));
        await expect(r.call(write, send)).rejects.toMatchObject({ code });
        expect(calls).toHaveLength(1);
      }
    });

    test('is sent again when the server says when (429 or 503 with Retry-After)', async () => {
      const { r, clock } = requester();
      const { send, calls } = failingThen(statusError(429, 'TooManyRequests', 'slow down', { 'retry-after': '1' }),
        statusError(503, 'ServiceUnavailable', 'busy', { 'retry-after': '2' }));
      await expect(r.call(write, send)).resolves.toBe('ok');
      expect([calls.length, clock.sleeps]).toEqual([3, [1000, 2000]]);
    });

    test('is sent again when no connection was made (refused: nothing reached the server)', async () => {
      const { r } = requester();
      const refused = Object.assign(new Error('connect ECONNREFUSED'), { type: 'system', code: 'ECONNREFUSED' });
      await expect(r.call(write, failingThen(refused).send)).resolves.toBe('ok');
    });

    test('is not sent again after a connection reset or a timeout: it may have reached the server', async () => {
      const { r } = requester();
      const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      const { send, calls } = failingThen(reset);
      await expect(r.call(write, send)).rejects.toMatchObject({ kind: 'network' });
      expect(calls).toHaveLength(1);
    });
  });

  test('a cancelled call stops retrying', async () => {
    const { r } = requester();
    const controller = new AbortController();
    const send = async () => {
      controller.abort(new Error('shutting down'));
      throw statusError(503);
    };
    await expect(r.call(target, send, { signal: controller.signal })).rejects.toMatchObject({ kind: 'cancelled' });
  });

  test('each attempt runs under a timeout, on the injected clock, and a timed-out attempt is retried', async () => {
    const clock = new VirtualClock();
    const r = new KubeRequester({ requestTimeoutMs: 20_000, backoff: { initialMs: 1 }, clock });
    let calls = 0;
    let firstSent!: () => void;
    const waiting = new Promise<void>((resolve) => (firstSent = resolve));
    // The first attempt "waits for the server" until its signal aborts, as the transport's request does.
    const send = async (signal: AbortSignal) => {
      calls++;
      if (calls > 1) return 'ok';
      firstSent();
      return new Promise<string>((_, reject) => signal.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' }))));
    };
    const result = r.call(target, send);
    await waiting;
    clock.advance(19_999);
    expect(calls).toBe(1);
    clock.advance(1);
    await expect(result).resolves.toBe('ok');
    expect(calls).toBe(2);
  });
});
