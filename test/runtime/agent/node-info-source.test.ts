import { NodeInfoSource } from '../../../src/runtime/agent/node-info-source';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { createLogger } from '../../../src/runtime/observability';
import { Kubernetes } from '../../support/kubernetes';
import { eventually, serverAndApi } from '../kube/fixtures';

const logger = createLogger({ level: 'fatal' });

async function setUp() {
  const { server, api } = await serverAndApi();
  await server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-1', labels: { zone: 'a' } } });
  const requests = () => server.counters.total({ resource: 'nodes' }).requests;
  return { server, api, requests };
}

describe('NodeInfoSource', () => {
  test('once started, reads send no request and a label change is seen', async () => {
    const { server, api, requests } = await setUp();
    const nodes = new NodeInfoSource(api, 'worker-1', logger);
    try {
      await nodes.get();
      await nodes.start();
      const afterStart = requests();
      expect((await nodes.get()).labels).toMatchObject({ zone: 'a' });
      expect(requests()).toBe(afterStart);
      const node = await server.get('v1', 'Node', 'worker-1');
      await api.replaceNode({ ...node, metadata: { ...node.metadata, labels: { zone: 'b' } } });
      await eventually(async () => (await nodes.get()).labels.zone === 'b', 'the new label is seen');
    } finally {
      await nodes.stop();
      await server.reset();
    }
  });

  test('where watching nodes is forbidden, the Node is re-read at most once per max age', async () => {
    const { server, api, requests } = await setUp();
    let now = 0;
    const nodes = new NodeInfoSource(api, 'worker-1', logger, 60_000, () => now);
    try {
      server.faults.failNext({ verb: 'watch', resource: 'nodes', code: 403 });
      await nodes.start();
      await eventually(async () => {
        const before = requests();
        now += 60_000;
        await nodes.get();
        return requests() > before;
      }, 'the Node is read by name again');
      const before = requests();
      await nodes.get();
      expect(requests()).toBe(before);
    } finally {
      await nodes.stop();
      await server.reset();
    }
  });

  test('a watch forbidden for a moment (an apiserver just started) is watched again once allowed', async () => {
    const { server, api } = await setUp();
    const nodes = new NodeInfoSource(api, 'worker-1', logger);
    try {
      server.faults.failNext({ verb: 'watch', resource: 'nodes', code: 403, count: 2 });
      await nodes.start();
      expect((await nodes.get()).labels.zone).toBe('a');
      // Read by name meanwhile, the Node would be kept for a minute: only the watch brings the change sooner.
      const node = await server.get('v1', 'Node', 'worker-1');
      await api.replaceNode({ ...node, metadata: { ...node.metadata, labels: { zone: 'b' } } });
      await eventually(async () => (await nodes.get()).labels.zone === 'b', 'the new label is seen through the watch');
    } finally {
      await nodes.stop();
      await server.reset();
    }
  });

  test('a copy watched and then lost (the watch forbidden, as after an apiserver restart) is read again before it is served: a label changed meanwhile is seen', async () => {
    const { server, api } = await setUp();
    const nodes = new NodeInfoSource(api, 'worker-1', logger);
    try {
      // Read by name before the watch, a copy kept a minute; the watch then brings the same Node, no change, and no get() reads it.
      expect((await nodes.get()).labels.zone).toBe('a');
      await nodes.start();
      await eventually(() => server.openWatches > 0 && server.counters.get('watch', 'nodes').bytes > 0, 'the Node has come through the watch');
      // The server comes back with its RBAC caches cold: watches and the first reads by name are refused for a moment.
      server.faults.failNext({ verb: 'watch', resource: 'nodes', code: 403, count: 1000 });
      server.faults.failNext({ verb: 'list', resource: 'nodes', code: 403, count: 1000 });
      // Counted from here: a watch renewed before (its lifetime, a short one under load) is not the one tried again.
      const watches = server.counters.get('watch', 'nodes').requests;
      server.faults.closeWatches();
      const node = await server.get('v1', 'Node', 'worker-1');
      await server.replace({ ...node, metadata: { ...node.metadata, labels: { zone: 'b' } } });
      await eventually(() => server.counters.get('watch', 'nodes').requests > watches, 'the watch is tried again and refused');
      server.faults.failNext({ verb: 'get', resource: 'nodes', code: 403, count: 2 });
      expect((await nodes.get()).labels.zone).toBe('b');
    } finally {
      server.faults.clear();
      await nodes.stop();
      await server.reset();
    }
  });

  test('a Node last changed before the server\'s watch history began is watched without a relist loop', async () => {
    const server = await Kubernetes.forSuite();
    await server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-1', labels: { zone: 'a' } } });
    for (let i = 0; i < 10; i++) await server.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `ns-${i}` } });
    await server.compact();
    const api = new KubeApi(server.kubeConfig(), { backoff: { initialMs: 5, maxMs: 50 } });
    const nodes = new NodeInfoSource(api, 'worker-1', logger);
    try {
      await nodes.start();
      const node = await server.get('v1', 'Node', 'worker-1');
      await api.replaceNode({ ...node, metadata: { ...node.metadata, labels: { zone: 'b' } } });
      await eventually(async () => (await nodes.get()).labels.zone === 'b', 'the change is seen by the watch');
      expect(server.counters.get('get', 'nodes').requests).toBe(1);
    } finally {
      await nodes.stop();
      await server.reset();
    }
  });
});
