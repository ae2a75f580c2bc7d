/**
 * What the cluster's claims cost a node's agent (issue 37): with a pool class, an agent
 * watches claims. Without the claim routing it watches every claim of the cluster; with it
 * (constructs/claim-routing.ts, the API server labelling each claim with its node), only
 * its node's. Measured on the tests' control plane, the agent as the image runs it:
 * - one agent, with K claims of other nodes in the cluster: its RSS when idle, its peak RSS
 *   while it starts, and start to ready, routed and watching every claim;
 * - N agents against one apiserver with K claims, while claims of other nodes are written
 *   at a steady rate: each agent's RSS, the apiserver's CPU, and the bytes each claim
 *   written sends to each agent (what the proxy passed on to their claim watches).
 * docs/benchmarks.md extrapolates both to 5 000 nodes and 100 000 claims.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { POOL_CLAIM_NODE_LABEL, POOL_PROVISIONER } from '../../src/config';
import { claimRoutingPolicySpec } from '../../src/constructs/claim-routing';
import { AgentProcess } from '../../test/support/agent-process';
import { createLoopDevice, makeTempDir, mkfsBtrfs, mount } from '../../test/support/privileged';
import { BenchCluster } from '../cluster';
import { cpuSeconds, rssBytes } from '../process-stats';
import { mib, row, seconds } from '../table';

const POOL_CLASS = 'scale-pool';
const ROUTING = 'bench-claim-routing';
const APP = 'default';
/** How fast claims of other nodes are written while the agents run (issue 37: 50/s). */
const WRITES_PER_SECOND = 50;
const WRITE_SECONDS = 20;

interface OneAgent {
  readonly rss: number;
  readonly peak: number;
  readonly startMs: number;
  /** The apiserver's answer to the agent's list of its node's claims (none match), from the bench: median ms. */
  readonly listMs: number;
}

/** A control plane with the pool class, its StorageClass and CSIDriver, and (routed) the claim routing in force. */
async function cluster(routed: boolean): Promise<BenchCluster> {
  const c = await BenchCluster.start();
  await c.k.create({
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: POOL_CLASS }, provisioner: POOL_PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer',
  });
  if (routed) {
    await c.k.create({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingAdmissionPolicy', metadata: { name: ROUTING }, spec: claimRoutingPolicySpec({ name: ROUTING, poolClasses: [POOL_CLASS] }) });
    await c.k.create({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingAdmissionPolicyBinding', metadata: { name: ROUTING }, spec: { policyName: ROUTING } });
    // The apiserver applies a policy a moment after it is stored: the claims made from here on must all be labelled.
    for (let i = 0; ; i++) {
      await c.k.create(claimOf(`probe-${i}`, 'nowhere'));
      const labelled = (await c.k.get<{ metadata?: { labels?: Record<string, string> } }>('v1', 'PersistentVolumeClaim', `probe-${i}`, APP))?.metadata?.labels;
      await c.k.delete('v1', 'PersistentVolumeClaim', `probe-${i}`, APP);
      if (labelled) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return c;
}

function claimOf(name: string, node: string): object {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: APP, annotations: { 'volume.kubernetes.io/selected-node': node } },
    spec: { storageClassName: POOL_CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  };
}

/** `count` claims of 500 other nodes, 32 requests at a time. */
async function createClaims(c: BenchCluster, count: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < count) {
      const i = next++;
      await c.k.create(claimOf(`other-${i}`, `other-${i % 500}`));
    }
  }));
}

/** A btrfs filesystem the agents' pool directories are in (none of them makes a volume: no claim is theirs). */
function poolFilesystem(): string {
  const loop = createLoopDevice(256 * 1024 * 1024);
  mkfsBtrfs(loop.device);
  const dir = makeTempDir('lvp-bench-claim-pools-');
  mount(loop.device, dir, { type: 'btrfs' });
  return dir;
}

async function startAgent(c: BenchCluster, pools: string, node: string, routed: boolean): Promise<AgentProcess> {
  const dir = path.join(pools, node);
  fs.mkdirSync(dir, { recursive: true });
  return c.startAgent(dir, [...routed ? [`--claim-routing=${ROUTING}`] : [], '--discovery-period=1m'], undefined,
    { [POOL_CLASS]: { hostDir: dir, mountDir: dir, pool: 'btrfs' } }, node);
}

/** VmHWM: the most the process ever held. */
function peakRss(pid: number): number {
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

/** Starts of one agent measured per K: one start is a few tenths of a second, which a busy moment of the machine can double. */
const STARTS = 5;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The median of STARTS agents started one after another, each on a node of its own (so each starts as a new node's does). */
async function oneAgent(claims: number, routed: boolean): Promise<OneAgent> {
  const c = await cluster(routed);
  try {
    await createClaims(c, claims);
    const listMs = await nodeClaimsList(c, routed);
    const pools = poolFilesystem();
    const runs: Array<Omit<OneAgent, 'listMs'>> = [];
    for (let i = 0; i < STARTS; i++) {
      const node = `bench-node-${i}`;
      await c.k.createNode({ metadata: { name: node, labels: { 'kubernetes.io/hostname': node } } });
      const t0 = performance.now();
      const agent = await startAgent(c, pools, node, routed);
      try {
        await agent.waitReady();
        const startMs = performance.now() - t0;
        await new Promise((r) => setTimeout(r, 5000));
        runs.push({ rss: rssBytes(agent.child.pid!), peak: peakRss(agent.child.pid!), startMs });
      } finally {
        await agent.stop();
      }
    }
    return { rss: median(runs.map((r) => r.rss)), peak: median(runs.map((r) => r.peak)), startMs: median(runs.map((r) => r.startMs)), listMs };
  } finally {
    await c.stop();
  }
}

/**
 * The list an agent's claim watch starts with, as the bench times it (median of 11): routed, the
 * claims labelled with a node that has none; else every claim. Its cost is the apiserver's.
 */
async function nodeClaimsList(c: BenchCluster, routed: boolean): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 11; i++) {
    const t0 = performance.now();
    await c.k.core.listPersistentVolumeClaimForAllNamespaces(routed ? { labelSelector: `${POOL_CLAIM_NODE_LABEL}=bench-node-none` } : {});
    times.push(performance.now() - t0);
  }
  return median(times);
}

/** N agents, K claims, claims of other nodes written at WRITES_PER_SECOND for WRITE_SECONDS. */
interface ManyAgents {
  /** Mean RSS per agent. */
  readonly rss: number;
  /** The apiserver's CPU seconds over the writes. */
  readonly apiserverCpu: number;
  readonly bytesPerWritePerAgent: number;
  readonly writes: number;
}

async function manyAgents(agents: number, claims: number, routed: boolean): Promise<ManyAgents> {
  const c = await cluster(routed);
  const running: AgentProcess[] = [];
  try {
    await createClaims(c, claims);
    const pools = poolFilesystem();
    for (let i = 0; i < agents; i++) {
      await c.k.createNode({ metadata: { name: `agent-${i}`, labels: { 'kubernetes.io/hostname': `agent-${i}` } } });
      running.push(await startAgent(c, pools, `agent-${i}`, routed));
    }
    await Promise.all(running.map((a) => a.waitReady()));
    await new Promise((r) => setTimeout(r, 5000));
    const apiserver = Number(execFileSync('pgrep', ['-f', `kube-apiserver.*--secure-port=${c.k.plane.port}`], { encoding: 'utf8' }).trim().split('\n')[0]);
    const watchBytes = () => c.k.counters.total({ verb: 'watch', resource: 'persistentvolumeclaims' }).bytes;
    const cpu0 = cpuSeconds(apiserver);
    const bytes0 = watchBytes();
    let writes = 0;
    const started = performance.now();
    while (performance.now() - started < WRITE_SECONDS * 1000) {
      const due = Math.floor(((performance.now() - started) / 1000) * WRITES_PER_SECOND);
      const batch: Array<Promise<unknown>> = [];
      while (writes < due) {
        const i = writes++ % claims;
        batch.push(c.k.patch('v1', 'PersistentVolumeClaim', `other-${i}`, { metadata: { labels: { written: String(writes) } } }, APP));
      }
      await Promise.all(batch);
      await new Promise((r) => setTimeout(r, 20));
    }
    // What was sent for the writes has reached the watchers by the time the proxy has passed on every byte: let the streams drain.
    await new Promise((r) => setTimeout(r, 2000));
    const apiserverCpu = cpuSeconds(apiserver) - cpu0;
    const bytesPerWritePerAgent = (watchBytes() - bytes0) / writes / agents;
    const rss = running.map((a) => rssBytes(a.child.pid!)).reduce((a, b) => a + b, 0) / agents;
    return { rss, apiserverCpu, bytesPerWritePerAgent, writes };
  } finally {
    await Promise.all(running.map((a) => a.stop()));
    await c.stop();
  }
}

export async function claimScale(): Promise<void> {
  const results: Array<{ claims: number; routed: boolean; one: OneAgent }> = [];
  for (const claims of [0, 5_000, 20_000]) {
    for (const routed of [false, true]) results.push({ claims, routed, one: await oneAgent(claims, routed) });
  }
  const base = (routed: boolean) => results.find((r) => r.claims === 0 && r.routed === routed)!.one;
  for (const { claims, routed, one } of results) {
    const how = routed ? 'routed (claim routing in force)' : 'watching every claim';
    const vs = claims === 0 ? '' : ` (${(one.rss / base(routed).rss).toFixed(2)}× RSS, ${(one.startMs / base(routed).startMs).toFixed(2)}× start of K = 0)`;
    const within = claims === 20_000 && routed
      ? { goal: 'RSS and start within 10 % of K = 0 (issue 37)', met: one.rss <= base(true).rss * 1.1 && one.startMs <= base(true).startMs * 1.1 } : undefined;
    row(`One agent with a pool class, ${claims} claims of other nodes, ${how}: RSS idle / peak RSS at start / start to ready (medians of ${STARTS})`,
      `${mib(one.rss)} / ${mib(one.peak)} / ${seconds(one.startMs)}${vs}`, within?.goal, within?.met);
    row(`  the same: the apiserver's answer to the list its claim watch starts with (${routed ? 'this node\'s claims: none' : 'every claim'}), median of 11`,
      `${one.listMs.toFixed(1)} ms`);
  }
  for (const routed of [false, true]) {
    const m = await manyAgents(30, 5_000, routed);
    const how = routed ? 'routed' : 'watching every claim';
    row(`30 agents, 5 000 claims, ${WRITES_PER_SECOND} claim writes/s of other nodes for ${WRITE_SECONDS} s, ${how}: RSS per agent`, mib(m.rss));
    row('  the same: apiserver CPU per claim write, and bytes each write sends each agent',
      `${((m.apiserverCpu / m.writes) * 1000).toFixed(2)} ms, ${m.bytesPerWritePerAgent.toFixed(0)} B (${m.writes} writes)`,
      routed ? '0 bytes to an agent for a claim of another node (issue 37)' : undefined, routed ? m.bytesPerWritePerAgent < 1 : undefined);
  }
}
