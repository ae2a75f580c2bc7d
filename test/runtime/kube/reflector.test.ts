/**
 * The reflector on its own, against a scripted list and watch: what it lists and watches
 * from, what it reports, and how it recovers (410, failing and silent watches, a 403),
 * with time on a virtual clock. Its work against a real apiserver is in pv-cache.test.ts.
 */
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { VirtualClock } from './virtual-clock';
import { KubeApi, PageRequest, WatchRequest } from '../../../src/runtime/kube/api-client';
import { KubeApiError } from '../../../src/runtime/kube/errors';
import { KubeLogger } from '../../../src/runtime/kube/logger';
import { Change, Reflector, ReflectorOptions } from '../../../src/runtime/kube/reflector';
import { CallOptions } from '../../../src/runtime/kube/request';

const thing = (name: string, resourceVersion: string): KubernetesObject => ({ metadata: { name, resourceVersion } });
const page = (resourceVersion: string, ...items: KubernetesObject[]): KubernetesListObject<KubernetesObject> =>
  ({ items, metadata: { resourceVersion } });
const failure = (code: number) => new KubeApiError({ verb: 'watch', resource: 'things' }, { kind: 'status', code, attempts: 1 });

/** One watch as the script has it: refused before it opens, or opened with events, then ended by the server or left open. */
type WatchStep = { readonly refuse: KubeApiError } | { readonly events?: Array<[type: string, object: KubernetesObject]>; readonly then: 'end' | 'stay-open' };

/** The list and watch the reflector calls, answering from a script; once the script is done, a watch stays open. */
class Script {
  readonly lists: PageRequest[] = [];
  readonly watches: WatchRequest[] = [];

  readonly api = {
    watch: async (request: WatchRequest, onEvent: (type: string, raw: unknown) => void, signal: AbortSignal, onOpen?: () => void) => {
      this.watches.push(request);
      this.log.push('watch');
      const step = this.steps.shift() ?? { then: 'stay-open' };
      if ('refuse' in step) throw step.refuse;
      onOpen?.();
      for (const [type, object] of step.events ?? []) onEvent(type, object);
      if (step.then === 'end') return;
      await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    },
  } as unknown as KubeApi;

  /** Each list and watch in turn ('list', 'watch'); a clock from `loggedClock` adds its waits. */
  readonly log: string[] = [];

  constructor(private readonly pages: Array<KubernetesListObject<KubernetesObject>>, private readonly steps: WatchStep[]) {}

  /** A virtual clock whose sleeps are written to the log, as `wait <ms>`. */
  loggedClock(): VirtualClock {
    const clock = new VirtualClock();
    const sleep = clock.sleep.bind(clock);
    clock.sleep = (ms, signal) => {
      this.log.push(`wait ${Math.round(ms)}`);
      return sleep(ms, signal);
    };
    return clock;
  }

  readonly list = async (request: PageRequest): Promise<KubernetesListObject<KubernetesObject>> => {
    this.lists.push(request);
    this.log.push('list');
    const next = this.pages.shift();
    if (!next) throw new Error('the script has no more lists');
    return next;
  };
}

/** Lets the reflector's promise chains run until `condition` holds (no wall-clock time involved). */
async function settled(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 10_000; turn++) {
    if (condition()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never came to pass: ${what}`);
}

const reflectors: Array<Reflector<KubernetesObject>> = [];
afterEach(async () => {
  for (const r of reflectors.splice(0)) await r.stop();
});

function reflect(script: Script, options: Partial<ReflectorOptions<KubernetesObject>> = {}) {
  const clock = new VirtualClock();
  const reflector = new Reflector<KubernetesObject>(script.api, {
    resource: 'things', watchPath: '/api/v1/things', list: script.list, clock, watchTimeoutSeconds: 10, ...options,
  });
  reflectors.push(reflector);
  const changes: string[] = [];
  reflector.onChange((c: Change<KubernetesObject>) => changes.push(`${c.type} ${c.object.metadata!.name}@${c.object.metadata!.resourceVersion}`));
  return { reflector, changes, clock };
}

describe('Reflector', () => {
  test('lists (the first time from the watch cache), then watches from the list\'s resourceVersion; each event is one change', async () => {
    const script = new Script([page('5', thing('a', '1'))], [
      { events: [['ADDED', thing('b', '6')], ['MODIFIED', thing('a', '7')], ['DELETED', thing('b', '8')]], then: 'stay-open' },
    ]);
    const { reflector, changes } = reflect(script);
    await reflector.start();
    await settled(() => changes.length === 4, 'four changes');
    expect(changes).toEqual(['add a@1', 'add b@6', 'update a@7', 'delete b@6']);
    expect(script.lists[0].resourceVersion).toBe('0');
    expect(script.watches.map((w) => w.resourceVersion)).toEqual(['5']);
    expect(reflector.list()).toEqual([thing('a', '7')]);
  });

  test('a watch the server ends is opened again from the last resourceVersion seen, a bookmark\'s included, without a list', async () => {
    const script = new Script([page('5')], [
      { events: [['ADDED', thing('b', '6')], ['BOOKMARK', { metadata: { resourceVersion: '9' } }]], then: 'end' },
      { then: 'stay-open' },
    ]);
    const { reflector } = reflect(script);
    await reflector.start();
    await settled(() => script.watches.length === 2, 'a second watch');
    expect(script.watches.map((w) => w.resourceVersion)).toEqual(['5', '9']);
    expect(script.lists).toHaveLength(1);
  });

  test('410 Gone: a consistent relist (no resourceVersion), reporting exactly what differs from the copy', async () => {
    const script = new Script([page('5', thing('a', '1'), thing('b', '2')), page('10', thing('a', '3'), thing('c', '4'))], [
      { refuse: failure(410) },
      { then: 'stay-open' },
    ]);
    const { reflector, changes } = reflect(script);
    await reflector.start();
    await settled(() => script.watches.length === 2, 'a watch after the relist');
    expect(changes).toEqual(['add a@1', 'add b@2', 'update a@3', 'add c@4', 'delete b@2']);
    expect(script.lists.map((l) => l.resourceVersion)).toEqual(['0', undefined]);
    expect(script.watches.map((w) => w.resourceVersion)).toEqual(['5', '10']);
  });

  test('a relist after 410 Gone waits out a backoff first, as every list or watch after a failure', async () => {
    const script = new Script([page('5'), page('10')], [{ refuse: failure(410) }, { then: 'stay-open' }]);
    const { reflector } = reflect(script, { clock: script.loggedClock(), random: () => 0.5 });
    await reflector.start();
    await settled(() => script.watches.length === 2, 'a watch after the relist');
    expect(script.log).toEqual(['list', 'watch', 'wait 1200', 'list', 'watch']);
  });

  test('failing watches, and the relist after three of them, wait a growing, jittered backoff (client-go\'s: 800 ms doubling, plus up to 100 %)', async () => {
    const script = new Script([page('5'), page('20')], [
      { refuse: failure(500) }, { refuse: failure(500) }, { refuse: failure(500) }, { refuse: failure(500) }, { refuse: failure(500) }, { then: 'stay-open' },
    ]);
    const { reflector } = reflect(script, { clock: script.loggedClock(), random: () => 0.5 });
    await reflector.start();
    await settled(() => script.watches.length === 6, 'a sixth watch');
    expect(script.log).toEqual([
      'list', 'watch', 'wait 1200', 'watch', 'wait 2400', 'watch', 'wait 4800', 'list', 'watch', 'wait 9600', 'watch', 'wait 19200', 'watch',
    ]);
  });

  test('the backoff starts over after two minutes without a failure', async () => {
    const script = new Script([page('5')], [{ refuse: failure(500) }, { events: [['ADDED', thing('b', '6')]], then: 'stay-open' }, { refuse: failure(500) },
      { then: 'stay-open' }]);
    const clock = script.loggedClock();
    const { reflector } = reflect(script, { clock, random: () => 0, watchTimeoutSeconds: 100 });
    await reflector.start();
    await settled(() => reflector.get('b') !== undefined, 'the second watch\'s event');
    // Open and silent past its timeout and grace (160 s): taken for dead, a failure 160 s after the last.
    clock.advance(160_000);
    await settled(() => script.watches.length === 4, 'a fourth watch');
    // 800 again after the healthy spell (not 1600), then growing from there.
    expect(script.log).toEqual(['list', 'watch', 'wait 800', 'watch', 'wait 800', 'watch', 'wait 1600', 'watch']);
  });

  test('a watch silent past its timeout and a minute\'s grace is taken for dead and opened again from where it was', async () => {
    const script = new Script([page('5')], [{ events: [['ADDED', thing('b', '6')]], then: 'stay-open' }, { then: 'stay-open' }]);
    const { reflector, clock } = reflect(script);
    await reflector.start();
    await settled(() => reflector.get('b') !== undefined, 'the event');
    clock.advance(10_000 + 60_000 - 1);
    await new Promise((r) => setImmediate(r));
    expect(script.watches).toHaveLength(1);
    clock.advance(1);
    await settled(() => script.watches.length === 2, 'a new watch');
    expect(script.watches[1].resourceVersion).toBe('6');
  });

  test('three watches failing in a row: the copy is refreshed by a consistent list, then watched from it', async () => {
    const script = new Script([page('5', thing('a', '1')), page('20', thing('a', '15'))], [
      { refuse: failure(500) }, { refuse: failure(500) }, { refuse: failure(500) }, { then: 'stay-open' },
    ]);
    const { reflector, changes } = reflect(script);
    await reflector.start();
    await settled(() => script.watches.length === 4, 'a fourth watch');
    expect(script.lists.map((l) => l.resourceVersion)).toEqual(['0', undefined]);
    expect(script.watches.map((w) => w.resourceVersion)).toEqual(['5', '5', '5', '20']);
    expect(changes).toEqual(['add a@1', 'update a@15']);
  });

  test('with readsWithoutWatch, a 403 lets start() resolve and makes the copy unusable; a watch that opens makes it usable again', async () => {
    const logged: string[] = [];
    const logger: KubeLogger = { debug: () => {}, info: (_f, m) => logged.push(m), warn: () => {}, error: () => {} };
    const script = new Script([page('5'), page('7')], [{ refuse: failure(403) }, { then: 'stay-open' }]);
    const { reflector } = reflect(script, { logger, readsWithoutWatch: { whileForbidden: 'reading by name' } });
    await reflector.start();
    await settled(() => script.watches.length === 2, 'a watch after the 403');
    expect(reflector.usable()).toBe(true);
    expect(logged).toEqual([
      expect.stringMatching(/^list\/watch forbidden \(403\); reading by name meanwhile/),
      'list/watch allowed again; watching',
    ]);
    // The copy may have missed changes while forbidden: it was listed again.
    expect(script.watches.map((w) => w.resourceVersion)).toEqual(['5', '7']);
  });

  test('stop() ends the open watch, opens no other, and the copy is no longer usable', async () => {
    const script = new Script([page('5')], [{ then: 'stay-open' }]);
    const { reflector } = reflect(script);
    await reflector.start();
    await settled(() => script.watches.length === 1, 'the watch');
    await reflector.stop();
    expect(reflector.usable()).toBe(false);
    expect(script.watches).toHaveLength(1);
  });

  test('stop() before the first list rejects whoever waits for it, naming the resource', async () => {
    const script = new Script([], []);
    // A list that never answers until it is cancelled, as a request to a hung server.
    const hung = (_page: PageRequest, options: CallOptions) => new Promise<KubernetesListObject<KubernetesObject>>((_resolve, reject) => {
      options.signal?.addEventListener('abort', () => reject(options.signal!.reason), { once: true });
    });
    const { reflector } = reflect(script, { list: hung });
    const started = reflector.start();
    await reflector.stop();
    await expect(started).rejects.toThrow('things reflector stopped before its first list');
  });
});
