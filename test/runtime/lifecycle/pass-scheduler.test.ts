import { PassScheduler } from '../../../src/runtime/lifecycle/pass-scheduler';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('PassScheduler', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('starts with an immediate pass and repeats on the period', async () => {
    let passes = 0;
    const s = new PassScheduler(async () => void passes++, { periodMs: 10_000 });
    s.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(passes).toBe(1);
    await jest.advanceTimersByTimeAsync(9_999);
    expect(passes).toBe(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(passes).toBe(2);
    await s.stop();
  });

  test('a trigger starts a pass after the debounce, long before the period', async () => {
    let passes = 0;
    const s = new PassScheduler(async () => void passes++, { periodMs: 10_000, debounceMs: 100 });
    s.start();
    await jest.advanceTimersByTimeAsync(0);
    s.trigger();
    s.trigger();
    await jest.advanceTimersByTimeAsync(100);
    expect(passes).toBe(2);
    await s.stop();
  });

  test('triggers during a pass coalesce into exactly one more pass', async () => {
    const gates = [deferred(), deferred()];
    let passes = 0;
    const s = new PassScheduler(() => gates[passes++]?.promise ?? Promise.resolve(), { periodMs: 60_000, debounceMs: 10 });
    s.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(passes).toBe(1);
    for (let i = 0; i < 5; i++) s.trigger();
    gates[0].resolve();
    await jest.advanceTimersByTimeAsync(10);
    expect(passes).toBe(2);
    gates[1].resolve();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(passes).toBe(2);
    await s.stop();
  });

  test('a pass that throws is reported and the schedule goes on', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    const s = new PassScheduler(async () => {
      passes++;
      throw new Error('boom');
    }, { periodMs: 1_000, onError: (e) => errors.push(e) });
    s.start();
    await jest.advanceTimersByTimeAsync(1_000);
    expect(passes).toBe(2);
    expect(errors).toHaveLength(2);
    await s.stop();
  });

  test('after stop no pass runs', async () => {
    let passes = 0;
    const s = new PassScheduler(async () => void passes++, { periodMs: 1_000 });
    s.start();
    await jest.advanceTimersByTimeAsync(0);
    await s.stop();
    s.trigger();
    await jest.advanceTimersByTimeAsync(5_000);
    expect(passes).toBe(1);
  });
});
