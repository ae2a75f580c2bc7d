import { V1Node } from '@kubernetes/client-node';
import { serverAndApi } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { removeNodeTaint } from '../../../src/runtime/kube/node-taint';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;

beforeEach(async () => {
  ({ server, api } = await serverAndApi());
});
afterEach(() => server.reset());

const KEY = 'local.storage.k8s.io/provisioner-not-ready';

async function node(name: string, taints: Array<{ key: string; effect: string }>): Promise<V1Node> {
  return server.create<V1Node>({ apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: { taints } });
}

describe('removeNodeTaint', () => {
  test('removes the taint with the key and keeps the others', async () => {
    await node('n1', [{ key: KEY, effect: 'NoSchedule' }, { key: 'other', effect: 'NoExecute' }]);
    await expect(removeNodeTaint(api, 'n1', KEY)).resolves.toBe('removed');
    expect((await server.get<V1Node>('v1', 'Node', 'n1'))!.spec!.taints).toEqual([{ key: 'other', effect: 'NoExecute' }]);
  });

  test('a Node without the taint is left untouched', async () => {
    await node('n2', [{ key: 'other', effect: 'NoExecute' }]);
    await expect(removeNodeTaint(api, 'n2', KEY)).resolves.toBe('absent');
    expect(server.counters.get('update', 'nodes').requests).toBe(0);
  });

  test('a missing Node is reported, not thrown', async () => {
    await expect(removeNodeTaint(api, 'ghost', KEY)).resolves.toBe('node-not-found');
  });

  test('a conflicting update is retried on a fresh read', async () => {
    await node('n3', [{ key: KEY, effect: 'NoSchedule' }]);
    server.faults.failNext({ verb: 'update', resource: 'nodes', code: 409 });
    await expect(removeNodeTaint(api, 'n3', KEY)).resolves.toBe('removed');
    expect(server.counters.get('get', 'nodes').requests).toBe(2);
    expect((await server.get<V1Node>('v1', 'Node', 'n3'))!.spec!.taints ?? []).toEqual([]);
  });
});
