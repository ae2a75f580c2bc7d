import { OnDemand, Runner, Runners, stopping, together } from '../../../src/runtime/lifecycle/runners';
import { createLogger } from '../../../src/runtime/observability';

const logger = createLogger({ level: 'fatal' });

/** A runner that writes what happens to it into `log`. */
function recorded(name: string, log: string[], fail: { start?: boolean; stop?: boolean } = {}): Runner {
  return {
    start: async () => {
      log.push(`start ${name}`);
      if (fail.start) throw new Error(`${name} cannot start`);
    },
    stop: async () => {
      log.push(`stop ${name}`);
      if (fail.stop) throw new Error(`${name} cannot stop`);
    },
  };
}

describe('Runners', () => {
  test('start in the order given and stop in reverse', async () => {
    const log: string[] = [];
    const runners = new Runners(logger);
    for (const name of ['endpoints', 'caches', 'passes', 'watches']) await runners.start(name, recorded(name, log));
    await runners.stop();
    expect(log).toEqual([
      'start endpoints', 'start caches', 'start passes', 'start watches',
      'stop watches', 'stop passes', 'stop caches', 'stop endpoints',
    ]);
  });

  test('a start that fails stops those started before it, in reverse, and throws on', async () => {
    const log: string[] = [];
    const runners = new Runners(logger);
    await runners.start('endpoints', recorded('endpoints', log));
    await runners.start('caches', recorded('caches', log));
    await expect(runners.start('passes', recorded('passes', log, { start: true }))).rejects.toThrow('passes cannot start');
    expect(log).toEqual(['start endpoints', 'start caches', 'start passes', 'stop caches', 'stop endpoints']);
  });

  test('a stop that fails does not keep the others running', async () => {
    const log: string[] = [];
    const runners = new Runners(logger);
    await runners.start('endpoints', recorded('endpoints', log));
    await runners.start('caches', recorded('caches', log, { stop: true }));
    await runners.start('passes', recorded('passes', log));
    await runners.stop();
    expect(log.filter((l) => l.startsWith('stop'))).toEqual(['stop passes', 'stop caches', 'stop endpoints']);
  });

  test('stopping twice stops each runner once', async () => {
    const log: string[] = [];
    const runners = new Runners(logger);
    await runners.start('endpoints', recorded('endpoints', log));
    await Promise.all([runners.stop(), runners.stop()]);
    expect(log).toEqual(['start endpoints', 'stop endpoints']);
  });

  test('nothing starts once stopping has begun', async () => {
    const runners = new Runners(logger);
    await runners.stop();
    const log: string[] = [];
    await expect(runners.start('late', recorded('late', log))).rejects.toThrow('cannot start late: stopping');
    expect(log).toEqual([]);
  });

  test('a stop waits for the runner started after it to finish stopping', async () => {
    const log: string[] = [];
    const runners = new Runners(logger);
    await runners.start('caches', recorded('caches', log));
    let finish!: () => void;
    await runners.start('passes', { stop: () => new Promise<void>((resolve) => (finish = () => { log.push('pass done'); resolve(); })) });
    const stopped = runners.stop();
    await Promise.resolve();
    expect(log).toEqual(['start caches']);
    finish();
    await stopped;
    expect(log).toEqual(['start caches', 'pass done', 'stop caches']);
  });
});

describe('together', () => {
  test('starts every runner and stops every runner', async () => {
    const log: string[] = [];
    const both = together(recorded('a', log), recorded('b', log));
    await both.start!();
    await both.stop!();
    expect(log.sort()).toEqual(['start a', 'start b', 'stop a', 'stop b']);
  });

  test('when one fails to start, those that started are stopped and the failure is thrown', async () => {
    const log: string[] = [];
    const both = together(recorded('a', log), recorded('b', log, { start: true }));
    await expect(both.start!()).rejects.toThrow('b cannot start');
    expect(log.sort()).toEqual(['start a', 'start b', 'stop a']);
  });
});

describe('stopping', () => {
  test('is a runner with nothing to start', async () => {
    let stopped = false;
    const runners = new Runners(logger);
    await runners.start('timer', stopping(() => {
      stopped = true;
    }));
    await runners.stop();
    expect(stopped).toBe(true);
  });
});

describe('OnDemand', () => {
  test('starts its runner on first need only, and the runners stop it in order with the others', async () => {
    const log: string[] = [];
    const runners = new Runners(logger);
    await runners.start('endpoints', recorded('endpoints', log));
    const claims = new OnDemand(runners, 'claims', recorded('claims', log));
    await runners.start('passes', recorded('passes', log));
    expect(log).toEqual(['start endpoints', 'start passes']);
    await Promise.all([claims.ensure(), claims.ensure()]);
    await runners.stop();
    expect(log).toEqual(['start endpoints', 'start passes', 'start claims', 'stop claims', 'stop passes', 'stop endpoints']);
  });

  test('a failed start stops nothing and is tried again on the next need', async () => {
    const log: string[] = [];
    const runners = new Runners(logger);
    await runners.start('endpoints', recorded('endpoints', log));
    let fail = true;
    const claims = new OnDemand(runners, 'claims', {
      start: () => {
        log.push('start claims');
        if (fail) throw new Error('forbidden');
      },
    });
    await expect(claims.ensure()).rejects.toThrow('forbidden');
    fail = false;
    await claims.ensure();
    expect(log).toEqual(['start endpoints', 'start claims', 'start claims']);
  });
});
