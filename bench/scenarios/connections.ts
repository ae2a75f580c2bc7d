/**
 * Connections per agent (issue 37, item 4): the agent (the bundled bin with a pool class over
 * btrfs: every watch it opens, PVs, StorageClasses, claims, its Node) against the real
 * apiserver through the proxy, once over HTTP/2 (its default where the server offers h2) and
 * once over HTTP/1.1 (DISABLE_HTTP2=1, client-go's switch): the TCP connections it holds once
 * ready, counted at both ends (the agent's ESTABLISHED sockets to the proxy, read from /proc,
 * and the proxy's open client connections), its memory, and its CPU idle with its watches open.
 * Then a watch's event latency per protocol, in this process: a write straight to the
 * apiserver until the event reaches a watch through the proxy, with four more watches open
 * beside it as the agent has.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { POOL_PROVISIONER, resolveProvisionerConfig, serializeProvisionerConfig } from '../../src/config';
import { KubeApi } from '../../src/runtime/kube/api-client';
import { HttpTransport } from '../../src/runtime/kube/http-transport';
import { loadKubeConfig } from '../../src/runtime/kube/kubeconfig';
import { AgentProcess, bundledBin } from '../../test/support/agent-process';
import { createLoopDevice, makeTempDir, mkfsBtrfs, mount } from '../../test/support/privileged';
import { BenchCluster, constructRateLimitArgs, IMAGE_NODE_OPTIONS, NAMESPACE, NODE, until } from '../cluster';
import { cpuSeconds, memoryWithChildren } from '../process-stats';
import { GiB, mib, millis, percentile, row } from '../table';

const POOL_CLASS = 'local-pool';
const IDLE_WINDOW_MS = 20_000;
const LATENCY_EVENTS = 200;

/** TCP connections of process `pid` in state ESTABLISHED whose remote port is `port` (its sockets' inodes matched in its net namespace's table). */
export function establishedTo(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  let count = 0;
  for (const table of ['tcp', 'tcp6']) {
    for (const line of fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const remotePort = parseInt(f[2].split(':')[1], 16);
      if (f[3] === '01' && remotePort === port && inodes.has(f[9])) count++;
    }
  }
  return count;
}

async function poolAgent(cluster: BenchCluster, dir: string, env: Record<string, string>): Promise<AgentProcess> {
  const configDir = makeTempDir('lvp-bench-config-');
  const resolved = resolveProvisionerConfig({ storageClassMap: { [POOL_CLASS]: { hostDir: dir, mountDir: dir, pool: 'btrfs' } } });
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.errors));
  for (const [key, value] of Object.entries(serializeProvisionerConfig(resolved.config))) fs.writeFileSync(path.join(configDir, key), value);
  return AgentProcess.start(
    ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--state-dir', makeTempDir('lvp-bench-state-'), ...constructRateLimitArgs()],
    { KUBECONFIG: await cluster.kubeconfigFile(), MY_NODE_NAME: NODE, MY_NAMESPACE: NAMESPACE, NODE_OPTIONS: IMAGE_NODE_OPTIONS, ...env },
    { entry: [bundledBin()], containerEnv: true },
  );
}

interface Held {
  readonly agentSide: number;
  readonly proxySide: number;
  readonly watches: number;
  readonly rss: number;
  readonly private: number;
  readonly idleCpuS: number;
}

async function heldByAgent(cluster: BenchCluster, dir: string, env: Record<string, string>): Promise<Held> {
  const agent = await poolAgent(cluster, dir, env);
  try {
    await agent.waitReady();
    // Ready once it has published what the pool can give; then its watches are all open.
    await until(() => cluster.k.proxy.openWatches >= 4, 'the agent has its watches open', 60_000, 50);
    await new Promise((r) => setTimeout(r, 5000));
    const pid = agent.child.pid!;
    const port = Number(new URL(cluster.k.url).port);
    const cpu0 = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const idleCpuS = cpuSeconds(pid) - cpu0;
    const memory = memoryWithChildren(pid);
    return {
      agentSide: establishedTo(pid, port),
      proxySide: cluster.k.proxy.openConnections,
      watches: cluster.k.proxy.openWatches,
      rss: memory.rss,
      private: memory.private,
      idleCpuS,
    };
  } finally {
    await agent.stop();
    await until(() => cluster.k.proxy.openConnections === 0, 'the agent\'s connections are closed', 30_000, 50);
  }
}

/** Milliseconds from a ConfigMap's create (straight to the apiserver) to its ADDED event on a watch through the proxy, `LATENCY_EVENTS` times. */
async function watchLatency(cluster: BenchCluster, http2: boolean): Promise<{ p50: number; p99: number; protocol: string }> {
  const transport = new HttpTransport(loadKubeConfig(await cluster.kubeconfigFile()), { http2 });
  const api = new KubeApi(transport.config, { transport });
  const stop = new AbortController();
  const seen = new Map<string, number>();
  const beside = ['persistentvolumes', 'storageclasses', 'nodes', 'persistentvolumeclaims'].map((resource) =>
    api.watch({ resource, path: resource === 'storageclasses' ? '/apis/storage.k8s.io/v1/storageclasses' : `/api/v1/${resource}`, resourceVersion: '', timeoutSeconds: 600 },
      () => {}, stop.signal).catch(() => {}));
  let opened = false;
  const watch = api.watch({ resource: 'configmaps', path: `/api/v1/namespaces/${NAMESPACE}/configmaps`, resourceVersion: '', timeoutSeconds: 600 },
    (type, object) => {
      const name = (object as { metadata?: { name?: string } }).metadata?.name ?? '';
      if (type === 'ADDED' && name.startsWith('latency-')) seen.set(name, performance.now());
    }, stop.signal, () => {
      opened = true;
    }).catch(() => {});
  try {
    await until(() => opened, 'the latency watch is open', 30_000, 10);
    const latencies: number[] = [];
    for (let i = 0; i < LATENCY_EVENTS; i++) {
      const name = `latency-${http2 ? 'h2' : 'h1'}-${i}`;
      const sent = performance.now();
      await cluster.k.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NAMESPACE }, data: { i: String(i) } });
      await until(() => seen.has(name), `the watch has seen ${name}`, 30_000, 1);
      latencies.push(seen.get(name)! - sent);
    }
    return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), protocol: transport.protocol ?? '?' };
  } finally {
    stop.abort();
    await Promise.all([watch, ...beside]);
    api.close();
  }
}

export async function connectionsPerAgent(): Promise<void> {
  const cluster = await BenchCluster.start();
  try {
    await cluster.k.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: POOL_CLASS },
      provisioner: POOL_PROVISIONER,
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    });
    await cluster.k.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: POOL_PROVISIONER },
      spec: { attachRequired: false, storageCapacity: true, volumeLifecycleModes: ['Persistent'] },
    });
    const loop = createLoopDevice(1 * GiB);
    mkfsBtrfs(loop.device);
    const dir = makeTempDir('lvp-bench-pool-');
    mount(loop.device, dir, { type: 'btrfs' });
    for (const [label, env] of [['HTTP/1.1 (DISABLE_HTTP2=1)', { DISABLE_HTTP2: '1' }], ['HTTP/2 (the default)', {}]] as const) {
      const held = await heldByAgent(cluster, dir, env);
      row(`Agent with a pool class, idle, ${label}: TCP connections to the API server (agent's ESTABLISHED sockets / proxy's open connections; ${held.watches} watches open)`,
        `${held.agentSide} / ${held.proxySide}`);
      row(`Agent with a pool class, idle, ${label}: RSS, private memory (agent, findmnt and its command shells)`, `${mib(held.rss)}, ${mib(held.private)}`);
      row(`Agent with a pool class, idle, ${label}: CPU over ${IDLE_WINDOW_MS / 1000} s`, `${held.idleCpuS.toFixed(2)} s`);
    }
    for (const http2 of [false, true]) {
      const latency = await watchLatency(cluster, http2);
      row(`Watch event latency (${latency.protocol}, 5 watches open): a ConfigMap's create to its event, p50 / p99 of ${LATENCY_EVENTS}`,
        `${millis(latency.p50)} / ${millis(latency.p99)}`);
    }
  } finally {
    await cluster.stop();
  }
}
