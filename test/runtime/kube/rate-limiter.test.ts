import { VirtualClock } from './virtual-clock';
import { TokenBucket } from '../../../src/runtime/kube/rate-limiter';

describe('TokenBucket', () => {
  test('lets a full burst through without waiting', () => {
    const bucket = new TokenBucket({ qps: 20, burst: 40, clock: new VirtualClock() });
    const waits = Array.from({ length: 40 }, () => bucket.reserve());
    expect(waits.every((w) => w === 0)).toBe(true);
  });

  test('spaces requests beyond the burst at 1/qps, in arrival order', () => {
    const bucket = new TokenBucket({ qps: 20, burst: 2, clock: new VirtualClock() });
    const waits = Array.from({ length: 5 }, () => bucket.reserve());
    expect(waits).toEqual([0, 0, 50, 100, 150]);
  });

  test('refills at qps up to the burst size', () => {
    const clock = new VirtualClock();
    const bucket = new TokenBucket({ qps: 10, burst: 3, clock });
    for (let i = 0; i < 3; i++) bucket.reserve();
    clock.advance(10_000);
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([true, true, true, false]);
  });

  test('take waits for its reserved slot', async () => {
    const clock = new VirtualClock();
    const bucket = new TokenBucket({ qps: 4, burst: 1, clock });
    await bucket.take();
    await bucket.take();
    expect(clock.sleeps).toEqual([250]);
  });

  test('an aborted wait gives its token back', async () => {
    const clock = new VirtualClock();
    const bucket = new TokenBucket({ qps: 1, burst: 1, clock });
    bucket.reserve();
    const aborted = AbortSignal.abort(new Error('stop'));
    await expect(bucket.take(aborted)).rejects.toThrow('stop');
    expect(bucket.reserve()).toBe(1000);
  });

  test('an already aborted signal takes no token', async () => {
    const bucket = new TokenBucket({ qps: 1, burst: 1, clock: new VirtualClock() });
    await expect(bucket.take(AbortSignal.abort(new Error('stop')))).rejects.toThrow('stop');
    expect(bucket.tryTake()).toBe(true);
  });

  test.each([
    [{ qps: 0, burst: 1 }, 'QPS must be a positive number, got 0'],
    [{ qps: 5, burst: 0 }, 'burst must be a whole number of at least 1, got 0'],
    [{ qps: Number.NaN, burst: 1 }, 'QPS must be a positive number, got NaN'],
  ])('rejects %j with a message naming the setting', (options, message) => {
    expect(() => new TokenBucket(options)).toThrow(message);
  });
});
