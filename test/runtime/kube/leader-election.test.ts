import { V1Lease } from '@kubernetes/client-node';
import { eventually, serverAndApi } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { LeaderElector } from '../../../src/runtime/kube/leader-election';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;
const running: Array<{ stop: AbortController; done: Promise<void> }> = [];

beforeEach(async () => {
  ({ server, api } = await serverAndApi());
});
afterEach(async () => {
  for (const r of running.splice(0)) {
    r.stop.abort();
    await r.done;
  }
  await server.reset();
});

const LEASE = 'local-volume-provisioner-node-cleanup';
const lease = () => server.get<V1Lease>('coordination.k8s.io/v1', 'Lease', LEASE, 'default');

/** A candidate with a 1 s lease, campaigning until stopped; `leading` tells whether its work is running. */
function candidate(identity: string, releaseOnCancel = true) {
  const elector = new LeaderElector(api, {
    namespace: 'default', name: LEASE, identity, leaseDurationMs: 1000, renewDeadlineMs: 800, retryPeriodMs: 100, releaseOnCancel,
  });
  const state = { leading: false, terms: 0 };
  const stop = new AbortController();
  const done = elector.run({
    onStartedLeading: (signal) => {
      state.leading = true;
      state.terms++;
      signal.addEventListener('abort', () => (state.leading = false));
    },
  }, stop.signal);
  running.push({ stop, done });
  return { elector, state, stop, done };
}

describe('LeaderElector', () => {
  test('of two candidates exactly one leads', async () => {
    const a = candidate('a');
    const b = candidate('b');
    await eventually(async () => a.state.leading || b.state.leading, 'someone leads');
    await new Promise((r) => setTimeout(r, 300));
    expect([a.state.leading, b.state.leading].filter(Boolean)).toHaveLength(1);
    expect((await lease())?.spec?.holderIdentity).toBe(a.state.leading ? 'a' : 'b');
  });

  test('the leader keeps renewing its lease', async () => {
    const a = candidate('a');
    await eventually(async () => a.state.leading, 'a leads');
    const renewed = (await lease())!.spec!.renewTime;
    await eventually(async () => (await lease())!.spec!.renewTime !== renewed, 'a renewed', 2000);
    expect((await lease())!.spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 1, leaseTransitions: 0 });
  });

  test('writes MicroTime with six fractional digits, as the API server requires', async () => {
    const a = candidate('a');
    await eventually(async () => a.state.leading, 'a leads');
    expect(String((await lease())!.spec!.renewTime)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  test('another candidate takes over at once when the leader releases', async () => {
    const a = candidate('a');
    await eventually(async () => a.state.leading, 'a leads');
    const b = candidate('b');
    a.stop.abort();
    await a.done;
    expect(a.state.leading).toBe(false);
    await eventually(async () => b.state.leading, 'b leads after the release');
    expect((await lease())!.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  test('another candidate takes over when the leader stops renewing and its lease expires', async () => {
    const a = candidate('a', false);
    await eventually(async () => a.state.leading, 'a leads');
    const b = candidate('b');
    a.stop.abort();
    await a.done;
    expect((await lease())!.spec!.holderIdentity).toBe('a');
    await eventually(async () => b.state.leading, 'b leads after a\'s lease expired', 5000);
  });

  test('a leader that cannot renew steps down', async () => {
    const a = candidate('a');
    await eventually(async () => a.state.leading, 'a leads');
    server.faults.failNext({ verb: 'get', resource: 'leases', code: 500, count: 1_000_000 });
    await a.done;
    expect(a.state.leading).toBe(false);
    expect(a.elector.isLeader()).toBe(false);
  });

  test('rejects timings that cannot work', () => {
    expect(() => new LeaderElector(api, { namespace: 'default', name: LEASE, identity: 'x', leaseDurationMs: 5000, renewDeadlineMs: 6000 }))
      .toThrow('leader election needs leaseDuration >= 1s > renewDeadline > retryPeriod, got 5000/6000/2000 ms');
  });
});
