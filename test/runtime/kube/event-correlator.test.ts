import { VirtualClock } from './virtual-clock';
import { EventCorrelator, eventKey, EventInput } from '../../../src/runtime/kube/event-correlator';

const pv = { apiVersion: 'v1', kind: 'PersistentVolume', name: 'local-pv-1', uid: 'u1' };
const warning = (message: string, involvedObject = pv): EventInput => ({ involvedObject, type: 'Warning', reason: 'ProvisioningFailed', message });

describe('EventCorrelator', () => {
  test('a first event is created, a repeat patches it with a growing count', () => {
    const c = new EventCorrelator('src', new VirtualClock(), { repeatIntervalMs: 0 });
    const first = c.decide(warning('disk gone'));
    expect(first.action).toBe('create');
    c.created((first as { key: string }).key, 'local-pv-1.abc', new Date(0));
    expect(c.decide(warning('disk gone'))).toMatchObject({ action: 'patch', name: 'local-pv-1.abc', count: 2 });
    expect(c.decide(warning('disk gone'))).toMatchObject({ action: 'patch', count: 3 });
  });

  test('repeats within the repeat interval are only counted, and the first one after it carries the count', () => {
    const clock = new VirtualClock();
    const c = new EventCorrelator('src', clock, { repeatIntervalMs: 1000 });
    const first = c.decide(warning('disk gone')) as { key: string };
    c.created(first.key, 'local-pv-1.abc', new Date(0));
    expect([c.decide(warning('disk gone')).action, c.decide(warning('disk gone')).action]).toEqual(['hold', 'hold']);
    clock.advance(1000);
    expect(c.decide(warning('disk gone'))).toMatchObject({ action: 'patch', count: 4 });
  });

  test('held repeats take none of the object\'s rate limit, so another event about it still goes out', () => {
    const c = new EventCorrelator('src', new VirtualClock(), { burstPerObject: 2 });
    const first = c.decide(warning('rejected entry')) as { key: string };
    c.created(first.key, 'node.1', new Date(0));
    for (let pass = 0; pass < 100; pass++) expect(c.decide(warning('rejected entry')).action).toBe('hold');
    expect(c.decide(warning('config invalid')).action).toBe('create');
  });

  test('another message is another event', () => {
    const c = new EventCorrelator('src', new VirtualClock());
    const first = c.decide(warning('disk gone')) as { key: string };
    c.created(first.key, 'n', new Date(0));
    expect(c.decide(warning('not a mount point')).action).toBe('create');
  });

  test('a repeat after the window starts a new event', () => {
    const clock = new VirtualClock();
    const c = new EventCorrelator('src', clock, { windowMs: 1000, repeatIntervalMs: 0 });
    const first = c.decide(warning('x')) as { key: string };
    c.created(first.key, 'n', new Date(0));
    clock.advance(1000);
    expect(c.decide(warning('x')).action).toBe('create');
  });

  test('a forgotten (failed) event is created again on its next repeat', () => {
    const c = new EventCorrelator('src', new VirtualClock());
    const first = c.decide(warning('x')) as { key: string };
    c.forget(first.key);
    expect(c.decide(warning('x')).action).toBe('create');
  });

  test('each kind of Event about an object has its own budget: a flood of one reason leaves room for another', () => {
    const c = new EventCorrelator('src', new VirtualClock(), { burstPerObject: 3 });
    for (let i = 0; i < 5; i++) c.decide(warning(`entry ${i} rejected`));
    expect(c.decide({ involvedObject: pv, type: 'Warning', reason: 'ConfigInvalid', message: 'bad' }).action).toBe('create');
  });

  test('each object gets its burst, then is rate limited, without affecting other objects', () => {
    const c = new EventCorrelator('src', new VirtualClock(), { burstPerObject: 3 });
    const actions = Array.from({ length: 4 }, (_, i) => c.decide(warning(`m${i}`)).action);
    expect(actions).toEqual(['create', 'create', 'create', 'drop']);
    expect(c.decide(warning('m0', { ...pv, name: 'local-pv-2', uid: 'u2' })).action).toBe('create');
  });

  test('the key separates source, object, type, reason and message', () => {
    const base = warning('m');
    const keys = new Set([
      eventKey('a', base),
      eventKey('b', base),
      eventKey('a', { ...base, involvedObject: { ...pv, uid: 'u2' } }),
      eventKey('a', { ...base, type: 'Normal' }),
      eventKey('a', { ...base, reason: 'Other' }),
      eventKey('a', { ...base, message: 'n' }),
    ]);
    expect(keys.size).toBe(6);
  });
});
