/**
 * Pool classes: claims of a pool class to Bound and their pods to scheduled, through the
 * real scheduler (its capacity check included) and PV controller, for 1 and for 100 claims
 * made at once; then 1 000 btrfs pool volumes made by the agent (and its CPU for them), by
 * the btrfs backend alone and by the btrfs commands alone, and the agent's idle cost with
 * 1 000 pool volumes.
 */
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../src/config';
import { BtrfsPool } from '../../src/runtime/pool/btrfs';
import { cleanupPrivileged, createLoopDevice, makeTempDir, mkfsBtrfs, mount } from '../../test/support/privileged';
import { BenchCluster, constructRateLimitArgs, NODE, until } from '../cluster';
import { cpuWithCommands, memoryWithChildren } from '../process-stats';
import { GiB, MiB, mib, millis, row, seconds } from '../table';

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

/** A fresh btrfs filesystem of 8 GiB with simple quotas, mounted. */
function btrfsPool(): string {
  const loop = createLoopDevice(8 * GiB);
  mkfsBtrfs(loop.device);
  const dir = makeTempDir('lvp-bench-btrfs-');
  mount(loop.device, dir, { type: 'btrfs' });
  execFileSync('btrfs', ['quota', 'enable', '--simple', dir]);
  return dir;
}

/**
 * `count` volumes of 4 MiB made one after another by the btrfs backend alone (BtrfsPool.create,
 * as the agent calls it for each claim), in this process: seconds and CPU (with the commands).
 */
async function backendAlone(count: number): Promise<{ ms: number; cpuMs: number }> {
  const pool = new BtrfsPool(btrfsPool());
  await pool.open();
  const cpu0 = cpuWithCommands(process.pid);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) await pool.create(`pvc-00000000-0000-0000-0000-${String(i).padStart(12, '0')}`, 4 * MiB);
  const ms = performance.now() - t0;
  return { ms, cpuMs: (cpuWithCommands(process.pid) - cpu0) * 1000 };
}

/**
 * `count` volumes made by the btrfs commands alone, from a shell, each with its group and
 * limit: as a person would (the subvolume, its ID read, its group made, joined and limited:
 * five commands), and the fewest there are (the group made and limited for the ID the
 * subvolume will get, known here, then the subvolume made in it: three). Milliseconds per volume.
 */
function toolsAlone(count: number): { person: number; fewest: number } {
  const person = 'btrfs -q subvolume create $d/v$i; id=$(btrfs inspect-internal rootid $d/v$i); '
    + 'btrfs qgroup create 1/$id $d; btrfs qgroup assign 0/$id 1/$id $d; btrfs qgroup limit 4m 1/$id $d';
  // A fresh filesystem gives its subvolumes IDs from 256 on.
  const fewest = 'id=$((255 + i)); btrfs qgroup create 1/$id $d; btrfs qgroup limit 4m 1/$id $d; btrfs -q subvolume create -i 1/$id $d/v$i';
  const run = (body: string) => Number(execFileSync('sh', ['-ec', `d=${btrfsPool()}; t=$(date +%s%N)
    for i in $(seq ${count}); do ${body}; done
    echo $(( ($(date +%s%N) - t) / 1000 ))`], { encoding: 'utf8' }).trim()) / 1000 / count;
  return { person: run(person), fewest: run(fewest) };
}

/** 1 000 pool volumes (claims placed on the node as the scheduler would), then the agent idle. */
export async function poolIdle(): Promise<void> {
  const count = 1000;
  const backend = await backendAlone(count);
  row(`btrfs pool, ${count} volumes made one after another by the backend alone (BtrfsPool.create, no cluster)`,
    `${seconds(backend.ms)}, ${(backend.ms / count).toFixed(1)} ms each (CPU with its commands ${(backend.cpuMs / count).toFixed(1)} ms)`);
  const tools = toolsAlone(count);
  row(`btrfs pool, ${count} volumes made by the btrfs commands alone: subvolume create, rootid, qgroup create, assign, limit (per volume)`, `${tools.person.toFixed(1)} ms`);
  row(`btrfs pool, ${count} volumes made by the btrfs commands alone: qgroup create and limit for the known next ID, subvolume create -i (per volume)`,
    `${tools.fewest.toFixed(1)} ms`);
  cleanupPrivileged();
  const { cluster, agent } = await poolCluster(8 * GiB);
  try {
    const pid = agent.child.pid!;
    const cpuBefore = cpuWithCommands(pid);
    const t0 = performance.now();
    for (let i = 0; i < count; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, count - i) }, (_, j) => cluster.k.create(claim(`idle-${i + j}`, '4Mi', NODE))));
    }
    await until(() => cluster.pvCount() >= count, `${count} pool PVs exist`, 600_000, 100);
    const madeMs = performance.now() - t0;
    const madeCpu = cpuWithCommands(pid) - cpuBefore;
    row(`Pool class, ${count} claims placed on the node: created to every PV made`, seconds(madeMs), '≤ 30 s (issue 37)', madeMs <= 30_000);
    row(`Pool class, ${count} claims placed on the node: the agent's CPU with the commands it ran, per volume`, `${((madeCpu * 1000) / count).toFixed(1)} ms`);
    await new Promise((r) => setTimeout(r, 5000));
    const cpu0 = cpuWithCommands(pid);
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const idleCpu = cpuWithCommands(pid) - cpu0;
    const memory = memoryWithChildren(pid);
    row(`Pool class, idle with ${count} pool volumes: RSS, private memory (agent, findmnt and its command shells)`, `${mib(memory.rss)}, ${mib(memory.private)}`);
    row(`Pool class, idle with ${count} pool volumes: CPU with its commands over ${IDLE_WINDOW_MS / 1000} s`, `${idleCpu.toFixed(2)} s`);
  } finally {
    await agent.stop();
    await cluster.stop();
  }
}
