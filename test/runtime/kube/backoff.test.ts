import { Backoff, backoffDelay, resolveBackoff } from '../../../src/runtime/kube/backoff';

describe('backoff', () => {
  const noJitter = resolveBackoff({ initialMs: 100, maxMs: 1000, jitter: 0 });

  test('doubles from the initial delay up to the maximum', () => {
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(n, noJitter))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  test('jitter adds up to its fraction of the delay', () => {
    const b = resolveBackoff({ initialMs: 100, jitter: 0.5 });
    expect(backoffDelay(0, b, () => 0)).toBe(100);
    expect(backoffDelay(0, b, () => 0.999)).toBeCloseTo(149.95);
  });

  test('defaults: 250 ms initial, 30 s cap, factor 2, half jitter', () => {
    expect(resolveBackoff()).toEqual({ initialMs: 250, maxMs: 30_000, factor: 2, jitter: 0.5 });
  });

  test('Backoff grows with consecutive failures and starts over after reset', () => {
    const backoff = new Backoff(noJitter);
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 200, 400]);
    backoff.reset();
    expect(backoff.next()).toBe(100);
  });
});
