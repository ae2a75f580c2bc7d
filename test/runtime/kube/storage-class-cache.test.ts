import { eventually, serverAndApi } from './fixtures';
import { VirtualClock } from './virtual-clock';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { StorageClassCache } from '../../../src/runtime/kube/storage-class-cache';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;

beforeEach(async () => {
  ({ server, api } = await serverAndApi());
});
afterEach(() => server.reset());

const gets = () => server.counters.get('get', 'storageclasses').requests;
const requests = () => server.counters.total({ resource: 'storageclasses' }).requests;

function storageClass(name: string) {
  return { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name }, provisioner: 'kubernetes.io/no-provisioner', reclaimPolicy: 'Retain' };
}

describe('StorageClassCache', () => {
  test('reuses an answer within the TTL and asks again after it', async () => {
    await server.create(storageClass('fast'));
    const clock = new VirtualClock();
    const cache = new StorageClassCache(api, { ttlMs: 1000, clock });
    await expect(cache.get('fast')).resolves.toMatchObject({ reclaimPolicy: 'Retain' });
    await cache.get('fast');
    expect(gets()).toBe(1);
    clock.advance(1000);
    await cache.get('fast');
    expect(gets()).toBe(2);
  });

  test('remembers that a class does not exist, until the TTL passes', async () => {
    const clock = new VirtualClock();
    const cache = new StorageClassCache(api, { ttlMs: 1000, clock });
    await expect(cache.get('later')).resolves.toBeUndefined();
    await server.create(storageClass('later'));
    await expect(cache.get('later')).resolves.toBeUndefined();
    clock.advance(1000);
    await expect(cache.get('later')).resolves.toMatchObject({ metadata: { name: 'later' } });
  });

  test('a failed read is not cached', async () => {
    await server.create(storageClass('flaky'));
    const cache = new StorageClassCache(api, { clock: new VirtualClock() });
    server.faults.failNext({ verb: 'get', resource: 'storageclasses', code: 403 });
    await expect(cache.get('flaky')).rejects.toThrow('get storageclasses "flaky": 403');
    await expect(cache.get('flaky')).resolves.toMatchObject({ metadata: { name: 'flaky' } });
  });

  test('concurrent reads share one request', async () => {
    await server.create(storageClass('shared'));
    const cache = new StorageClassCache(api, { clock: new VirtualClock() });
    await Promise.all([cache.get('shared'), cache.get('shared'), cache.get('shared')]);
    expect(gets()).toBe(1);
  });
});

describe('StorageClassCache, started', () => {
  test('reads send no request: every class is listed once and watched', async () => {
    await server.create(storageClass('fast'));
    const cache = new StorageClassCache(api);
    await cache.start();
    const afterStart = requests();
    await expect(cache.get('fast')).resolves.toMatchObject({ reclaimPolicy: 'Retain' });
    await expect(cache.get('absent')).resolves.toBeUndefined();
    expect(requests()).toBe(afterStart);
    await cache.stop();
  });

  test('a class created later is seen at once, and its listeners told', async () => {
    const cache = new StorageClassCache(api);
    await cache.start();
    let changes = 0;
    cache.onChange(() => changes++);
    await server.create(storageClass('later'));
    await eventually(async () => (await cache.get('later')) !== undefined, 'the new class is seen');
    expect(changes).toBe(1);
    await cache.stop();
  });

  test('where listing StorageClasses is forbidden, each is read by name', async () => {
    await server.create(storageClass('fast'));
    server.faults.failNext({ verb: 'list', resource: 'storageclasses', code: 403 });
    const cache = new StorageClassCache(api, { clock: new VirtualClock() });
    await cache.start();
    await expect(cache.get('fast')).resolves.toMatchObject({ metadata: { name: 'fast' } });
    expect(gets()).toBe(1);
    await cache.stop();
  });

  test('a 403 is not taken for good (an apiserver just started answers so until its RBAC caches sync): once allowed, reads come from the watch again', async () => {
    await server.create(storageClass('fast'));
    server.faults.failNext({ verb: 'list', resource: 'storageclasses', code: 403, count: 3 });
    const cache = new StorageClassCache(api, { backoff: { initialMs: 5, maxMs: 20 } });
    await cache.start();
    await expect(cache.get('fast')).resolves.toMatchObject({ metadata: { name: 'fast' } });
    expect(gets()).toBe(1);
    await eventually(async () => {
      const before = gets();
      cache.clear();
      await cache.get('fast');
      return gets() === before;
    }, 'reads come from the watched copy');
    await cache.stop();
  });

  test('where watching is forbidden after the list, reads go by name again', async () => {
    server.faults.failNext({ verb: 'watch', resource: 'storageclasses', code: 403 });
    const cache = new StorageClassCache(api, { clock: new VirtualClock() });
    await cache.start();
    await eventually(async () => {
      await cache.get('probe');
      return gets() > 0;
    }, 'a read goes by name');
    await cache.stop();
  });
});
