import { localPv, serverAndApi } from './fixtures';
import { adoptUnlabelledPersistentVolumes, provisionedBy, upstreamDeviceNode } from '../../../src/runtime/kube/adoption';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { NODE_LABEL, DEVICE_DIALECT_NODE_LABELS } from '../../../src/runtime/well-known';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;

beforeEach(async () => {
  ({ server, api } = await serverAndApi());
});
afterEach(() => server.reset());

const labelOf = async (name: string) => (await server.get('v1', 'PersistentVolume', name))?.metadata.labels?.[NODE_LABEL];

describe('adoptUnlabelledPersistentVolumes', () => {
  test('labels the PVs the Go provisioner of this node created, under their upstream names', async () => {
    await server.create(localPv('local-pv-2d3f1a7b', { node: 'node-a', labelled: false, provisioner: 'local-volume-provisioner-node-a-uid-a' }));
    const result = await adoptUnlabelledPersistentVolumes(api, { nodeName: 'node-a', criterion: provisionedBy('local-volume-provisioner-node-a-uid-a') });
    expect(result.adopted).toEqual(['local-pv-2d3f1a7b']);
    expect(await labelOf('local-pv-2d3f1a7b')).toBe('node-a');
  });

  test("leaves other nodes' and other provisioners' PVs alone", async () => {
    await server.create(localPv('other-node', { node: 'node-b', labelled: false, provisioner: 'local-volume-provisioner-node-b-uid-b' }));
    await server.create(localPv('other-provisioner', { node: 'node-a', labelled: false, provisioner: 'rancher.io/local-path' }));
    const result = await adoptUnlabelledPersistentVolumes(api, { nodeName: 'node-a', criterion: provisionedBy('local-volume-provisioner-node-a-uid-a') });
    expect(result).toEqual({ examined: 2, adopted: [] });
    expect(await labelOf('other-node')).toBeUndefined();
    expect(await labelOf('other-provisioner')).toBeUndefined();
  });

  test('does not list PVs that already carry our label', async () => {
    await server.create(localPv('already', { node: 'node-a' }));
    const result = await adoptUnlabelledPersistentVolumes(api, { nodeName: 'node-a', criterion: provisionedBy('local-volume-provisioner-node-a') });
    expect(result).toEqual({ examined: 0, adopted: [] });
    expect(server.counters.get('patch', 'persistentvolumes').requests).toBe(0);
  });

  test('pages through the unlabelled PVs a page at a time', async () => {
    for (let i = 0; i < 7; i++) {
      const node = i % 2 === 0 ? 'node-a' : 'node-b';
      await server.create(localPv(`pv-${i}`, { node, labelled: false, provisioner: `local-volume-provisioner-${node}` }));
    }
    const result = await adoptUnlabelledPersistentVolumes(api, {
      nodeName: 'node-a', criterion: provisionedBy('local-volume-provisioner-node-a'), pageSize: 3,
    });
    expect(result).toEqual({ examined: 7, adopted: ['pv-0', 'pv-2', 'pv-4', 'pv-6'] });
    expect(server.counters.get('list', 'persistentvolumes').requests).toBe(3);
  });

  test('device dialect: adopts by the upstream node label, selected on the server', async () => {
    await server.create(localPv('dev-a', { node: 'node-a', labelled: false, provisioner: 'x', labels: { [DEVICE_DIALECT_NODE_LABELS[0]]: 'node-a' } }));
    await server.create(localPv('dev-b', { node: 'node-b', labelled: false, provisioner: 'x', labels: { [DEVICE_DIALECT_NODE_LABELS[0]]: 'node-b' } }));
    const result = await adoptUnlabelledPersistentVolumes(api, { nodeName: 'node-a', criterion: upstreamDeviceNode('node-a') });
    expect(result).toEqual({ examined: 1, adopted: ['dev-a'] });
    expect(await labelOf('dev-b')).toBeUndefined();
  });

  test('device dialect: adopts by the older .com spelling of the upstream node label when asked', async () => {
    await server.create(localPv('legacy', { node: 'node-a', labelled: false, provisioner: 'x', labels: { [DEVICE_DIALECT_NODE_LABELS[1]]: 'node-a' } }));
    const result = await adoptUnlabelledPersistentVolumes(api, { nodeName: 'node-a', criterion: upstreamDeviceNode('node-a', DEVICE_DIALECT_NODE_LABELS[1]) });
    expect(result).toEqual({ examined: 1, adopted: ['legacy'] });
  });

  test('a second pass finds nothing more to do', async () => {
    await server.create(localPv('once', { node: 'node-a', labelled: false }));
    const criterion = provisionedBy('local-volume-provisioner-node-a');
    await adoptUnlabelledPersistentVolumes(api, { nodeName: 'node-a', criterion });
    await expect(adoptUnlabelledPersistentVolumes(api, { nodeName: 'node-a', criterion })).resolves.toEqual({ examined: 0, adopted: [] });
  });
});
