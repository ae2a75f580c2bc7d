/**
 * The connections a KubeApi holds to a real apiserver, through the fault proxy, which
 * speaks HTTP/2 and HTTP/1.1 as the apiserver does and passes each on in its own protocol:
 * one HTTP/2 connection for every request and watch where the server picks h2, HTTP/1.1
 * where it does not, and what the client does when that one connection is told to go
 * away, has a stream refused or reset, or goes silent.
 */
import * as path from 'node:path';
import { eventually, localPv } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { HttpTransport, HttpTransportOptions } from '../../../src/runtime/kube/http-transport';
import { KubeConfigData } from '../../../src/runtime/kube/kubeconfig';
import { KubeRequesterOptions } from '../../../src/runtime/kube/request';
import { FaultProxy } from '../../support/fault-proxy';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
const clients: KubeApi[] = [];

beforeAll(async () => {
  server = await Kubernetes.forSuite();
});
afterEach(async () => {
  for (const api of clients.splice(0)) api.close();
  server.faults.clear();
  await server.reset();
});

/** A KubeApi with a transport of its own, on `kubeConfig` (the suite's proxy by default), with quick retries. */
function client(options: KubeRequesterOptions = {}, transportOptions: HttpTransportOptions = {},
  kubeConfig: KubeConfigData = server.kubeConfig()): { api: KubeApi; transport: HttpTransport } {
  const transport = new HttpTransport(kubeConfig, transportOptions);
  const api = new KubeApi(kubeConfig, { backoff: { initialMs: 5, maxMs: 50 }, ...options, transport });
  clients.push(api);
  return { api, transport };
}

interface Watching {
  /** `TYPE name` of each event. */
  readonly events: string[];
  opened: boolean;
  /** How the watch ended: 'ended' when the server ended it, or the error it failed with. */
  readonly done: Promise<'ended' | Error>;
}

const PATHS: Record<string, string> = {
  nodes: '/api/v1/nodes',
  persistentvolumes: '/api/v1/persistentvolumes',
  storageclasses: '/apis/storage.k8s.io/v1/storageclasses',
  persistentvolumeclaims: '/api/v1/persistentvolumeclaims',
  configmaps: '/api/v1/configmaps',
};

/** Watches `resource` from now until the server ends it, it fails, or the test's client is closed. */
function watch(api: KubeApi, resource: string, timeoutSeconds = 300): Watching {
  const stop = new AbortController();
  const watching: Watching = {
    events: [],
    opened: false,
    done: api.watch({ resource, path: PATHS[resource], resourceVersion: '', timeoutSeconds },
      (type, object) => watching.events.push(`${type} ${(object as { metadata?: { name?: string } }).metadata?.name}`), stop.signal, () => {
        watching.opened = true;
      }).then(() => 'ended' as const, (e: Error) => e),
  };
  clients.push({ close: () => stop.abort() } as KubeApi);
  return watching;
}

describe('one HTTP/2 connection to the apiserver', () => {
  test('sequential requests over TLS share a connection, verified against the kubeconfig CA', async () => {
    const { api } = client();
    const before = server.proxy.connectionsAccepted;
    for (let i = 0; i < 20; i++) await api.getNode(`n-${i}`);
    expect(server.proxy.connectionsAccepted - before).toBe(1);
  });

  test('five watches and twenty requests at once share one connection, over h2, where the server offers h2', async () => {
    const { api, transport } = client();
    const before = server.proxy.connectionsAccepted;
    const watches = Object.keys(PATHS).map((resource) => watch(api, resource));
    await eventually(() => watches.every((w) => w.opened), 'the five watches are open');
    await Promise.all(Array.from({ length: 20 }, (_, i) => api.getNode(`n-${i}`)));
    expect(server.proxy.connectionsAccepted - before).toBe(1);
    expect(transport.protocol).toBe('h2');
  });

  test('a request finds no room beside as many watches as the server allows streams: it goes on a second connection, closed once it is done', async () => {
    const { api } = client();
    const before = server.proxy.connectionsAccepted;
    const watches = Array.from({ length: 100 }, () => watch(api, 'nodes'));
    await eventually(() => watches.every((w) => w.opened), 'the hundred watches are open', 60_000);
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    expect(server.proxy.connectionsAccepted - before).toBe(2);
    await eventually(() => server.proxy.openConnections === 1, 'only the watches\' connection is open');
  });

  test('where the server does not pick h2 (a proxy offering HTTP/1.1 only), requests and watches go over HTTP/1.1', async () => {
    const file = (name: string) => path.join(server.plane.dir, name);
    const http1Only = await FaultProxy.start(server.plane.url, { caFile: file('ca.crt'), certFile: file('serving.crt'), keyFile: file('serving.key') },
      { protocols: ['http/1.1'] });
    try {
      const config = server.kubeConfig();
      const { api, transport } = client({}, {}, { ...config, clusters: config.clusters.map((c) => ({ ...c, server: http1Only.url })) });
      const nodes = watch(api, 'nodes');
      await eventually(() => nodes.opened, 'the watch is open');
      await server.createNode({ metadata: { name: 'over-http1' } });
      await eventually(() => nodes.events.includes('ADDED over-http1'), 'the watch has seen the node');
      await expect(api.getNode('over-http1')).resolves.toMatchObject({ metadata: { name: 'over-http1' } });
      expect(transport.protocol).toBe('http/1.1');
      expect(http1Only.connectionProtocols.every((p) => p === 'http/1.1')).toBe(true);
    } finally {
      await http1Only.stop();
    }
  });

  test('DISABLE_HTTP2 (client-go\'s switch) keeps HTTP/1.1 where the server offers h2', async () => {
    process.env.DISABLE_HTTP2 = '1';
    let transport: HttpTransport;
    try {
      ({ transport } = client());
    } finally {
      delete process.env.DISABLE_HTTP2;
    }
    await clients[clients.length - 1].getNode('n');
    expect(transport.protocol).toBe('http/1.1');
  });

  test('after a GOAWAY, new requests go on a new connection and the watch the server had accepted goes on', async () => {
    const { api } = client();
    const nodes = watch(api, 'nodes');
    await eventually(() => nodes.opened, 'the watch is open');
    const before = server.proxy.connectionsAccepted;
    server.proxy.goaway();
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    expect(server.proxy.connectionsAccepted - before).toBe(1);
    await server.createNode({ metadata: { name: 'after-goaway' } });
    await eventually(() => nodes.events.includes('ADDED after-goaway'), 'the watch on the old connection has seen the node');
  });

  test('a write the server refused (REFUSED_STREAM: not processed) is sent again', async () => {
    const { api } = client();
    server.proxy.refuseNext({ verb: 'create', resource: 'persistentvolumes' });
    await expect(api.createPersistentVolume(localPv('refused-once', { node: 'n1' }))).resolves.toMatchObject({ metadata: { name: 'refused-once' } });
    expect(server.proxy.get('create', 'persistentvolumes').requests).toBe(2);
  });

  test('a write whose stream is reset after the server processed it is not sent again: it fails, and was applied', async () => {
    const { api } = client();
    server.proxy.resetNext({ verb: 'create', resource: 'persistentvolumes' });
    await expect(api.createPersistentVolume(localPv('reset-after', { node: 'n1' }))).rejects.toMatchObject({ kind: 'network', attempts: 1 });
    await expect(server.core.readPersistentVolume({ name: 'reset-after' })).resolves.toMatchObject({ metadata: { name: 'reset-after' } });
  });

  test('a read whose stream is reset is sent again', async () => {
    const { api } = client();
    server.proxy.resetNext({ verb: 'get', resource: 'nodes' });
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    expect(server.proxy.get('get', 'nodes').requests).toBe(2);
  });

  test('a watch whose stream is reset fails, and the connection stays for the next request', async () => {
    const { api } = client();
    const nodes = watch(api, 'nodes');
    await eventually(() => nodes.opened, 'the watch is open');
    const before = server.proxy.connectionsAccepted;
    server.proxy.resetWatches();
    await expect(nodes.done).resolves.toMatchObject({ message: expect.stringMatching(/INTERNAL_ERROR|ECONNRESET|socket hang up|aborted/) });
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    expect(server.proxy.connectionsAccepted - before).toBe(0);
  });

  test('a watch the apiserver ends at its timeout ends quietly, and the connection stays for the next request', async () => {
    const { api } = client();
    const before = server.proxy.connectionsAccepted;
    const nodes = watch(api, 'nodes', 1);
    await expect(nodes.done).resolves.toBe('ended');
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    expect(server.proxy.connectionsAccepted - before).toBe(1);
  });

  test('a request on a connection gone silent: the connection is dropped when a PING goes unanswered, and the request is sent again on a new one', async () => {
    const { api } = client({ requestTimeoutMs: 1000 }, { pingTimeoutMs: 500 });
    await api.getNode('warm');
    const before = server.proxy.connectionsAccepted;
    server.proxy.freeze();
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    expect(server.proxy.connectionsAccepted - before).toBe(1);
  });

  test('a watch on a connection gone silent fails once a PING goes unanswered', async () => {
    const { api } = client({}, { readIdleMs: 300, pingTimeoutMs: 300 });
    const nodes = watch(api, 'nodes');
    await eventually(() => nodes.opened, 'the watch is open');
    server.proxy.freeze();
    await expect(nodes.done).resolves.toMatchObject({ message: expect.stringMatching(/PING/) });
  });
});
