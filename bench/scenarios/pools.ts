/**
 * Pool classes: claims of a pool class to Bound and their pods to scheduled, through the
 * real scheduler (its capacity check included) and PV controller, for 1 and for 100 claims
 * made at once; then the agent's idle cost with 1 000 pool volumes.
 */
import { performance } from 'node:perf_hooks';
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../src/config';
import { createLoopDevice, makeTempDir, mkfsBtrfs, mount } from '../../test/support/privileged';
import { BenchCluster, constructRateLimitArgs, NODE, until } from '../cluster';
import { cpuSeconds, memoryWithChildren } from '../process-stats';
import { GiB, mib, millis, row, seconds } from '../table';

const POOL_CLASS = 'local-pool';
const APP = 'default';
const IDLE_WINDOW_MS = 20_000;

/** A cluster with the pool class and its CSIDriver, and the agent over a btrfs pool of `sizeBytes`. */
async function poolCluster(sizeBytes: number) {
  const cluster = await BenchCluster.start();
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
  const loop = createLoopDevice(sizeBytes);
  mkfsBtrfs(loop.device);
  const dir = makeTempDir('lvp-bench-pool-');
  mount(loop.device, dir, { type: 'btrfs' });
  const agent = await cluster.startAgent(dir, constructRateLimitArgs(), undefined, { [POOL_CLASS]: { hostDir: dir, mountDir: dir, pool: 'btrfs' } });
  await agent.waitReady();
  // Ready once it has published what the pool can give: before that the scheduler places no claim here.
  for (let t = Date.now(); (await cluster.k.list('storage.k8s.io/v1', 'CSIStorageCapacity')).length === 0;) {
    if (Date.now() - t > 60_000) throw new Error(`no capacity object after 60 s (log:\n${agent.log()})`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { cluster, agent };
}

function claim(name: string, size: string, selectedNode?: string): object {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: APP, ...(selectedNode ? { annotations: { 'volume.kubernetes.io/selected-node': selectedNode } } : {}) },
    spec: { storageClassName: POOL_CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } },
  };
}

function pod(name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: APP },
    spec: { containers: [{ name: 'app', image: 'registry.invalid/app:1' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: name } }] },
  };
}

/** `count` claims and their pods made at once: ms until every claim is Bound, and until every pod is scheduled. */
async function claimsToScheduled(cluster: BenchCluster, prefix: string, count: number): Promise<{ boundMs: number; scheduledMs: number }> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const t0 = performance.now();
  await Promise.all(names.map(async (n) => {
    await cluster.k.create(claim(n, '8Mi'));
    await cluster.k.create(pod(n));
  }));
  let boundMs = 0;
  let scheduledMs = 0;
  const deadline = Date.now() + 300_000;
  while (boundMs === 0 || scheduledMs === 0) {
    if (Date.now() > deadline) throw new Error(`${prefix}: not every claim bound and pod scheduled after 300 s`);
    const claims = (await cluster.k.list<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', APP)).filter((c) => c.metadata!.name!.startsWith(`${prefix}-`));
    const pods = (await cluster.k.list<V1Pod>('v1', 'Pod', APP)).filter((p) => p.metadata!.name!.startsWith(`${prefix}-`));
    if (boundMs === 0 && claims.filter((c) => c.status?.phase === 'Bound').length === count) boundMs = performance.now() - t0;
    if (scheduledMs === 0 && pods.filter((p) => p.spec?.nodeName === NODE).length === count) scheduledMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 20));
  }
  return { boundMs, scheduledMs };
}

export async function poolClaims(): Promise<void> {
  const { cluster, agent } = await poolCluster(4 * GiB);
  try {
    const one = await claimsToScheduled(cluster, 'one', 1);
    row('Pool class, 1 claim and its pod: created to claim Bound', millis(one.boundMs));
    row('Pool class, 1 claim and its pod: created to pod scheduled (the scheduler waits for the binding)', millis(one.scheduledMs));
    const hundred = await claimsToScheduled(cluster, 'many', 100);
    row('Pool class, 100 claims and pods at once: created to every claim Bound', seconds(hundred.boundMs), '≤ 10 s (issue 24; local-path takes minutes)',
      hundred.boundMs <= 10_000);
    row('Pool class, 100 claims and pods at once: created to every pod scheduled', seconds(hundred.scheduledMs), '≤ 10 s (issue 24)', hundred.scheduledMs <= 10_000);
  } finally {
    await agent.stop();
    await cluster.stop();
  }
}

/** 1 000 pool volumes (claims placed on the node as the scheduler would), then the agent idle. */
export async function poolIdle(): Promise<void> {
  const { cluster, agent } = await poolCluster(8 * GiB);
  const count = 1000;
  try {
    const t0 = performance.now();
    for (let i = 0; i < count; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) => cluster.k.create(claim(`idle-${i + j}`, '4Mi', NODE))));
    }
    await until(() => cluster.pvCount() >= count, `${count} pool PVs exist`, 600_000, 100);
    const madeMs = performance.now() - t0;
    row(`Pool class, ${count} claims placed on the node: created to every PV made`, seconds(madeMs));
    await new Promise((r) => setTimeout(r, 5000));
    const pid = agent.child.pid!;
    const cpu0 = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const idleCpu = cpuSeconds(pid) - cpu0;
    const memory = memoryWithChildren(pid);
    row(`Pool class, idle with ${count} pool volumes: RSS, private memory (agent and findmnt)`, `${mib(memory.rss)}, ${mib(memory.private)}`);
    row(`Pool class, idle with ${count} pool volumes: CPU over ${IDLE_WINDOW_MS / 1000} s`, `${idleCpu.toFixed(2)} s`);
  } finally {
    await agent.stop();
    await cluster.stop();
  }
}
