import { eventually, localPv, serverAndApi } from './fixtures';
import { VirtualClock } from './virtual-clock';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { KubeApiError } from '../../../src/runtime/kube/errors';
import { ApiRequestRecord } from '../../../src/runtime/kube/request';
import { NODE_LABEL } from '../../../src/runtime/well-known';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;
let clock: VirtualClock;
const records: ApiRequestRecord[] = [];

beforeAll(async () => {
  clock = new VirtualClock();
  const onRequest = (r: ApiRequestRecord) => records.push(r);
  ({ server, api } = await serverAndApi({ clock, random: () => 0, backoff: { initialMs: 10 }, onRequest }, { controllers: true }));
});
beforeEach(() => {
  server.faults.clear();
  clock.sleeps.length = 0;
  records.length = 0;
});

describe('KubeApi against a real apiserver', () => {
  test('a create answered 503 with Retry-After is sent again and succeeds', async () => {
    server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 503, retryAfterSeconds: 1 });
    const pv = await api.createPersistentVolume(localPv('retry-5xx', { node: 'n1' }));
    expect(pv.metadata?.uid).toBeTruthy();
    expect(records.map((r) => [r.method, r.failed, r.code])).toEqual([['POST', true, 503], ['POST', false, undefined]]);
  });

  test('a create answered 500 is not sent again (it may have been applied), a list answered 500 is', async () => {
    server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 500 });
    await expect(api.createPersistentVolume(localPv('no-retry', { node: 'n1' }))).rejects.toMatchObject({ code: 500 });
    server.faults.failNext({ verb: 'list', resource: 'persistentvolumes', code: 500 });
    await expect(api.listPersistentVolumes({})).resolves.toMatchObject({ items: expect.any(Array) });
    expect(records.map((r) => [r.method, r.failed, r.code])).toEqual([['POST', true, 500], ['GET', true, 500], ['GET', false, undefined]]);
  });

  test('a 429 is retried after the Retry-After the server sent', async () => {
    server.faults.failNext({ verb: 'get', resource: 'persistentvolumes', code: 429, retryAfterSeconds: 2 });
    await api.createPersistentVolume(localPv('retry-429', { node: 'n1' }));
    await expect(api.getPersistentVolume('retry-429')).resolves.toMatchObject({ metadata: { name: 'retry-429' } });
    expect(clock.sleeps).toEqual([2000]);
  });

  test('a 403 surfaces at once, naming verb, resource, object and the server message', async () => {
    server.faults.failNext({ verb: 'get', resource: 'nodes', code: 403 });
    const err = await api.getNode('n1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).message).toMatch(/^get nodes "n1": 403 Forbidden: .+/);
    expect((err as KubeApiError).attempts).toBe(1);
  });

  test('a 422 names the invalid field as the server does', async () => {
    const bad = localPv('invalid', { node: 'n1' });
    delete bad.spec!.capacity;
    await expect(api.createPersistentVolume(bad)).rejects.toThrow(/^create persistentvolumes "invalid": 422 Invalid: .*spec\.capacity/);
  });

  test('reading a missing object answers undefined', async () => {
    await expect(api.getPersistentVolume('nope')).resolves.toBeUndefined();
    await expect(api.getNode('nope')).resolves.toBeUndefined();
    await expect(api.getStorageClass('nope')).resolves.toBeUndefined();
    await expect(api.getConfigMap('default', 'nope')).resolves.toBeUndefined();
  });

  test('label patches are merge patches: other labels stay, null removes', async () => {
    await api.createPersistentVolume(localPv('patched', { node: 'n1', labels: { keep: 'me', drop: 'me' } }));
    const pv = await api.patchPersistentVolumeLabels('patched', { added: 'yes', drop: null });
    expect(pv.metadata?.labels).toEqual({ [NODE_LABEL]: 'n1', keep: 'me', added: 'yes' });
  });

  test('a paged list returns at most limit items and a continue token', async () => {
    for (const n of ['page-a', 'page-b', 'page-c']) await api.createPersistentVolume(localPv(n, { node: 'paging' }));
    const first = await api.listPersistentVolumes({ labelSelector: `${NODE_LABEL}=paging`, limit: 2 });
    expect(first.items).toHaveLength(2);
    const rest = await api.listPersistentVolumes({ labelSelector: `${NODE_LABEL}=paging`, limit: 2, continueToken: first.metadata?._continue });
    expect([...first.items, ...rest.items].map((p) => p.metadata?.name)).toEqual(['page-a', 'page-b', 'page-c']);
    expect(rest.metadata?._continue).toBeFalsy();
  });

  test('Jobs are created, read and deleted (already gone is false)', async () => {
    await api.createJob('default', {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'cleanup-x' },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } },
    });
    await expect(api.getJob('default', 'cleanup-x')).resolves.toMatchObject({ metadata: { name: 'cleanup-x' } });
    await expect(api.deleteJob('default', 'cleanup-x')).resolves.toBe(true);
    await expect(api.deleteJob('default', 'cleanup-x')).resolves.toBe(false);
  });

  test('a claim is deleted only while its UID matches', async () => {
    const claim = (name: string) => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    const old = await server.create(claim('data'));
    await api.deletePersistentVolumeClaim('default', 'data', old.metadata.uid);
    await eventually(async () => (await api.getPersistentVolumeClaim('default', 'data')) === undefined, 'the claim is gone');
    await server.create(claim('data'));
    await expect(api.deletePersistentVolumeClaim('default', 'data', old.metadata.uid)).rejects.toMatchObject({ code: 409 });
    await expect(api.getPersistentVolumeClaim('default', 'data')).resolves.toBeDefined();
  });

  test('Nodes and ConfigMaps are listed page by page', async () => {
    for (const name of ['n-a', 'n-b', 'n-c']) await server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name } });
    const nodes = await api.listNodes({ limit: 2 });
    expect(nodes.items).toHaveLength(2);
    expect(nodes.metadata?._continue).toBeTruthy();
    await server.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'spec', namespace: 'kube-system' }, data: { a: 'b' } });
    const maps = await api.listConfigMaps('kube-system', {});
    expect(maps.items.map((m) => m.metadata?.name)).toContain('spec');
  });
});
