import { VirtualClock } from './virtual-clock';
import { Backoff, backoffDelay, REFLECTOR_BACKOFF, REFLECTOR_BACKOFF_RESET_MS, resolveBackoff } from '../../../src/runtime/kube/backoff';

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

  describe('the reflector\'s (client-go\'s): 800 ms doubling to 30 s, plus up to 100 % jitter, started over after 2 minutes without a failure', () => {
    /** A reflector's backoff on `clock`, its jitter drawn from `draws` in turn. */
    function reflectorBackoff(clock: VirtualClock, draws: number[]): Backoff {
      let i = 0;
      return new Backoff(REFLECTOR_BACKOFF, () => draws[i++ % draws.length], { afterMs: REFLECTOR_BACKOFF_RESET_MS, clock });
    }

    /** `count` failures in a row, each waited out in full: the delays. */
    const failures = (backoff: Backoff, clock: VirtualClock, count: number) => Array.from({ length: count }, () => {
      const delay = backoff.next();
      clock.advance(delay);
      return Math.round(delay);
    });

    test('each delay is its base (800 ms doubling, capped at 30 s) plus the jitter\'s share of it', () => {
      const clock = new VirtualClock();
      expect(failures(reflectorBackoff(clock, [0, 0.5, 0.25, 0.999, 0, 0, 0, 0.5]), clock, 8))
        .toEqual([800, 2400, 4000, 12_794, 12_800, 25_600, 30_000, 45_000]);
    });

    test('it starts over once 2 minutes have passed without a failure since the last delay ended, not before', () => {
      const clock = new VirtualClock();
      const backoff = reflectorBackoff(clock, [0]);
      failures(backoff, clock, 3);
      clock.advance(REFLECTOR_BACKOFF_RESET_MS);
      expect(backoff.next()).toBe(6400);
      clock.advance(6400 + REFLECTOR_BACKOFF_RESET_MS + 1);
      expect(backoff.next()).toBe(800);
    });
  });
});
