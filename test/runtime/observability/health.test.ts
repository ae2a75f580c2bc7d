import { Health } from '../../../src/runtime/observability/health';

/** A clock the test moves by hand. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000_000;
  return { now: () => t, advance: (ms) => { t += ms; } };
}

describe('Health', () => {
  test('a loop that has not turned yet is alive', () => {
    expect(new Health({ stuckAfterMs: 1000, now: manualClock().now }).liveness().ok).toBe(true);
  });

  test('the loop is stuck once no heartbeat came for longer than the threshold', () => {
    const clock = manualClock();
    const health = new Health({ stuckAfterMs: 60_000, now: clock.now });
    clock.advance(60_000);
    expect(health.liveness().ok).toBe(true);
    clock.advance(1);
    expect(health.liveness()).toEqual({ ok: false, message: 'loop stuck: no heartbeat for 60s (threshold 60s)' });
  });

  test('a heartbeat makes a stuck loop alive again', () => {
    const clock = manualClock();
    const health = new Health({ stuckAfterMs: 1000, now: clock.now });
    clock.advance(5000);
    health.markLoopAlive();
    expect(health.liveness().ok).toBe(true);
  });

  test('is not ready before the first complete pass', () => {
    expect(new Health().readiness()).toEqual({ ok: false, message: 'not ready: the first complete pass has not finished' });
  });

  test('stays ready after the first complete pass, whatever happens to the loop', () => {
    const clock = manualClock();
    const health = new Health({ stuckAfterMs: 1000, now: clock.now });
    health.markReady();
    clock.advance(10_000);
    expect(health.readiness()).toEqual({ ok: true, message: 'ok' });
  });

  test('a blocker withdraws readiness and says why, until the work is ready again', () => {
    const health = new Health();
    health.markReady();
    health.markBlocked('the Lease is forbidden');
    expect(health.readiness()).toEqual({ ok: false, message: 'not ready: the Lease is forbidden' });
    health.markReady();
    expect(health.readiness()).toEqual({ ok: true, message: 'ok' });
  });

  test('a condition withholds readiness while it lasts and says why', () => {
    const health = new Health();
    let stale: string | undefined;
    health.whileUnready(() => stale);
    health.markReady();
    expect(health.readiness()).toEqual({ ok: true, message: 'ok' });
    stale = 'the PV cache is 75s old';
    expect(health.readiness()).toEqual({ ok: false, message: 'not ready: the PV cache is 75s old' });
    stale = undefined;
    expect(health.readiness()).toEqual({ ok: true, message: 'ok' });
  });
});
