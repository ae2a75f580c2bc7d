/**
 * `npm run bench`: the figures the issues set, measured on this machine, printed as
 * a table and written to docs/benchmarks.md with the machine they were taken on.
 *
 * Run as root in a private mount namespace (the bind mounts and loop devices it
 * makes vanish with it):
 *   scripts/in-private-mount-namespace.sh ts-node --transpile-only -P test/tsconfig.json bench/run.ts [section...]
 * With sections named (see SECTIONS), only those run and docs/benchmarks.md is left alone.
 *
 * The agent is the real bin, bundled by esbuild into one file as image/Dockerfile
 * bundles it (the image runs that file), against the test API server over HTTP. Where a figure compares, both sides are
 * measured in this run; absolute times drift between machines and runs.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { V1PersistentVolume } from '@kubernetes/client-node';
import { Chart, Testing } from 'cdk8s';
import { ProvisionerConfigInput, resolveProvisionerConfig, serializeProvisionerConfig } from '../src/config';
import { DEFAULT_IMAGE, LocalVolumeProvisioner } from '../src/constructs';
import { wipeDevice, wipeRanges } from '../src/runtime/cleanup/wipe';
import { directoryPVName, upstreamDevicePVName } from '../src/runtime/pv';
import { startTestApiServer, TestApiServer } from '../test/apiserver';
import { AgentProcess, REPO } from '../test/support/agent-process';
import { cleanupPrivileged, createLoopDevice, makeMountPoint, makeTempDir, mkfsExt4, mount } from '../test/support/privileged';

const NODE = 'bench-node';
const NAMESPACE = 'local-volume-provisioner';
const CLASS = 'local-fs';
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const COMPILED = path.join(REPO, '.cache/bench-lib');
/** USER_HZ: /proc/<pid>/stat counts CPU time in these. */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
/** How long the idle agent's CPU and requests are counted. */
const IDLE_WINDOW_MS = 20_000;

interface Row {
  readonly figure: string;
  readonly value: string;
  readonly goal: string;
  /** yes / no, or '—' for a figure without a goal. */
  readonly met: string;
}

const rows: Row[] = [];

/**
 * The Go static provisioner (v2.7.0, built from its public source), measured beside ours
 * in issue 16 against the same test API server and mounts. No Go toolchain can be had
 * here, so its figures are quoted, not measured in this run.
 */
const GO_PEER = {
  rssMiB100: 37,
  rssMiB1000: 43,
  cpuTo1000PvsS: 2.7,
  idleCpu20sS: 0.10,
  startToFirstPvS: 0.4,
  idleRequestsPerMinute: 0,
  requestsFor1000Pvs: 1005,
} as const;

/** NODE_OPTIONS as the image sets them (image/Dockerfile): the bench runs the agent as the image does, and once without them. */
const IMAGE_NODE_OPTIONS = (() => {
  const dockerfile = fs.readFileSync(path.join(REPO, 'image/Dockerfile'), 'utf8');
  const match = /^ENV .*\bNODE_OPTIONS="([^"]*)"/m.exec(dockerfile);
  if (!match) throw new Error('image/Dockerfile sets no NODE_OPTIONS="..."');
  return match[1];
})();

interface PeerRow {
  readonly figure: string;
  readonly ours: string;
  readonly peer: string;
  /** ours ÷ peer, or '—'. */
  readonly ratio: string;
  readonly goal: string;
  readonly met: string;
}

const peerRows: PeerRow[] = [];

/** A figure beside the Go peer's; `goal` is checked against `ours`. */
function peerRow(figure: string, ours: number, peer: number | undefined, format: (n: number) => string,
  goal?: { readonly text: string; readonly ok: (n: number) => boolean }): void {
  const r = {
    figure,
    ours: format(ours),
    peer: peer === undefined ? '—' : format(peer),
    ratio: peer === undefined || peer === 0 ? '—' : `${(ours / peer).toFixed(2)}×`,
    goal: goal?.text ?? '—',
    met: goal === undefined ? '—' : goal.ok(ours) ? 'yes' : 'NO',
  };
  peerRows.push(r);
  console.log(`  ${r.figure}: ${r.ours} (Go ${r.peer}, ${r.ratio})  [goal: ${r.goal}; met: ${r.met}]`);
}

function row(figure: string, value: string, goal = '—', met?: boolean): void {
  const r = { figure, value, goal, met: met === undefined ? '—' : met ? 'yes' : 'NO' };
  rows.push(r);
  console.log(`  ${r.figure}: ${r.value}  [goal: ${r.goal}; met: ${r.met}]`);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const millis = (ms: number) => `${ms.toFixed(0)} ms`;
const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

async function until(condition: () => boolean, what: string, timeoutMs = 120_000, pollMs = 2): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** A test API server with this node, the namespace and the class's StorageClass. */
async function cluster(tls = false): Promise<TestApiServer> {
  const server = await startTestApiServer({ tls });
  server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } });
  server.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  server.create({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: CLASS },
    provisioner: 'kubernetes.io/no-provisioner',
    volumeBindingMode: 'WaitForFirstConsumer',
  });
  return server;
}

/** The compiled bin's `run` with one Filesystem class over `dir`, with the bin's default flags and `nodeOptions` in NODE_OPTIONS. */
function startAgent(server: TestApiServer, dir: string, extraArgs: string[] = [], nodeOptions = IMAGE_NODE_OPTIONS): AgentProcess {
  const work = makeTempDir('lvp-bench-');
  const configDir = path.join(work, 'config');
  fs.mkdirSync(configDir);
  const config: ProvisionerConfigInput = { storageClassMap: { [CLASS]: { hostDir: dir, mountDir: dir } } };
  const resolved = resolveProvisionerConfig(config);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.errors));
  for (const [key, value] of Object.entries(serializeProvisionerConfig(resolved.config))) fs.writeFileSync(path.join(configDir, key), value);
  const kubeconfig = path.join(work, 'kubeconfig');
  server.writeKubeconfig(kubeconfig);
  return AgentProcess.start(
    ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', ...extraArgs],
    { KUBECONFIG: kubeconfig, MY_NODE_NAME: NODE, MY_NAMESPACE: NAMESPACE, NODE_OPTIONS: nodeOptions },
    { entry: [path.join(COMPILED, 'runtime/cli/main.js')], containerEnv: true },
  );
}

const pvName = (entry: string) => directoryPVName(entry, NODE, CLASS);
const pv = (server: TestApiServer, name: string) => server.get<V1PersistentVolume>('v1', 'PersistentVolume', name);
const available = (server: TestApiServer, name: string, notUid?: string) => {
  const p = pv(server, name);
  return p !== undefined && p.status?.phase === 'Available' && p.metadata!.uid !== notUid;
};

function rssBytes(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

/** The agent's children (findmnt --poll): their memory and CPU are the agent's too. */
function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** User + system CPU seconds of the process and its living children. */
function cpuSeconds(pid: number): number {
  const own = (p: number) => {
    const fields = fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  };
  return [pid, ...childrenOf(pid)].reduce((sum, p) => sum + own(p), 0);
}

/** VmRSS of the process and of its living children. */
function rssWithChildren(pid: number): { agent: number; children: number } {
  return { agent: rssBytes(pid), children: childrenOf(pid).reduce((sum, p) => sum + rssBytes(p), 0) };
}

/** The `--kube-api-qps` and `--kube-api-burst` args the construct gives the agent by default. */
function constructRateLimitArgs(): string[] {
  const chart = new Chart(Testing.app(), 'bench');
  new LocalVolumeProvisioner(chart, 'lvp', { storageClasses: [{ name: CLASS, hostDir: '/mnt/disks' }] });
  const ds = Testing.synth(chart).find((m) => m.kind === 'DaemonSet');
  return (ds!.spec.template.spec.containers[0].args as string[]).filter((a) => /^--kube-api-(qps|burst)=/.test(a));
}

/** `count` bind mounts under one directory, made once per count and shared by the runs. */
const mountDirs = new Map<number, string>();
function mountPoints(count: number): string {
  let dir = mountDirs.get(count);
  if (!dir) {
    dir = makeTempDir(`lvp-bench-${count}-`);
    for (let i = 0; i < count; i++) makeMountPoint(path.join(dir, `vol${i}`));
    mountDirs.set(count, dir);
  }
  return dir;
}

interface FootprintOptions {
  /** Arguments of `run` beyond the bench's. */
  readonly args?: string[];
  /** NODE_OPTIONS. @default IMAGE_NODE_OPTIONS */
  readonly nodeOptions?: string;
  /** The API server over HTTPS, as in a cluster (the Go peer was measured over HTTP). */
  readonly tls?: boolean;
  /** Measure the idle agent after discovery. @default true */
  readonly idle?: boolean;
  /** Then its CPU over a second window, once the passes that confirm the burst are done. @default false */
  readonly settled?: boolean;
}

interface Footprint {
  readonly firstPvMs: number;
  readonly allPvsMs: number;
  /** CPU of the agent and its children from start until every PV exists. */
  readonly cpuToAllS: number;
  /** Requests from start until the agent went quiet (the Events of the burst written), by kind. */
  readonly requests: { readonly total: number; readonly creates: number; readonly events: number };
  readonly idle?: {
    readonly cpuS: number;
    /** CPU over the IDLE_WINDOW_MS that follow (with `settled`): every pass then finds nothing new. */
    readonly settledCpuS?: number;
    readonly requests: number;
    readonly rss: { readonly agent: number; readonly children: number };
    readonly metrics: { readonly bytes: number; readonly ms: number };
  };
}

/**
 * `count` mount points, then the agent started: process start to the first PV and to
 * the last, CPU and API requests until then; then, idle, its CPU and requests over
 * IDLE_WINDOW_MS, its RSS (with findmnt's) and one scrape of /metrics; with `settled`,
 * its CPU over the next IDLE_WINDOW_MS too. The first window holds the first periodic
 * pass after the burst, a full one (the PVs just made are new inputs); the second
 * holds only passes over what that one read.
 */
async function footprint(count: number, options: FootprintOptions = {}): Promise<Footprint> {
  const server = await cluster(options.tls);
  const dir = mountPoints(count);
  const names = Array.from({ length: count }, (_, i) => pvName(`vol${i}`));
  const creates = () => server.counters.get('create', 'persistentvolumes').requests;
  const started = performance.now();
  const agent = startAgent(server, dir, options.args, options.nodeOptions);
  const pid = agent.child.pid!;
  try {
    await until(() => creates() > 0 && server.list('v1', 'PersistentVolume').length > 0, 'the first PV exists', 180_000, 2);
    const firstPvMs = performance.now() - started;
    await until(() => creates() >= count, `${count} PVs were created`, 600_000, 10);
    await until(() => names.every((n) => pv(server, n) !== undefined), `${count} PVs exist`, 60_000, 10);
    const allPvsMs = performance.now() - started;
    const cpuToAllS = cpuSeconds(pid);
    // Quiet: the burst's Events written, nothing sent for 3 s.
    let last = server.counters.total().requests;
    let quietSince = performance.now();
    await until(() => {
      const now = server.counters.total().requests;
      if (now !== last) [last, quietSince] = [now, performance.now()];
      return performance.now() - quietSince > 3000;
    }, 'the agent is quiet', 120_000, 100);
    const requests = {
      total: server.counters.total().requests,
      creates: creates(),
      events: server.counters.total({ resource: 'events' }).requests,
    };
    if (options.idle === false) return { firstPvMs, allPvsMs, cpuToAllS, requests };
    await agent.waitReady();
    const cpu0 = cpuSeconds(pid);
    const requests0 = server.counters.total().requests;
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const idleCpu = cpuSeconds(pid) - cpu0;
    const idleRequests = server.counters.total().requests - requests0;
    const rss = rssWithChildren(pid);
    const t = performance.now();
    const scrape = await agent.get('/metrics');
    const metrics = { bytes: Buffer.byteLength(scrape.body), ms: performance.now() - t };
    let settledCpuS: number | undefined;
    if (options.settled) {
      const cpu1 = cpuSeconds(pid);
      await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
      settledCpuS = cpuSeconds(pid) - cpu1;
    }
    return { firstPvMs, allPvsMs, cpuToAllS, requests, idle: { cpuS: idleCpu, settledCpuS, requests: idleRequests, rss, metrics } };
  } finally {
    await agent.stop();
    await server.stop();
  }
}

/** RSS (and its file-backed part: the node binary's pages) of an idle node process of the same binary running `args`. */
async function nodeRss(args: string[]): Promise<{ rss: number; file: number }> {
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const field = (name: string) => Number(/^\S+:\s+(\d+)/.exec(status.split('\n').find((l) => l.startsWith(`${name}:`))!)![1]) * 1024;
    return { rss: field('VmRSS'), file: field('RssFile') };
  } finally {
    child.kill();
  }
}

/**
 * No agent code, only what any agent of ours needs from node, as the image runs it: the
 * builtin modules the agent loads (HTTPS to the API server, child processes, readline, v8)
 * and a listening HTTP server (which loads `cluster`).
 */
const NODE_WITH_THE_AGENTS_BUILTINS = [
  '--jitless',
  '-e',
  "for (const m of ['https', 'crypto', 'child_process', 'fs/promises', 'timers/promises', 'readline', 'v8']) require(m);" +
    " require('http').createServer().listen(0, '127.0.0.1');",
];

/** The discovery rows of issue 4: start to every PV, and the requests it took. */
function discoveryRows(count: number, f: Footprint, limits: string): void {
  // Issue 4's goal is for 1 000 volumes; 5 000 take at least 50 s at 100 creates per second.
  const limitMs = count === 1000 ? 10_000 : undefined;
  row(`Discovery of ${count} volumes (${limits}): agent start to all PVs created`, seconds(f.allPvsMs),
    limitMs ? `≤ ${seconds(limitMs)} (issue 4)` : '—', limitMs ? f.allPvsMs <= limitMs : undefined);
  row(`Discovery of ${count} volumes (${limits}): API requests until the agent is quiet`,
    `${f.requests.total} (${f.requests.creates} PV creates, ${f.requests.events} Event writes, ${f.requests.total - f.requests.creates - f.requests.events} other)`);
}

const rssOf = (f: Footprint) => f.idle!.rss.agent + f.idle!.rss.children;
const rssCell = (f: Footprint) => `${mib(rssOf(f))} (agent ${mib(f.idle!.rss.agent)}, findmnt ${mib(f.idle!.rss.children)})`;

/**
 * Discovery at 100, 1 000 and 5 000 volumes, and the idle agent after each, beside the
 * Go peer's figures (issue 16), with the image's NODE_OPTIONS; then the same with node's
 * defaults, and over HTTPS as in a cluster.
 */
async function discoveryAndFootprint(): Promise<void> {
  // Each size on its own mount points, removed before the next size: the mount table holds only them.
  const removeMounts = () => {
    cleanupPrivileged();
    mountDirs.clear();
  };
  const f100 = await footprint(100, { settled: true });
  discoveryRows(100, f100, 'the bin\'s default client rate limit');
  removeMounts();
  const f1000 = await footprint(1000, { settled: true });
  discoveryRows(1000, f1000, 'the bin\'s default client rate limit');
  const args = constructRateLimitArgs();
  discoveryRows(1000, await footprint(1000, { args, idle: false }), `${args.join(' ')}, as the construct deploys it`);
  const nodeDefaults1000 = await footprint(1000, { nodeOptions: '', settled: true });
  const tls1000 = await footprint(1000, { tls: true });
  const tlsNodeDefaults1000 = await footprint(1000, { tls: true, nodeOptions: '' });
  removeMounts();
  const f5000 = await footprint(5000, { settled: true });
  discoveryRows(5000, f5000, 'the bin\'s default client rate limit');
  const nodeDefaults5000 = await footprint(5000, { nodeOptions: '' });
  removeMounts();

  const bytes = (n: number) => mib(n * MiB);
  peerRow('RSS idle with 100 PVs (agent and findmnt), MiB', rssOf(f100) / MiB, GO_PEER.rssMiB100, (n) => bytes(n));
  peerRow('RSS idle with 1 000 PVs, MiB', rssOf(f1000) / MiB, GO_PEER.rssMiB1000, (n) => bytes(n), { text: '≤ 50 MiB (issue 16)', ok: (n) => n <= 50 });
  peerRow('RSS idle with 5 000 PVs, MiB', rssOf(f5000) / MiB, undefined, (n) => bytes(n), { text: '≤ 60 MiB (issue 16)', ok: (n) => n <= 60 });
  const cpuTime = (s: number) => `${s.toFixed(2)} s`;
  const idleCpuGoal = { text: `≤ ${GO_PEER.idleCpu20sS.toFixed(2)} s (the peer's)`, ok: (n: number) => n <= GO_PEER.idleCpu20sS };
  peerRow(`Idle CPU over ${IDLE_WINDOW_MS / 1000} s, 1 000 PVs, right after discovery (holds the full pass that first sees the new PVs)`,
    f1000.idle!.cpuS, GO_PEER.idleCpu20sS, cpuTime, idleCpuGoal);
  peerRow(`Idle CPU over the ${IDLE_WINDOW_MS / 1000} s after that, 1 000 PVs (passes over unchanged inputs skipped)`,
    f1000.idle!.settledCpuS!, GO_PEER.idleCpu20sS, cpuTime, idleCpuGoal);
  peerRow('Process start to the first PV, 1 000 mount points', f1000.firstPvMs / 1000, GO_PEER.startToFirstPvS, (n) => `${n.toFixed(2)} s`,
    { text: '≤ 0.50 s (issue 16)', ok: (n) => n <= 0.5 });
  peerRow('CPU from process start until 1 000 PVs exist', f1000.cpuToAllS, GO_PEER.cpuTo1000PvsS, (n) => `${n.toFixed(2)} s`,
    { text: `≤ ${GO_PEER.cpuTo1000PvsS.toFixed(2)} s (the peer's)`, ok: (n) => n <= GO_PEER.cpuTo1000PvsS });
  peerRow('API requests to create 1 000 PVs (until quiet), per PV', f1000.requests.total / 1000, GO_PEER.requestsFor1000Pvs / 1000,
    (n) => n.toFixed(3), { text: '≤ 1.1 (issue 16)', ok: (n) => n <= 1.1 });
  peerRow('Idle API requests per minute, 1 000 PVs', f1000.idle!.requests * 60_000 / IDLE_WINDOW_MS, GO_PEER.idleRequestsPerMinute,
    (n) => n.toFixed(1), { text: '0 (issue 16)', ok: (n) => n === 0 });
  peerRow('/metrics with 5 000 volumes, KiB', f5000.idle!.metrics.bytes / 1024, undefined, (n) => `${n.toFixed(1)} KiB`,
    { text: 'no larger than with 100 (+1 KiB)', ok: (n) => n <= f100.idle!.metrics.bytes / 1024 + 1 });
  peerRow('/metrics with 5 000 volumes, one scrape', f5000.idle!.metrics.ms, undefined, millis);
  const flags = 'with node\'s defaults (no NODE_OPTIONS)';
  peerRow(`RSS idle with 1 000 PVs, ${flags}, MiB`, rssOf(nodeDefaults1000) / MiB, GO_PEER.rssMiB1000, (n) => bytes(n),
    { text: '≤ 50 MiB (issue 16)', ok: (n) => n <= 50 });
  peerRow(`RSS idle with 5 000 PVs, ${flags}, MiB`, rssOf(nodeDefaults5000) / MiB, undefined, (n) => bytes(n), { text: '≤ 60 MiB (issue 16)', ok: (n) => n <= 60 });
  peerRow(`Idle CPU over ${IDLE_WINDOW_MS / 1000} s, 1 000 PVs, right after discovery, ${flags}`, nodeDefaults1000.idle!.cpuS, GO_PEER.idleCpu20sS, cpuTime, idleCpuGoal);
  peerRow(`Idle CPU over the ${IDLE_WINDOW_MS / 1000} s after that, 1 000 PVs, ${flags}`, nodeDefaults1000.idle!.settledCpuS!, GO_PEER.idleCpu20sS, cpuTime, idleCpuGoal);
  peerRow(`Process start to the first PV, 1 000 mount points, ${flags}`, nodeDefaults1000.firstPvMs / 1000, GO_PEER.startToFirstPvS,
    (n) => `${n.toFixed(2)} s`, { text: '≤ 0.50 s (issue 16)', ok: (n) => n <= 0.5 });
  peerRow(`CPU from process start until 1 000 PVs exist, ${flags}`, nodeDefaults1000.cpuToAllS, GO_PEER.cpuTo1000PvsS, (n) => `${n.toFixed(2)} s`,
    { text: `≤ ${GO_PEER.cpuTo1000PvsS.toFixed(2)} s (the peer's)`, ok: (n) => n <= GO_PEER.cpuTo1000PvsS });
  const bare = await nodeRss(['-e', 'setInterval(() => {}, 1000)']);
  row('RSS of a bare node process (`node -e`, the same binary), idle: the floor under the rows above',
    `${mib(bare.rss)} (${mib(bare.file)} of it the node binary's pages)`);
  const builtins = await nodeRss(NODE_WITH_THE_AGENTS_BUILTINS);
  row('RSS of node `--jitless` with only the builtin modules the agent loads (https, crypto, child_process, readline, v8) and a listening HTTP server, no agent code, idle',
    `${mib(builtins.rss)} (${mib(builtins.file)} of it the node binary's pages)`);
  row('RSS idle with 100 / 1 000 / 5 000 PVs', [f100, f1000, f5000].map(rssCell).join('; '));
  row(`RSS idle with 1 000 / 5 000 PVs, ${flags}`, [nodeDefaults1000, nodeDefaults5000].map(rssCell).join('; '));
  row('RSS idle with 1 000 PVs over HTTPS, as in a cluster (the peer was measured over HTTP); the image\'s NODE_OPTIONS / node\'s defaults',
    [tls1000, tlsNodeDefaults1000].map(rssCell).join('; '));
  row('CPU from start until all PVs exist, 100 / 1 000 / 5 000 PVs', [f100, f1000, f5000].map((f) => `${f.cpuToAllS.toFixed(2)} s`).join('; '));
  row(`Idle CPU over ${IDLE_WINDOW_MS / 1000} s right after discovery, then over the ${IDLE_WINDOW_MS / 1000} s after that, 100 / 1 000 / 5 000 PVs`,
    [f100, f1000, f5000].map((f) => `${f.idle!.cpuS.toFixed(2)} s, then ${f.idle!.settledCpuS!.toFixed(2)} s`).join('; '));
}
/** With the agent running and ready: a new mount point to its PV Available, over `trials`. */
async function newVolumeToAvailable(trials: number): Promise<void> {
  const server = await cluster();
  const dir = makeTempDir('lvp-bench-new-');
  const agent = startAgent(server, dir);
  try {
    await agent.waitReady();
    const times: number[] = [];
    for (let i = 0; i < trials; i++) {
      const entry = `new${i}`;
      fs.mkdirSync(path.join(dir, entry));
      const t0 = performance.now();
      makeMountPoint(path.join(dir, entry));
      await until(() => available(server, pvName(entry)), `PV of ${entry} is Available`, 30_000);
      times.push(performance.now() - t0);
    }
    const median = percentile(times, 50);
    row(`New mount point to PV Available, median of ${trials}`, millis(median), '≤ 1 s (issue 4; upstream polls every 10 s)', median <= 1000);
    row(`New mount point to PV Available, p99 of ${trials}`, millis(percentile(times, 99)));
  } finally {
    await agent.stop();
    await server.stop();
  }
}

/** The device dialect's agent running and ready: a new blank device linked into its directory to its PV Available. */
async function newDeviceToAvailable(trials: number): Promise<void> {
  const server = await cluster();
  const deviceDir = makeTempDir('lvp-bench-devices-');
  server.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'bench-spec', namespace: NAMESPACE },
    data: { storageClassName: CLASS, volumeMode: 'Block', deviceDir, deviceNameFilter: '^disk-' },
  });
  const kubeconfig = path.join(makeTempDir('lvp-bench-'), 'kubeconfig');
  server.writeKubeconfig(kubeconfig);
  const agent = AgentProcess.start(
    ['devices', '--node-name', NODE, '--namespace-name', NAMESPACE, '--default-pv-spec-configmap', 'bench-spec', '--metrics-addr', '127.0.0.1:0'],
    { KUBECONFIG: kubeconfig, NODE_OPTIONS: IMAGE_NODE_OPTIONS },
    { entry: [path.join(COMPILED, 'runtime/cli/main.js')], containerEnv: true },
  );
  try {
    await agent.waitReady();
    const times: number[] = [];
    for (let i = 0; i < trials; i++) {
      const loop = createLoopDevice(16 * MiB);
      const name = upstreamDevicePVName(NODE, `disk-${i}`);
      const t0 = performance.now();
      fs.symlinkSync(loop.device, path.join(deviceDir, `disk-${i}`));
      await until(() => available(server, name), `PV of disk-${i} is Available`, 30_000);
      times.push(performance.now() - t0);
    }
    const median = percentile(times, 50);
    row(`New blank device to PV Available (device dialect), median of ${trials}`, millis(median), '≤ 1 s (issue 6; upstream polls every 5 min)', median <= 1000);
    row(`New blank device to PV Available (device dialect), p99 of ${trials}`, millis(percentile(times, 99)));
  } finally {
    await agent.stop();
    await server.stop();
  }
}

/** A Filesystem volume holding 10 000 small files: claim deleted to new PV Available. */
async function releasedToAvailable(trials: number): Promise<void> {
  const server = await cluster();
  const dir = makeTempDir('lvp-bench-rel-');
  const loop = createLoopDevice(512 * MiB);
  mkfsExt4(loop.device);
  mount(loop.device, path.join(dir, 'vol'));
  const name = pvName('vol');
  const agent = startAgent(server, dir);
  try {
    await agent.waitReady();
    const times: number[] = [];
    for (let t = 0; t < trials; t++) {
      await until(() => available(server, name), 'the PV is Available');
      const uid = pv(server, name)!.metadata!.uid!;
      const claim = `claim-${t}`;
      server.create({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: claim, namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } }, storageClassName: CLASS },
      });
      server.bindClaim(name, { namespace: 'default', name: claim });
      for (let d = 0; d < 100; d++) {
        const sub = path.join(dir, 'vol', `d${d}`);
        fs.mkdirSync(sub);
        for (let f = 0; f < 100; f++) fs.writeFileSync(path.join(sub, `f${f}`), 'small file\n');
      }
      execFileSync('sync');
      const t0 = performance.now();
      server.delete('v1', 'PersistentVolumeClaim', claim, 'default');
      await until(() => available(server, name, uid), 'the PV is offered again', 60_000);
      times.push(performance.now() - t0);
      if (fs.readdirSync(path.join(dir, 'vol')).length !== 0) throw new Error('the volume was not emptied');
    }
    const median = percentile(times, 50);
    row(`Released to new PV Available, Filesystem volume with 10 000 files (ext4), median of ${trials}`, millis(median), '≤ 2 s (issue 5)', median <= 2000);
  } finally {
    await agent.stop();
    await server.stop();
  }
}

/**
 * The default whole-device wipe per GiB against dd over the whole of the same direct-I/O
 * loop device: BLKZEROOUT, and the O_DIRECT write fallback (BLKZEROOUT made to fail).
 */
async function wholeWipeVersusDd(rounds: number): Promise<void> {
  const sizeBytes = 4 * GiB;
  const loop = createLoopDevice(sizeBytes);
  execFileSync('losetup', ['--direct-io=on', loop.device]);
  const dd = () => {
    const t0 = performance.now();
    execFileSync('dd', ['if=/dev/zero', `of=${loop.device}`, 'bs=1M', 'oflag=direct', 'status=none', `count=${sizeBytes / MiB}`]);
    execFileSync('sync', [loop.device]);
    return performance.now() - t0;
  };
  const noZeroOut = ['bash', '-c', 'echo "blkdiscard: BLKZEROOUT ioctl failed: Operation not supported" >&2; exit 1', 'blkdiscard'];
  const wipe = async (zeroOutCommand?: string[]) => {
    const w = await wipeDevice(loop.device, { zeroOutCommand });
    if (!w.ok) throw new Error(w.reason);
    return w.writeMs + w.verifyMs;
  };
  dd();
  const times: Record<'dd' | 'zeroout' | 'writes', number[]> = { dd: [], zeroout: [], writes: [] };
  for (let i = 0; i < rounds; i++) {
    times.dd.push(dd());
    times.zeroout.push(await wipe());
    times.writes.push(await wipe(noZeroOut));
  }
  const perGiB = (xs: number[]) => `${(percentile(xs, 50) / (sizeBytes / GiB)).toFixed(1)} ms/GiB`;
  row(`Whole-device wipe (the default), 4 GiB loop device with --direct-io=on, per GiB with its fsync and sample read-back, median of ${rounds}: BLKZEROOUT; O_DIRECT write fallback; dd oflag=direct then sync`,
    `${perGiB(times.zeroout)}; ${perGiB(times.writes)}; ${perGiB(times.dd)}`);
}

/** The device dialect's upstream-ranges wipe against dd over the same ranges of the same direct-I/O loop device. */
async function wipeVersusDd(rounds: number): Promise<void> {
  const sizeBytes = 1100 * GiB;
  const loop = createLoopDevice(sizeBytes);
  execFileSync('losetup', ['--direct-io=on', loop.device]);
  const ranges = wipeRanges(sizeBytes);
  const total = ranges.reduce((n, r) => n + r.length, 0);
  const dd = () => {
    const t0 = performance.now();
    for (const r of ranges) {
      execFileSync('dd', ['if=/dev/zero', `of=${loop.device}`, 'bs=1M', 'oflag=direct', 'status=none', `seek=${r.offset / MiB}`, `count=${r.length / MiB}`]);
    }
    // The wipe's time includes its fsync (the disk's own write cache flushed, so the zeros last): dd's flush too.
    execFileSync('sync', [loop.device]);
    return performance.now() - t0;
  };
  const wipe = async () => {
    const w = await wipeDevice(loop.device, { verify: false, extent: 'upstream-ranges' });
    if (!w.ok) throw new Error(w.reason);
    return w.writeMs;
  };
  // The first writes allocate the sparse backing file's blocks; not measured.
  dd();
  await wipe();
  const ddTimes: number[] = [];
  const wipeTimes: number[] = [];
  for (let i = 0; i < rounds; i++) {
    ddTimes.push(dd());
    wipeTimes.push(await wipe());
  }
  const ratio = percentile(ddTimes, 50) / percentile(wipeTimes, 50);
  const speed = (ms: number) => `${(total / MiB / (ms / 1000)).toFixed(0)} MiB/s`;
  row(`upstream-ranges wipe speed ÷ dd oflag=direct speed (then sync), ${total / MiB} MiB in ${ranges.length} ranges, loop device with --direct-io=on, median of ${rounds}`,
    `${ratio.toFixed(2)} (wipe ${speed(percentile(wipeTimes, 50))}, dd ${speed(percentile(ddTimes, 50))})`, '≥ 0.9 (issue 6)', ratio >= 0.9);
}

/** PV number `i` of one of 500 other nodes, labelled as their agents label theirs. */
function otherNodePv(i: number): V1PersistentVolume {
  const node = `other-${i % 500}`;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `other-pv-${i}`, labels: { 'local.storage.k8s.io/node': node } },
    spec: {
      capacity: { storage: '100Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: CLASS,
      local: { path: `/mnt/disks/vol${i}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } },
    },
  };
}

/** The idle agent with 10 volumes, with no other PVs or with `others` PVs of other nodes in the cluster. */
async function idle(others: number): Promise<{ rss: number; bytes: number; requests: number }> {
  const server = await cluster();
  for (let i = 0; i < others; i++) server.create(otherNodePv(i));
  const dir = makeTempDir('lvp-bench-idle-');
  for (let i = 0; i < 10; i++) makeMountPoint(path.join(dir, `vol${i}`));
  const before = server.counters.total();
  const agent = startAgent(server, dir);
  try {
    await agent.waitReady();
    await until(() => Array.from({ length: 10 }, (_, i) => pvName(`vol${i}`)).every((n) => available(server, n)), 'the 10 PVs are Available');
    // Idle: past start-up, a few discovery periods (10 s each by default would be too long; 5 s shows the steady state).
    await new Promise((r) => setTimeout(r, 5000));
    const after = server.counters.total();
    return { rss: rssBytes(agent.child.pid!), bytes: after.bytes - before.bytes, requests: after.requests - before.requests };
  } finally {
    await agent.stop();
    await server.stop();
  }
}

async function memoryWithOtherNodes(): Promise<void> {
  const none = await idle(0);
  const many = await idle(50_000);
  row('Idle agent RSS, 10 volumes, no other PVs', mib(none.rss));
  row('Idle agent RSS, 10 volumes, 50 000 PVs of other nodes', `${mib(many.rss)} (${(many.rss / none.rss).toFixed(2)}× none)`,
    'no more than with none (issue 4; within 10 % for allocator noise)', many.rss <= none.rss * 1.1);
  row('Bytes received from the API, start to 5 s idle, no other PVs', `${(none.bytes / 1024).toFixed(1)} KiB in ${none.requests} requests`);
  row('Bytes received from the API, start to 5 s idle, 50 000 PVs of other nodes', `${(many.bytes / 1024).toFixed(1)} KiB in ${many.requests} requests (${(many.bytes / none.bytes).toFixed(2)}× none)`,
    'no more than with none (issue 4; within 10 %)', many.bytes <= none.bytes * 1.1);
}

async function testApiServer(): Promise<void> {
  const t0 = performance.now();
  const server = await startTestApiServer();
  const start = performance.now() - t0;
  for (let i = 0; i < 10_000; i++) server.create(otherNodePv(i));
  const token = server.tokenFor('admin');
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    const res = await fetch(`${server.url}/api/v1/persistentvolumes`, { headers: { Authorization: `Bearer ${token}` } });
    const list = await res.json() as { items: unknown[] };
    if (list.items.length !== 10_000) throw new Error(`listed ${list.items.length} PVs`);
    times.push(performance.now() - t);
  }
  await server.stop();
  row('Test API server: start (module loaded) to listening', millis(start));
  row('Test API server: list 10 000 PVs over HTTP (JSON, parsed), median of 3', millis(percentile(times, 50)));
}

/** `--help`: process start to exit, against a bare `node -e ''` (issue 16: 5–11× it, everything loaded first). */
function helpStartup(): void {
  const median = (args: string[]) => percentile(Array.from({ length: 5 }, () => {
    const t = performance.now();
    spawnSync(process.execPath, args, { stdio: 'ignore' });
    return performance.now() - t;
  }), 50);
  const bare = median(['-e', '']);
  const help = median([path.join(COMPILED, 'runtime/cli/main.js'), '--help']);
  row('`--help`, process start to exit, median of 5', `${millis(help)} (${(help / bare).toFixed(1)}× a bare \`node -e ''\`, ${millis(bare)})`);
}

/** The construct's default image, built (or found up to date) by scripts/image.sh: its size as podman stores it. */
function imageSize(): void {
  execFileSync(path.join(REPO, 'scripts/image.sh'), { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'] });
  const bytes = Number(execFileSync(path.join(REPO, 'scripts/podman.sh'), ['image', 'inspect', '--format={{.Size}}', DEFAULT_IMAGE], { encoding: 'utf8' }));
  const limit = 410e6 / 2;
  row('Container image (image/Dockerfile), uncompressed', `${(bytes / 1e6).toFixed(0)} MB`,
    `≤ ${(limit / 1e6).toFixed(0)} MB (issue 15: half of the first image's 410 MB)`, bytes <= limit);
}

function synthesis(): void {
  const synth = () => {
    const chart = new Chart(Testing.app(), 'bench');
    new LocalVolumeProvisioner(chart, 'lvp', {
      storageClasses: Array.from({ length: 20 }, (_, i) => ({ name: `class-${i}`, hostDir: `/mnt/class-${i}`, volumeMode: i % 2 ? 'Block' as const : 'Filesystem' as const })),
    });
    return Testing.synth(chart).length;
  };
  const t0 = performance.now();
  synth();
  const cold = performance.now() - t0;
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    synth();
    times.push(performance.now() - t);
  }
  row('Synthesis of a 20-class stack (cdk8s, in process, modules loaded), first', millis(cold));
  row('Synthesis of a 20-class stack (cdk8s, in process, modules loaded), median of the next 5', millis(percentile(times, 50)));
}

function machine(): string[] {
  const cpus = os.cpus();
  return [
    `- CPU: ${cpus[0]?.model ?? 'unknown'}, ${cpus.length} cores`,
    `- Memory: ${(os.totalmem() / GiB).toFixed(1)} GiB`,
    `- Kernel: ${os.release()}`,
    `- Node.js: ${process.version}`,
    `- Date: ${new Date().toISOString()}`,
  ];
}

function markdown(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  return [
    '# Benchmarks',
    '',
    'Written by `npm run bench` (bench/run.ts); do not edit by hand. The agent is the',
    'real bin, bundled into one file by esbuild as the image runs it, against the test API',
    'server over plain HTTP, on bind mounts and loop devices in a private mount namespace.',
    'Where a row compares, both sides were measured in the same run; absolute times vary',
    'between machines and runs.',
    '',
    '## Machine',
    '',
    ...machine(),
    '',
    '## Beside the Go static provisioner (issue 16)',
    '',
    '| Figure | Ours | Go peer | Ours ÷ Go | Goal | Met |',
    '| --- | --- | --- | --- | --- | --- |',
    ...peerRows.map((r) => `| ${cell(r.figure)} | ${cell(r.ours)} | ${cell(r.peer)} | ${r.ratio} | ${cell(r.goal)} | ${r.met} |`),
    '',
    '## Figures',
    '',
    '| Figure | Value | Goal | Met |',
    '| --- | --- | --- | --- |',
    ...rows.map((r) => `| ${cell(r.figure)} | ${cell(r.value)} | ${cell(r.goal)} | ${r.met} |`),
    '',
    '## Notes',
    '',
    '- Go peer: the Go static provisioner v2.7.0 built from its public source, measured beside',
    '  ours in issue 16 against the same test API server and mounts. No Go toolchain can be had',
    '  here, so its figures are quoted from the issue (its "MB" read as MiB), not measured in this run.',
    '- Discovery and footprint: the mount points exist before the agent starts. "Process start',
    '  to the first PV" and "to all PVs" run from the spawn of the process to the PV existing on',
    '  the server; CPU is user + system time of the agent and its child (`findmnt --poll`, which',
    '  tells it of mount changes) until every PV exists. Requests count every API request the',
    '  agent made from its start until it was quiet for 3 s (the Events of the burst written).',
    '  Measured at the bin\'s default client rate limit, and with the rate limit flags the',
    '  construct\'s DaemonSet passes.',
    '- The machine is a shared 2-core one, other work may run beside the bench: absolute times',
    '  and CPU seconds vary between rows and runs; compare rows of one run as ratios.',
    '- RSS: a bare node process of the same binary is the floor (row above). Node with only the',
    '  builtin modules the agent cannot do without (HTTPS, a server, child processes) is already',
    '  above 50 MiB (row above) before any code of ours or any PV: the 50 MiB goal is below',
    '  what a Node.js agent can reach, and the findmnt child adds ~3 MiB. Profiled idle at 1 000 PVs',
    '  (/proc/PID/smaps, heap and allocation profiles): the node binary\'s file pages (~41 MiB',
    '  `--jitless`, ~49 MiB with V8\'s optimizing compilers, against the bare process\'s ~34),',
    '  V8\'s heap (~14 MiB live: ~1.6 KiB per cached PV, and code and module sources), malloc',
    '  (V8\'s compiler and GC threads; about 10 MiB less `--jitless`), and the `findmnt` child',
    '  (~3 MiB). The image runs node `--jitless` (its NODE_OPTIONS), and the agent turns on',
    '  V8\'s `--optimize-for-size` itself once its first pass is done (NODE_OPTIONS rejects the',
    '  flag; set at start, it slowed that first pass): without it the heap grows to ~190 MiB',
    '  after the first discovery of 5 000 volumes (57 MiB live) and stays resident.',
    '- Idle CPU: a pass every 10 s (upstream\'s period). The first after discovery is a full one',
    '  (the new PVs are new inputs): it reads the mount table and looks at every entry (one that',
    '  is still the same mount and has its PV is taken from the pass before: no lstat, no',
    '  statfs) and checks every PV. A pass over exactly what the last full pass read, when that',
    '  one left nothing to do, is skipped: a read of the mount table and a stat of each discovery',
    '  directory (controller/quiet-passes.ts).',
    '- Idle: once ready and quiet, CPU and API requests over 20 s (this window holds that first',
    '  full pass), then RSS (VmRSS of the agent plus its `findmnt` child) and one scrape of',
    '  `/metrics`; for some rows, CPU over the next 20 s too. The agent runs with the image\'s',
    '  NODE_OPTIONS unless a row says otherwise.',
    '- New mount point: a bind mount made while the agent runs; the agent hears of it from the',
    '  mount table, not from its 10 s discovery period. New device: a symlink to a blank loop',
    '  device made in the device directory while the device agent runs (its polling interval',
    '  is 5 min); the time includes probing the device for signatures.',
    '- Released to Available: the claim is deleted; the time runs until the PV is Available',
    '  again under a new UID, the 10 000 files removed in-process.',
    '- Whole-device wipe: the default. On a loop device BLKZEROOUT becomes a fallocate of the',
    '  backing file (metadata only), so its figure is the floor of the path, not a disk\'s speed:',
    '  on a disk it runs at the disk\'s WRITE ZEROES offload, or at its write speed where the',
    '  kernel writes zero pages itself. The write fallback is what a disk\'s write speed gives.',
    '- Wipe: the device dialect\'s `wipe: upstream-ranges` (O_DIRECT writes, then fsync) against',
    '  `dd if=/dev/zero oflag=direct bs=1M`, then `sync` of the device (the flush of the disk\'s',
    '  write cache the wipe\'s time includes), over the same five ranges of the same sparse',
    '  1100 GiB loop device, attached with `losetup --direct-io=on` so that writes complete',
    '  when they reach the backing disk, as on a real disk.',
    '- Idle: RSS of the agent process (VmRSS) 5 s after its 10 PVs are Available, and bytes the',
    '  test API server sent it since it started (lists, watch streams, responses).',
    '- Container image: the size `podman images` shows (10^6 bytes), built by `npx projen image`',
    '  on locally made base images (scripts/image-base.sh) standing in for node:24-bookworm-slim',
    '  and debian:bookworm-slim. The first image (the whole Node base with npm and yarn,',
    '  xfsprogs and btrfs-progs, all of node_modules) was 410 MB (413 MB on these base images).',
    '',
  ].join('\n');
}

/** The bench's parts, in the order they run; `bench/run.ts <name>...` runs only those named. */
const SECTIONS: ReadonlyArray<readonly [string, () => Promise<void> | void]> = [
  ['footprint', async () => discoveryAndFootprint()],
  ['new-volume', async () => {
    await newVolumeToAvailable(20);
    cleanupPrivileged();
    await newDeviceToAvailable(20);
  }],
  ['released', async () => releasedToAvailable(3)],
  ['wipe', async () => {
    await wipeVersusDd(3);
    cleanupPrivileged();
    await wholeWipeVersusDd(3);
  }],
  ['memory', async () => memoryWithOtherNodes()],
  ['help', helpStartup],
  ['apiserver', async () => testApiServer()],
  ['synthesis', synthesis],
  ['image', imageSize],
];

/** The bin as the image runs it: src/runtime/cli/main.ts and exactly the modules it reaches, in one file (image/Dockerfile's esbuild command). */
function bundleBin(): void {
  fs.rmSync(COMPILED, { recursive: true, force: true });
  execFileSync(process.execPath, [require.resolve('esbuild/bin/esbuild'), path.join(REPO, 'src/runtime/cli/main.ts'), '--bundle', '--platform=node',
    '--target=node24', '--format=cjs', '--keep-names', '--log-level=warning', `--outfile=${path.join(COMPILED, 'runtime/cli/main.js')}`], { stdio: 'inherit' });
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((w) => !SECTIONS.some(([name]) => name === w));
  if (unknown.length > 0) throw new Error(`unknown section(s) ${unknown.join(', ')}; the sections are ${SECTIONS.map(([name]) => name).join(', ')}`);
  console.log('bundling the bin (esbuild)...');
  bundleBin();
  try {
    for (const [name, run] of SECTIONS) {
      if (wanted.length > 0 && !wanted.includes(name)) continue;
      console.log(name);
      await run();
      cleanupPrivileged();
    }
  } finally {
    cleanupPrivileged();
  }
  const md = markdown();
  if (wanted.length === 0) fs.writeFileSync(path.join(REPO, 'docs/benchmarks.md'), md);
  console.log(`\n${md}`);
}

// Interrupted, it still detaches its loop devices (they outlive the mount namespace).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    cleanupPrivileged();
    process.exit(130);
  });
}

main().catch((e) => {
  cleanupPrivileged();
  console.error(e);
  process.exit(1);
});
