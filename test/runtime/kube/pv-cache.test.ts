import { V1PersistentVolume } from '@kubernetes/client-node';
import { eventually, localPv, serverAndApi } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { NodePvCache } from '../../../src/runtime/kube/pv-cache';
import { Change } from '../../../src/runtime/kube/reflector';
import { NODE_LABEL } from '../../../src/runtime/well-known';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;
let cache: NodePvCache | undefined;

beforeEach(async () => {
  // The controllers too: a deleted PV goes only once the PV protection controller lets it.
  ({ server, api } = await serverAndApi({}, { controllers: true }));
});
afterEach(async () => {
  await cache?.stop();
  cache = undefined;
  await server.reset();
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
async function sameVersions(c: NodePvCache): Promise<boolean> {
  const now = new Map((await server.list('v1', 'PersistentVolume')).map((p) => [p.metadata.name, p.metadata.resourceVersion]));
  return c.list().every((p) => now.get(p.metadata!.name!) === p.metadata!.resourceVersion);
}

async function serverNames(node: string): Promise<string[]> {
  return (await server.list('v1', 'PersistentVolume')).filter((p) => p.metadata.labels?.[NODE_LABEL] === node).map((p) => p.metadata.name).sort();
}

describe('NodePvCache', () => {
  test('lists only the PVs labelled for its node', async () => {
    await server.create(localPv('a-1', { node: 'node-a' }));
    await server.create(localPv('a-2', { node: 'node-a' }));
    await server.create(localPv('b-1', { node: 'node-b' }));
    await server.create(localPv('unlabelled', { node: 'node-a', labelled: false }));
    const { cache: c, changes } = await startCache('node-a');
    expect(c.hasSynced()).toBe(true);
    expect(names(c)).toEqual(['a-1', 'a-2']);
    expect(changes.sort()).toEqual(['add a-1', 'add a-2']);
  });

  test("bytes received for the first list do not grow with other nodes' PVs", async () => {
    const listBytes = async () => {
      const before = server.counters.get('list', 'persistentvolumes').bytes;
      const c = new NodePvCache(api, { nodeName: 'node-a' });
      await c.start();
      await c.stop();
      return server.counters.get('list', 'persistentvolumes').bytes - before;
    };
    for (let i = 0; i < 3; i++) await server.create(localPv(`mine-${i}`, { node: 'node-a' }));
    // The PV controller writes each new PV's phase (its status and a managedFields entry): the lists compared see them written.
    await eventually(async () => (await api.listPersistentVolumes({ labelSelector: `${NODE_LABEL}=node-a` })).items
      .every((pv) => pv.status?.phase === 'Available'), 'the PV controller made each PV of node-a Available');
    const alone = await listBytes();
    // 100 other PVs would add some 70 KB to a list that were not selected by node.
    await Promise.all(Array.from({ length: 100 }, (_, i) => server.create(localPv(`other-${i}`, { node: `node-${i % 7}-b` }))));
    const crowded = await listBytes();
    // Only the resourceVersions' digits may differ.
    expect(Math.abs(crowded - alone)).toBeLessThan(64);
  });

  test('a consistent relist is paged; the first list comes whole from the watch cache', async () => {
    for (let i = 0; i < 5; i++) await server.create(localPv(`p-${i}`, { node: 'node-a' }));
    const { cache: c } = await startCache('node-a', 2);
    expect(names(c)).toEqual(['p-0', 'p-1', 'p-2', 'p-3', 'p-4']);
    // resourceVersion=0 is answered from the apiserver's watch cache, which ignores limit.
    expect(server.counters.get('list', 'persistentvolumes').requests).toBe(1);
    await api.createPersistentVolume(localPv('elsewhere', { node: 'node-b' }));
    await server.compact();
    await eventually(async () => server.counters.get('list', 'persistentvolumes').requests === 4, 'a relist in three pages of two');
    expect(names(c)).toEqual(['p-0', 'p-1', 'p-2', 'p-3', 'p-4']);
  });

  test('follows adds, updates and deletes of its node and ignores other nodes', async () => {
    const { cache: c, changes, all } = await startCache('node-a');
    await api.createPersistentVolume(localPv('w-1', { node: 'node-a' }));
    await api.createPersistentVolume(localPv('w-other', { node: 'node-b' }));
    await api.patchPersistentVolumeLabels('w-1', { tier: 'fast' });
    await eventually(async () => c.get('w-1')?.metadata?.labels?.tier === 'fast', 'the label change arrived');
    await api.deletePersistentVolume('w-1', c.get('w-1')!.metadata!.uid!);
    await eventually(async () => changes.includes('delete w-1'), 'the delete arrived');
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
    // The PV controller changes it too (its phase): compare once the copy has the version read.
    let read: V1PersistentVolume | undefined;
    await eventually(async () => {
      read = await api.getPersistentVolume('plain');
      return c.get('plain')?.metadata?.resourceVersion === read?.metadata?.resourceVersion;
    }, 'the PV arrived by watch as it reads now');
    // As read, but for managedFields, which the copy does not keep.
    expect(c.get('plain')).toEqual({ ...read, metadata: { ...read!.metadata, managedFields: undefined } });
    expect(c.get('plain')!.metadata!.creationTimestamp).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/));
  });

  test('keeps no managedFields of the PVs it lists or watches', async () => {
    const managed = (name: string) => {
      const pv = localPv(name, { node: 'node-a' });
      return { ...pv, metadata: { ...pv.metadata, managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }] } };
    };
    await server.create(managed('listed'));
    const kubectlEntry = expect.arrayContaining([expect.objectContaining({ manager: 'kubectl' })]);
    expect((await server.get('v1', 'PersistentVolume', 'listed')).metadata.managedFields).toEqual(kubectlEntry);
    const { cache: c } = await startCache('node-a');
    await api.createPersistentVolume(managed('watched'));
    await eventually(async () => c.get('watched') !== undefined, 'the PV arrived by watch');
    expect((await server.get('v1', 'PersistentVolume', 'watched')).metadata.managedFields).toEqual(kubectlEntry);
    expect(c.get('listed')!.metadata).not.toHaveProperty('managedFields');
    expect(c.get('watched')!.metadata).not.toHaveProperty('managedFields');
  });

  test('a label change that moves a PV to another node removes it from the cache', async () => {
    await server.create(localPv('moving', { node: 'node-a' }));
    const { cache: c, changes } = await startCache('node-a');
    await api.patchPersistentVolumeLabels('moving', { [NODE_LABEL]: 'node-b' });
    await eventually(async () => changes.includes('delete moving'), 'the PV left the cache');
    expect(c.get('moving')).toBeUndefined();
  });

  test('survives dropped watches without losing or repeating a change', async () => {
    const { cache: c, changes } = await startCache('node-a');
    for (let i = 0; i < 10; i++) {
      server.faults.closeWatches();
      await api.createPersistentVolume(localPv(`drop-${i}`, { node: 'node-a' }));
    }
    await eventually(async () => names(c).length === 10, 'all ten PVs arrived');
    expect(names(c)).toEqual(await serverNames('node-a'));
    expect(changes.filter((x) => x.startsWith('add ')).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `add drop-${i}`).sort());
    expect(changes.filter((x) => x.startsWith('delete '))).toEqual([]);
    await eventually(async () => sameVersions(c), 'the cache holds the server\'s latest version of every PV');
  });

  test('relists after 410 Gone and reports exactly what changed while it was away', async () => {
    await server.create(localPv('stays', { node: 'node-a' }));
    await server.create(localPv('changes', { node: 'node-a' }));
    await server.create(localPv('goes', { node: 'node-a' }));
    // The PV controller's own updates (phase Available) are over before the cache starts.
    const settled = async (...wanted: string[]) => {
      const pvs = await server.list<V1PersistentVolume>('v1', 'PersistentVolume');
      return wanted.every((n) => pvs.some((p) => p.metadata?.name === n && p.status?.phase === 'Available'));
    };
    await eventually(() => settled('stays', 'changes', 'goes'), 'the PVs are Available');
    const lists = jest.spyOn(api, 'listPersistentVolumes');
    const { cache: c, changes } = await startCache('node-a');
    changes.length = 0;

    // Keep the cache from watching or listing while the world changes and history is compacted away.
    server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', code: 503, count: 1_000_000 });
    server.faults.failNext({ verb: 'list', resource: 'persistentvolumes', code: 503, count: 1_000_000 });
    server.faults.closeWatches();
    await api.patchPersistentVolumeLabels('changes', { tier: 'slow' });
    await api.deletePersistentVolume('goes', (await server.get('v1', 'PersistentVolume', 'goes')).metadata.uid);
    await api.createPersistentVolume(localPv('new', { node: 'node-a' }));
    // Gone once the PV protection controller lets it go; Available once the PV controller says so.
    await eventually(async () => await server.get('v1', 'PersistentVolume', 'goes') === undefined && await settled('new'), 'the world has changed');
    await server.compact();
    server.faults.clear();

    await eventually(async () => changes.length === 3, 'the relist reported three changes');
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
    await eventually(async () => c.get('while-watches-fail') !== undefined, 'the PV created while every watch fails arrived');
    expect(server.counters.get('list', 'persistentvolumes').requests).toBeGreaterThanOrEqual(2);
  });

  test('says the copy is stale while no list or watch works, and fresh again once one does', async () => {
    const { cache: c } = await startCache('node-a');
    // Fresh once its watch is open: the client has the watch's headers (the proxy counts it a moment before).
    await eventually(async () => c.staleReason(0) === undefined, 'the watch is open and the copy fresh');
    server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', code: 500, count: 1_000_000 });
    server.faults.failNext({ verb: 'list', resource: 'persistentvolumes', code: 500, count: 1_000_000 });
    server.faults.closeWatches();
    await eventually(async () => c.staleReason(0)?.includes('500') === true, 'the cache says it is stale and why');
    expect(c.staleReason()).toBeUndefined(); // not for a minute yet
    server.faults.clear();
    await eventually(async () => c.staleReason(0) === undefined, 'the cache is fresh again');
  });

  test('keeps going after the API server restarts', async () => {
    const { cache: c } = await startCache('node-a');
    await server.restart();
    await api.createPersistentVolume(localPv('after-restart', { node: 'node-a' }));
    await eventually(async () => c.get('after-restart') !== undefined, 'the PV created after the restart arrived');
  });

  test('indexes PVs by local path', async () => {
    await server.create(localPv('by-path', { node: 'node-a', path: '/mnt/disks/x' }));
    const { cache: c } = await startCache('node-a');
    expect(c.findByLocalPath('/mnt/disks/x').map((p) => p.metadata?.name)).toEqual(['by-path']);
    expect(c.findByLocalPath('/mnt/disks/y')).toEqual([]);
  });

  test('stop right after the first list leaves no watch open', async () => {
    const { cache: c } = await startCache('node-a');
    await c.stop();
    await eventually(async () => server.openWatches === 0, 'no watch is open');
  });

  test('stop ends the watch', async () => {
    const { cache: c } = await startCache('node-a');
    await eventually(async () => server.openWatches === 1, 'the watch is open');
    await c.stop();
    await eventually(async () => server.openWatches === 0, 'the watch is closed');
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
    await server.create(localPv('labelled', { node: 'node-a' }));
    await server.create(localPv('go-made', { node: 'node-a', labelled: false, provisioner: GO_NAME }));
    await server.create(localPv('other-node', { node: 'node-b', labelled: false, provisioner: 'local-volume-provisioner-node-b-uid-b' }));
    // Another node's label wins over an annotation that would be accepted.
    await server.create(localPv('labelled-elsewhere', { node: 'node-b', provisioner: GO_NAME }));
    const { cache: c } = await startUnlabelledCache();
    expect(names(c)).toEqual(['go-made', 'labelled']);
    expect(server.counters.get('list', 'persistentvolumes').requests).toBe(1);
  });

  test('follows the watch: a PV that comes to be accepted is added, one that stops being accepted counts as deleted', async () => {
    const { cache: c, changes } = await startUnlabelledCache();
    await server.create(localPv('go-made', { node: 'node-a', labelled: false, provisioner: GO_NAME }));
    await server.create(localPv('foreign', { node: 'node-b', labelled: false, provisioner: 'someone-else' }));
    await eventually(async () => names(c).includes('go-made'), 'the accepted PV is cached');
    await api.patchPersistentVolumeAnnotations('go-made', { 'pv.kubernetes.io/provisioned-by': 'someone-else' });
    await eventually(async () => names(c).length === 0, 'the PV no longer accepted is dropped');
    // (Updates in between: the PV controller makes it Available.)
    expect([changes[0], changes.at(-1)]).toEqual(['add go-made', 'delete go-made']);
    expect(changes.filter((change) => change.endsWith('foreign'))).toEqual([]);
    // What this process writes is taken in only when it is this node's.
    c.observe(localPv('foreign-write', { node: 'node-b', labelled: false, provisioner: 'someone-else' }));
    expect(names(c)).toEqual([]);
  });
});

describe('how long each watch lasts (the directory dialect\'s minResyncPeriod)', () => {
  /** The timeoutSeconds of each watch the cache opens, through the real client, against the real apiserver. */
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
    await eventually(async () => recording.lifetimes.length > 0, 'the cache watches');
    for (const seconds of recording.lifetimes) expect([seconds >= min, seconds < 2 * min]).toEqual([true, true]);
  });
});
