import { serverAndApi } from './fixtures';
import { VirtualClock } from './virtual-clock';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { StorageClassCache } from '../../../src/runtime/kube/storage-class-cache';
import { TestApiServer } from '../../apiserver';

let server: TestApiServer;
let api: KubeApi;

beforeEach(async () => {
  ({ server, api } = await serverAndApi());
});
afterEach(() => server.stop());

const gets = () => server.counters.get('get', 'storageclasses').requests;

function storageClass(name: string) {
  return { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name }, provisioner: 'kubernetes.io/no-provisioner', reclaimPolicy: 'Retain' };
}

describe('StorageClassCache', () => {
  test('reuses an answer within the TTL and asks again after it', async () => {
    server.create(storageClass('fast'));
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
    server.create(storageClass('later'));
    await expect(cache.get('later')).resolves.toBeUndefined();
    clock.advance(1000);
    await expect(cache.get('later')).resolves.toMatchObject({ metadata: { name: 'later' } });
  });

  test('a failed read is not cached', async () => {
    server.create(storageClass('flaky'));
    const cache = new StorageClassCache(api, { clock: new VirtualClock() });
    server.faults.failNext({ verb: 'get', resource: 'storageclasses', code: 403 });
    await expect(cache.get('flaky')).rejects.toThrow('get storageclasses "flaky": 403');
    await expect(cache.get('flaky')).resolves.toMatchObject({ metadata: { name: 'flaky' } });
  });

  test('concurrent reads share one request', async () => {
    server.create(storageClass('shared'));
    const cache = new StorageClassCache(api, { clock: new VirtualClock() });
    await Promise.all([cache.get('shared'), cache.get('shared'), cache.get('shared')]);
    expect(gets()).toBe(1);
  });
});
