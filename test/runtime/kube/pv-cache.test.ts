import { V1PersistentVolume } from '@kubernetes/client-node';
import { eventually, localPv, serverAndApi } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { NodePvCache } from '../../../src/runtime/kube/pv-cache';
import { Change } from '../../../src/runtime/kube/reflector';
import { NODE_LABEL } from '../../../src/runtime/well-known';
import { startTestApiServer, TestApiServer } from '../../apiserver';

let server: TestApiServer;
let api: KubeApi;
let cache: NodePvCache | undefined;

beforeEach(async () => {
  ({ server, api } = await serverAndApi());
});
afterEach(async () => {
  await cache?.stop();
  cache = undefined;
  await server.stop();
});

/** Starts a cache for `node` that logs every change as `type name`. */
async function startCache(node: string, pageSize?: number): Promise<{ cache: NodePvCache; changes: string[]; all: Change<V1PersistentVolume>[] }> {
  const c = new NodePvCache(api, { nodeName: node, pageSize, backoff: { initialMs: 10, maxMs: 50 } });
  const changes: string[] = [];
  const all: Change<V1PersistentVolume>[] = [];
  c.onChange((change) => {
    changes.push(`${change.type} ${change.object.metadata?.name}`);
    all.push(change);
  });
  cache = c;
  await c.start();
  return { cache: c, changes, all };
}

function names(c: NodePvCache): string[] {
  return c.list().map((p) => p.metadata!.name!).sort();
}

/** Every cached PV is at the resourceVersion the server has now. */
function sameVersions(c: NodePvCache): boolean {
  return c.list().every((p) => server.get('v1', 'PersistentVolume', p.metadata!.name!)?.metadata.resourceVersion === p.metadata!.resourceVersion);
}

function serverNames(node: string): string[] {
  return server.list('v1', 'PersistentVolume').filter((p) => p.metadata.labels?.[NODE_LABEL] === node).map((p) => p.metadata.name).sort();
}

describe('NodePvCache', () => {
  test('lists only the PVs labelled for its node', async () => {
    server.create(localPv('a-1', { node: 'node-a' }));
    server.create(localPv('a-2', { node: 'node-a' }));
    server.create(localPv('b-1', { node: 'node-b' }));
    server.create(localPv('unlabelled', { node: 'node-a', labelled: false }));
    const { cache: c, changes } = await startCache('node-a');
    expect(c.hasSynced()).toBe(true);
    expect(names(c)).toEqual(['a-1', 'a-2']);
    expect(changes.sort()).toEqual(['add a-1', 'add a-2']);
  });

  test("bytes received for the first list do not grow with other nodes' PVs", async () => {
    const listBytes = async (others: number) => {
      const s = await startTestApiServer();
      for (let i = 0; i < 3; i++) s.create(localPv(`mine-${i}`, { node: 'node-a' }));
      for (let i = 0; i < others; i++) s.create(localPv(`other-${i}`, { node: `node-${i % 7}-b` }));
      const c = new NodePvCache(new KubeApi(s.kubeConfig()), { nodeName: 'node-a' });
      await c.start();
      await c.stop();
      await s.stop();
      return s.counters.get('list', 'persistentvolumes').bytes;
    };
    const alone = await listBytes(0);
    const crowded = await listBytes(500);
    // Only the resourceVersions' digits may differ.
    expect(Math.abs(crowded - alone)).toBeLessThan(64);
  });

  test('the first list is paged', async () => {
    for (let i = 0; i < 5; i++) server.create(localPv(`p-${i}`, { node: 'node-a' }));
    const { cache: c } = await startCache('node-a', 2);
    expect(names(c)).toEqual(['p-0', 'p-1', 'p-2', 'p-3', 'p-4']);
    expect(server.counters.get('list', 'persistentvolumes').requests).toBe(3);
  });

  test('follows adds, updates and deletes of its node and ignores other nodes', async () => {
    const { cache: c, changes, all } = await startCache('node-a');
    await api.createPersistentVolume(localPv('w-1', { node: 'node-a' }));
    await api.createPersistentVolume(localPv('w-other', { node: 'node-b' }));
    await api.patchPersistentVolumeLabels('w-1', { tier: 'fast' });
    await eventually(() => c.get('w-1')?.metadata?.labels?.tier === 'fast', 'the label change arrived');
    await api.deletePersistentVolume('w-1', c.get('w-1')!.metadata!.uid!);
    await eventually(() => changes.includes('delete w-1'), 'the delete arrived');
    // The PV controller and the protection finalizer add updates of their own in between.
    expect(changes[0]).toBe('add w-1');
    expect(changes.slice(1, -1).every((x) => x === 'update w-1')).toBe(true);
    expect(changes[changes.length - 1]).toBe('delete w-1');
    const labelled = all.find((x) => x.object.metadata?.labels?.tier === 'fast')!;
    expect(labelled.type).toBe('update');
    expect(labelled.previous?.metadata?.labels?.tier).toBeUndefined();
    expect(c.list()).toEqual([]);
  });

  test('objects from the watch have the form of read ones: plain JSON, timestamps as the server writes them', async () => {
    const { cache: c } = await startCache('node-a');
    await api.createPersistentVolume(localPv('plain', { node: 'node-a' }));
    await eventually(() => c.get('plain') !== undefined, 'the PV arrived by watch');
    expect(c.get('plain')).toEqual(await api.getPersistentVolume('plain'));
    expect(c.get('plain')!.metadata!.creationTimestamp).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/));
  });

  test('keeps no managedFields of the PVs it lists or watches', async () => {
    const managed = (name: string) => {
      const pv = localPv(name, { node: 'node-a' });
      return { ...pv, metadata: { ...pv.metadata, managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }] } };
    };
    server.create(managed('listed'));
    expect(server.get('v1', 'PersistentVolume', 'listed').metadata.managedFields).toHaveLength(1);
    const { cache: c } = await startCache('node-a');
    await api.createPersistentVolume(managed('watched'));
    await eventually(() => c.get('watched') !== undefined, 'the PV arrived by watch');
    expect(server.get('v1', 'PersistentVolume', 'watched').metadata.managedFields).toHaveLength(1);
    expect(c.get('listed')!.metadata).not.toHaveProperty('managedFields');
    expect(c.get('watched')!.metadata).not.toHaveProperty('managedFields');
  });

  test('a label change that moves a PV to another node removes it from the cache', async () => {
    server.create(localPv('moving', { node: 'node-a' }));
    const { cache: c, changes } = await startCache('node-a');
    await api.patchPersistentVolumeLabels('moving', { [NODE_LABEL]: 'node-b' });
    await eventually(() => changes.includes('delete moving'), 'the PV left the cache');
    expect(c.get('moving')).toBeUndefined();
  });

  test('survives dropped watches without losing or repeating a change', async () => {
    const { cache: c, changes } = await startCache('node-a');
    for (let i = 0; i < 10; i++) {
      server.faults.closeWatches();
      await api.createPersistentVolume(localPv(`drop-${i}`, { node: 'node-a' }));
    }
    await eventually(() => names(c).length === 10, 'all ten PVs arrived');
    expect(names(c)).toEqual(serverNames('node-a'));
    expect(changes.filter((x) => x.startsWith('add ')).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `add drop-${i}`).sort());
    expect(changes.filter((x) => x.startsWith('delete '))).toEqual([]);
    await eventually(() => sameVersions(c), 'the cache holds the server\'s latest version of every PV');
  });

  test('relists after 410 Gone and reports exactly what changed while it was away', async () => {
    server.create(localPv('stays', { node: 'node-a' }));
    server.create(localPv('changes', { node: 'node-a' }));
    server.create(localPv('goes', { node: 'node-a' }));
    const lists = jest.spyOn(api, 'listPersistentVolumes');
    const { cache: c, changes } = await startCache('node-a');
    changes.length = 0;

    // Keep the cache from watching while the world changes and history is compacted away.
    server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', code: 503, count: 1_000_000 });
    server.faults.closeWatches();
    await api.patchPersistentVolumeLabels('changes', { tier: 'slow' });
    await api.deletePersistentVolume('goes', server.get('v1', 'PersistentVolume', 'goes').metadata.uid);
    await api.createPersistentVolume(localPv('new', { node: 'node-a' }));
    server.faults.compact();
    server.faults.clear();

    await eventually(() => changes.length === 3, 'the relist reported three changes');
    expect(changes.sort()).toEqual(['add new', 'delete goes', 'update changes']);
    expect(names(c)).toEqual(['changes', 'new', 'stays']);
    expect(c.get('changes')!.metadata!.labels!.tier).toBe('slow');
    // As client-go: the first list may come from the watch cache, later ones (after 410, or
    // replacing failing watches) read consistently.
    const [first, ...later] = lists.mock.calls.map(([page]) => page.resourceVersion);
    expect(first).toBe('0');
    expect(later.length).toBeGreaterThan(0);
    expect(later.every((rv) => rv === undefined)).toBe(true);
  });

  test('while watches keep failing and lists work, the copy is refreshed by lists', async () => {
    const { cache: c } = await startCache('node-a');
    server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', code: 500, count: 1_000_000 });
    server.faults.closeWatches();
    await api.createPersistentVolume(localPv('while-watches-fail', { node: 'node-a' }));
    await eventually(() => c.get('while-watches-fail') !== undefined, 'the PV created while every watch fails arrived');
    expect(server.counters.get('list', 'persistentvolumes').requests).toBeGreaterThanOrEqual(2);
  });

  test('says the copy is stale while no list or watch works, and fresh again once one does', async () => {
    const { cache: c } = await startCache('node-a');
    await eventually(() => server.openWatches === 1, 'the watch is open');
    expect(c.staleReason(0)).toBeUndefined();
    server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', code: 500, count: 1_000_000 });
    server.faults.failNext({ verb: 'list', resource: 'persistentvolumes', code: 500, count: 1_000_000 });
    server.faults.closeWatches();
    await eventually(() => c.staleReason(0)?.includes('500') === true, 'the cache says it is stale and why');
    expect(c.staleReason()).toBeUndefined(); // not for a minute yet
    server.faults.clear();
    await eventually(() => c.staleReason(0) === undefined, 'the cache is fresh again');
  });

  test('keeps going after the API server restarts', async () => {
    const { cache: c } = await startCache('node-a');
    await server.restart();
    await api.createPersistentVolume(localPv('after-restart', { node: 'node-a' }));
    await eventually(() => c.get('after-restart') !== undefined, 'the PV created after the restart arrived');
  });

  test('indexes PVs by local path', async () => {
    server.create(localPv('by-path', { node: 'node-a', path: '/mnt/disks/x' }));
    const { cache: c } = await startCache('node-a');
    expect(c.findByLocalPath('/mnt/disks/x').map((p) => p.metadata?.name)).toEqual(['by-path']);
    expect(c.findByLocalPath('/mnt/disks/y')).toEqual([]);
  });

  test('stop right after the first list opens no watch', async () => {
    const { cache: c } = await startCache('node-a');
    await c.stop();
    await new Promise((r) => setTimeout(r, 50));
    expect(server.openWatches).toBe(0);
  });

  test('stop ends the watch', async () => {
    const { cache: c } = await startCache('node-a');
    await eventually(() => server.openWatches === 1, 'the watch is open');
    await c.stop();
    await eventually(() => server.openWatches === 0, 'the watch is closed');
  });
});

describe('NodePvCache without node labels to select on (RBAC grants no patch on PVs)', () => {
  const GO_NAME = 'local-volume-provisioner-node-a-uid-a';
  const byGoProvisioner = (pv: V1PersistentVolume) => pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] === GO_NAME;

  async function startUnlabelledCache(): Promise<{ cache: NodePvCache; changes: string[] }> {
    const c = new NodePvCache(api, { nodeName: 'node-a', unlabelled: byGoProvisioner, backoff: { initialMs: 10, maxMs: 50 } });
    const changes: string[] = [];
    c.onChange((change) => changes.push(`${change.type} ${change.object.metadata?.name}`));
    cache = c;
    await c.start();
    return { cache: c, changes };
  }

  test('keeps, from every PV of the cluster, those labelled for its node and the unlabelled ones it accepts, as the Go provisioner\'s cache does', async () => {
    server.create(localPv('labelled', { node: 'node-a' }));
    server.create(localPv('go-made', { node: 'node-a', labelled: false, provisioner: GO_NAME }));
    server.create(localPv('other-node', { node: 'node-b', labelled: false, provisioner: 'local-volume-provisioner-node-b-uid-b' }));
    // Another node's label wins over an annotation that would be accepted.
    server.create(localPv('labelled-elsewhere', { node: 'node-b', provisioner: GO_NAME }));
    const { cache: c } = await startUnlabelledCache();
    expect(names(c)).toEqual(['go-made', 'labelled']);
    expect(server.counters.get('list', 'persistentvolumes').requests).toBe(1);
  });

  test('follows the watch: a PV that comes to be accepted is added, one that stops being accepted counts as deleted', async () => {
    const { cache: c, changes } = await startUnlabelledCache();
    server.create(localPv('go-made', { node: 'node-a', labelled: false, provisioner: GO_NAME }));
    server.create(localPv('foreign', { node: 'node-b', labelled: false, provisioner: 'someone-else' }));
    await eventually(() => names(c).includes('go-made'), 'the accepted PV is cached');
    await api.patchPersistentVolumeAnnotations('go-made', { 'pv.kubernetes.io/provisioned-by': 'someone-else' });
    await eventually(() => names(c).length === 0, 'the PV no longer accepted is dropped');
    // (Updates in between: the PV controller makes it Available.)
    expect([changes[0], changes.at(-1)]).toEqual(['add go-made', 'delete go-made']);
    expect(changes.filter((change) => change.endsWith('foreign'))).toEqual([]);
    // What this process writes is taken in only when it is this node's.
    c.observe(localPv('foreign-write', { node: 'node-b', labelled: false, provisioner: 'someone-else' }));
    expect(names(c)).toEqual([]);
  });
});

describe('how long each watch lasts (the directory dialect\'s minResyncPeriod)', () => {
  /** The timeoutSeconds of each watch the cache opens, through the real client, against the test server. */
  class WatchRecordingApi extends KubeApi {
    readonly lifetimes: number[] = [];
    override watch(...args: Parameters<KubeApi['watch']>): Promise<void> {
      this.lifetimes.push(args[0].timeoutSeconds ?? 0);
      return super.watch(...args);
    }
  }

  test.each([[undefined, 300], [60, 60]])('with minWatchSeconds %s, each lasts a random time in [min, 2×min) (min %i s)', async (minWatchSeconds, min) => {
    const recording = new WatchRecordingApi(server.kubeConfig());
    cache = new NodePvCache(recording, { nodeName: 'n1', minWatchSeconds, backoff: { initialMs: 10, maxMs: 50 } });
    await cache.start();
    await eventually(() => recording.lifetimes.length > 0, 'the cache watches');
    for (const seconds of recording.lifetimes) expect([seconds >= min, seconds < 2 * min]).toEqual([true, true]);
  });
});
