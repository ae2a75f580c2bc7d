import { CoreV1Api, KubeConfig, PatchStrategy, V1PersistentVolume, makeInformer, setHeaderOptions } from '@kubernetes/client-node';
import { TestApiServer, startTestApiServer } from './index';
import { localPv } from './raw-client';

const pv = (name: string): V1PersistentVolume => localPv(name);

async function until(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** An informer that records what it saw, restarting itself after errors as callers must. */
function record(kc: KubeConfig, api: CoreV1Api, labelSelector?: string) {
  const informer = makeInformer(kc, '/api/v1/persistentvolumes', () => api.listPersistentVolume({ labelSelector }), labelSelector);
  const events: string[] = [];
  const live = new Map<string, string>();
  let connects = 0;
  informer.on('add', (o) => { events.push(`add ${o.metadata!.name}`); live.set(o.metadata!.name!, o.metadata!.resourceVersion!); });
  informer.on('update', (o) => { events.push(`update ${o.metadata!.name}`); live.set(o.metadata!.name!, o.metadata!.resourceVersion!); });
  informer.on('delete', (o) => { events.push(`delete ${o.metadata!.name}`); live.delete(o.metadata!.name!); });
  informer.on('connect', () => { connects++; });
  let stopped = false;
  informer.on('error', () => setTimeout(() => stopped || void informer.start(), 20));
  const stop = async () => {
    stopped = true;
    await informer.stop();
  };
  return { informer, stop, events, live, connects: () => connects };
}

describe('client-node informers against the test API server', () => {
  let server: TestApiServer;
  let kc: KubeConfig;
  let api: CoreV1Api;

  beforeEach(async () => {
    server = await startTestApiServer();
    kc = server.kubeConfig();
    api = kc.makeApiClient(CoreV1Api);
  });

  afterEach(async () => {
    await server.stop();
  });

  test('an informer lists existing objects then sees adds, updates and deletes in order', async () => {
    await api.createPersistentVolume({ body: pv('a') });
    const r = record(kc, api);
    await r.informer.start();
    await until(() => r.events.includes('add a'), 'initial add');
    await api.createPersistentVolume({ body: pv('b') });
    await api.patchPersistentVolume({ name: 'b', body: { metadata: { labels: { x: 'y' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await api.deletePersistentVolume({ name: 'a' });
    await until(() => r.live.size === 1 && r.live.get('b') === server.get('v1', 'PersistentVolume', 'b').metadata.resourceVersion, 'settled state');
    await r.stop();
    expect(r.events[0]).toBe('add a');
    expect(r.events).toContain('add b');
    expect(r.events).toContain('delete a');
  });

  test('an informer resumes after its watch is dropped without losing or repeating events', async () => {
    const r = record(kc, api);
    await r.informer.start();
    for (let i = 0; i < 5; i++) await api.createPersistentVolume({ body: pv(`v${i}`) });
    await until(() => r.live.size === 5, 'five adds');
    server.faults.closeWatches();
    await until(() => r.connects() >= 2, 'reconnect');
    for (let i = 5; i < 10; i++) await api.createPersistentVolume({ body: pv(`v${i}`) });
    await until(() => r.live.size === 10, 'ten objects');
    await r.stop();
    // Resumed from its resourceVersion: no second list was needed.
    expect(server.counters.get('list', 'persistentvolumes').requests).toBe(1);
    const adds = r.events.filter((e) => e.startsWith('add'));
    expect(adds).toHaveLength(10);
    expect(new Set(adds).size).toBe(10);
  });

  test('an informer relists after 410 Gone and ends with the server state', async () => {
    server.controllers.pvProtection = false;
    const r = record(kc, api);
    await r.informer.start();
    await api.createPersistentVolume({ body: pv('keep') });
    await api.createPersistentVolume({ body: pv('gone') });
    await until(() => r.live.size === 2, 'two adds');
    // While the informer cannot watch, one object goes and one comes, and the history is compacted
    // past what the informer has seen, so its next watch gets 410 Gone.
    await server.stop();
    server.delete('v1', 'PersistentVolume', 'gone');
    server.create(pv('new'));
    server.faults.compact();
    await server.restart();
    await until(() => r.live.size === 2 && r.live.has('new') && !r.live.has('gone'), 'relisted state', 8000);
    await r.stop();
    expect(server.counters.get('list', 'persistentvolumes').requests).toBeGreaterThanOrEqual(2);
    expect(r.events.filter((e) => e === 'add keep')).toHaveLength(1);
    expect(r.events.filter((e) => e === 'add new')).toHaveLength(1);
    expect(r.events.filter((e) => e === 'delete gone')).toHaveLength(1);
  });
});
