import { TestApiServer, startTestApiServer } from './index';
import { call, localPv, watchEvents } from './raw-client';

let server: TestApiServer;
beforeEach(async () => {
  server = await startTestApiServer({ bookmarkIntervalMs: 50 });
});
afterEach(async () => {
  await server.stop();
});

const names = (list: any) => list.items.map((i: any) => i.metadata.name);

describe('resourceVersion', () => {
  test('every write takes the next value of one counter shared by all resources', async () => {
    const a = (await call(server, 'POST', '/api/v1/persistentvolumes', localPv('a'))).body;
    const cm = (await call(server, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'c' } })).body;
    expect(Number(cm.metadata.resourceVersion)).toBeGreaterThan(Number(a.metadata.resourceVersion));
    const list = (await call(server, 'GET', '/api/v1/namespaces/default/configmaps')).body;
    expect(Number(list.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(cm.metadata.resourceVersion));
  });

  test('an update that changes nothing keeps the resourceVersion', async () => {
    const cm = (await call(server, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'same' }, data: { a: '1' } })).body;
    const reordered = { data: cm.data, metadata: cm.metadata, apiVersion: 'v1', kind: 'ConfigMap' };
    const again = (await call(server, 'PUT', '/api/v1/namespaces/default/configmaps/same', reordered)).body;
    expect(again.metadata.resourceVersion).toBe(cm.metadata.resourceVersion);
  });

  test('generateName gets a random suffix and uid, creationTimestamp are set', async () => {
    const r = (await call(server, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { generateName: 'gen-' } })).body;
    expect(r.metadata.name).toMatch(/^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(r.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test('generation moves with spec changes, not with status or metadata', async () => {
    const job = {
      metadata: { name: 'j' },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } },
    };
    await call(server, 'POST', '/apis/batch/v1/namespaces/default/jobs', job);
    await call(server, 'PATCH', '/apis/batch/v1/namespaces/default/jobs/j', { metadata: { labels: { a: 'b' } } }, { contentType: 'application/merge-patch+json' });
    await call(server, 'PATCH', '/apis/batch/v1/namespaces/default/jobs/j/status', { status: { active: 1 } }, { contentType: 'application/merge-patch+json' });
    expect(server.get('batch/v1', 'Job', 'j', 'default').metadata.generation).toBe(1);
    await call(server, 'PATCH', '/apis/batch/v1/namespaces/default/jobs/j', { spec: { backoffLimit: 2 } }, { contentType: 'application/merge-patch+json' });
    expect(server.get('batch/v1', 'Job', 'j', 'default').metadata.generation).toBe(2);
  });
});

describe('list', () => {
  test('limit and continue page through a consistent snapshot', async () => {
    for (const n of ['p1', 'p2', 'p3', 'p4', 'p5']) server.create(localPv(n));
    const first = (await call(server, 'GET', '/api/v1/persistentvolumes?limit=2')).body;
    expect(names(first)).toEqual(['p1', 'p2']);
    expect(first.metadata.remainingItemCount).toBe(3);
    // Changes after the first page do not show in later pages.
    await call(server, 'DELETE', '/api/v1/persistentvolumes/p3');
    server.create(localPv('p0'));
    const second = (await call(server, 'GET', `/api/v1/persistentvolumes?limit=2&continue=${encodeURIComponent(first.metadata.continue)}`)).body;
    expect(names(second)).toEqual(['p3', 'p4']);
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    const last = (await call(server, 'GET', `/api/v1/persistentvolumes?limit=2&continue=${encodeURIComponent(second.metadata.continue)}`)).body;
    expect(names(last)).toEqual(['p5']);
    expect(last.metadata.continue).toBeUndefined();
  });

  test('a continue token older than the history is 410 Expired', async () => {
    for (const n of ['q1', 'q2', 'q3']) server.create(localPv(n));
    const first = (await call(server, 'GET', '/api/v1/persistentvolumes?limit=1')).body;
    server.create(localPv('q4'));
    server.faults.compact();
    const r = await call(server, 'GET', `/api/v1/persistentvolumes?limit=1&continue=${encodeURIComponent(first.metadata.continue)}`);
    expect(r.status).toBe(410);
    expect(r.body).toMatchObject({ reason: 'Expired', code: 410 });
    expect(r.body.message).toMatch(/^The provided continue parameter is too old/);
  });

  test('resourceVersionMatch=Exact lists the state at that resourceVersion', async () => {
    server.create(localPv('e1'));
    const rv = (await call(server, 'GET', '/api/v1/persistentvolumes')).body.metadata.resourceVersion;
    server.create(localPv('e2'));
    const r = (await call(server, 'GET', `/api/v1/persistentvolumes?resourceVersion=${rv}&resourceVersionMatch=Exact`)).body;
    expect(names(r)).toEqual(['e1']);
  });

  test('a resourceVersion newer than the server is a 504 Timeout', async () => {
    const r = await call(server, 'GET', '/api/v1/persistentvolumes?resourceVersion=999999');
    expect(r.status).toBe(504);
    expect(r.body.details.causes[0].reason).toBe('ResourceVersionTooLarge');
  });

  test('items of built-in kinds come without kind and apiVersion, custom resources with them', async () => {
    server.create(localPv('k'));
    const pvs = (await call(server, 'GET', '/api/v1/persistentvolumes')).body;
    expect(pvs.kind).toBe('PersistentVolumeList');
    expect(pvs.items[0].kind).toBeUndefined();
    await call(server, 'POST', '/apis/monitoring.coreos.com/v1/namespaces/default/servicemonitors', {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { name: 's' }, spec: { selector: {}, endpoints: [] },
    });
    const sms = (await call(server, 'GET', '/apis/monitoring.coreos.com/v1/servicemonitors')).body;
    expect(sms.items[0].kind).toBe('ServiceMonitor');
  });

  test('deletecollection deletes what the selector matches and answers with the deleted list', async () => {
    for (const [n, tier] of [['d1', 'a'], ['d2', 'a'], ['d3', 'b']]) {
      await call(server, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: n, labels: { tier } } });
    }
    const r = await call(server, 'DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=tier%3Da');
    expect(r.body.kind).toBe('ConfigMapList');
    expect(names(r.body)).toEqual(['d1', 'd2']);
    expect(server.list('v1', 'ConfigMap', 'default').map((c) => c.metadata.name)).toEqual(['d3']);
  });

  test('field selectors the kind supports filter, others are 400', async () => {
    server.create({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'e1', namespace: 'default' }, involvedObject: { kind: 'PersistentVolume', name: 'a' }, reason: 'X', type: 'Normal' });
    server.create({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'e2', namespace: 'default' }, involvedObject: { kind: 'Node', name: 'n' }, reason: 'Y', type: 'Warning' });
    const r = (await call(server, 'GET', '/api/v1/events?fieldSelector=involvedObject.kind%3DPersistentVolume,type%3DNormal')).body;
    expect(names(r)).toEqual(['e1']);
    expect((await call(server, 'GET', '/api/v1/persistentvolumes?fieldSelector=spec.storageClassName%3Dx')).status).toBe(400);
  });
});

describe('watch', () => {
  test('from a resourceVersion streams the changes after it in the real wire format', async () => {
    server.controllers.pvProtection = false;
    server.controllers.persistentVolumes = false;
    const rv = (await call(server, 'GET', '/api/v1/persistentvolumes')).body.metadata.resourceVersion;
    server.create(localPv('w1'));
    const w = watchEvents(server, `/api/v1/persistentvolumes?watch=true&resourceVersion=${rv}`, (e) => e.some((x) => x.type === 'DELETED'));
    await new Promise((r) => setTimeout(r, 50));
    await call(server, 'PATCH', '/api/v1/persistentvolumes/w1', { metadata: { labels: { x: 'y' } } }, { contentType: 'application/merge-patch+json' });
    await call(server, 'DELETE', '/api/v1/persistentvolumes/w1');
    const { events } = await w;
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    expect(events.every((e) => e.object.kind === 'PersistentVolume' && e.object.apiVersion === 'v1')).toBe(true);
    const rvs = events.map((e) => Number(e.object.metadata.resourceVersion));
    expect(rvs).toEqual([...rvs].sort((a, b) => a - b));
    expect(new Set(rvs).size).toBe(3);
  });

  test('selector transitions arrive as ADDED and DELETED', async () => {
    server.controllers.persistentVolumes = false;
    const w = watchEvents(server, '/api/v1/persistentvolumes?watch=1&labelSelector=tier%3Dgold', (e) => e.length >= 2);
    await new Promise((r) => setTimeout(r, 50));
    server.create(localPv('t', { tier: 'silver' }));
    await call(server, 'PATCH', '/api/v1/persistentvolumes/t', { metadata: { labels: { tier: 'gold' } } }, { contentType: 'application/merge-patch+json' });
    await call(server, 'PATCH', '/api/v1/persistentvolumes/t', { metadata: { labels: { tier: 'bronze' } } }, { contentType: 'application/merge-patch+json' });
    const { events } = await w;
    expect(events.map((e) => `${e.type} ${e.object.metadata.labels.tier}`)).toEqual(['ADDED gold', 'DELETED bronze']);
    expect(events[0].object).toMatchObject({ kind: 'PersistentVolume', apiVersion: 'v1' });
  });

  test('a resourceVersion older than the history gets an ERROR event with 410 Expired', async () => {
    const rv = (await call(server, 'GET', '/api/v1/persistentvolumes')).body.metadata.resourceVersion;
    server.create(localPv('old'));
    server.faults.compact();
    const { status, events } = await watchEvents(server, `/api/v1/persistentvolumes?watch=true&resourceVersion=${rv}`, () => false);
    expect(status).toBe(200);
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('ERROR');
    expect(events[0].object).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 });
    expect(events[0].object.message).toMatch(new RegExp(`^too old resource version: ${rv} \\(\\d+\\)$`));
  });

  test('bookmarks carry only the resourceVersion when asked for', async () => {
    const rv = (await call(server, 'GET', '/api/v1/persistentvolumes')).body.metadata.resourceVersion;
    const { events } = await watchEvents(server, `/api/v1/persistentvolumes?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`, (e) => e.length >= 1);
    expect(events[0]).toEqual({ type: 'BOOKMARK', object: { kind: 'PersistentVolume', apiVersion: 'v1', metadata: { resourceVersion: rv } } });
  });

  test('timeoutSeconds ends the watch', async () => {
    // The reader never stops on its own: it returns only because the server ends the stream.
    const { events } = await watchEvents(server, '/api/v1/persistentvolumes?watch=true&timeoutSeconds=1&resourceVersion=1', () => false);
    expect(events).toEqual([]);
  });

  test('without a resourceVersion the watch starts with the current objects as ADDED', async () => {
    server.create(localPv('now'));
    const { events } = await watchEvents(server, '/api/v1/persistentvolumes?watch=true', (e) => e.length >= 1);
    expect(events[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'now' } } });
  });
});
