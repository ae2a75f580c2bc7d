/**
 * Snapshots, restores and clones of a btrfs pool class, end to end: the real bin as the
 * node agent, the real control plane (the PV controller binds), and the upstream snapshot
 * controller (external-snapshotter v8.7.0, from the Go module proxy) turning each
 * VolumeSnapshot into a VolumeSnapshotContent that the agent, its driver's snapshotter,
 * takes. Tenants' bytes are written and compared in the pool directly.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CoreV1Event, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../../src/config';
import type { VolumeSnapshot, VolumeSnapshotContent } from '../../../src/runtime/kube/snapshot-objects';
import { POOL_VOLUME_ANNOTATION } from '../../../src/runtime/well-known';
import { AgentProcess } from '../../support/agent-process';
import { writeConfigDir } from '../../support/class-config';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';
import { installSnapshotCrds, startSnapshotController } from '../../support/snapshot-controller';
import { eventually } from '../kube/fixtures';

const MiB = 1024 * 1024;
const NODE = 'snap-node';
const OTHER_NODE = 'other-node';
const NAMESPACE = 'lvp';
const APP = 'app';
const CLASS = 'snap-pool';
const SNAPSHOT_CLASS = 'snap-pool-snapshots';
const SNAPSHOT_API = 'snapshot.storage.k8s.io/v1';

describePrivileged('snapshots, restores and clones of a btrfs pool class, with the upstream snapshot controller', () => {
  let k: Kubernetes;
  let agent: AgentProcess;
  let controller: ReturnType<typeof startSnapshotController>;
  let poolDir: string;
  let work: string;
  let kubeconfig: string;

  /** An agent of `node` with a btrfs pool class of its own (a pool and a record are one node's). */
  function startAgent(node: string, pool: string): AgentProcess {
    const dir = path.join(work, node);
    const configDir = writeConfigDir(path.join(dir, 'config'), { storageClassMap: { [CLASS]: { hostDir: pool, mountDir: pool, pool: 'btrfs' } } });
    fs.mkdirSync(path.join(dir, 'state'), { recursive: true });
    return AgentProcess.start(
      ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--state-dir', path.join(dir, 'state'), '--kubelet-dir', path.join(dir, 'kubelet')],
      { KUBECONFIG: kubeconfig, MY_NODE_NAME: node, MY_NAMESPACE: NAMESPACE });
  }

  /** A btrfs filesystem of its own, mounted at `<work>/<name>`. */
  function btrfsPool(name: string, size: number): string {
    const loop = createLoopDevice(size);
    mkfsBtrfs(loop.device);
    const dir = path.join(work, name);
    fs.mkdirSync(dir);
    mount(loop.device, dir, { type: 'btrfs' });
    return dir;
  }

  beforeAll(async () => {
    k = await Kubernetes.forSuite({ controllers: true });
    await k.reset();
    await installSnapshotCrds(k);
    for (const ns of [NAMESPACE, APP]) await k.ensure({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await k.ensure({
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: CLASS }, provisioner: POOL_PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer',
    } as never);
    await k.ensure({ apiVersion: SNAPSHOT_API, kind: 'VolumeSnapshotClass', metadata: { name: SNAPSHOT_CLASS }, driver: POOL_PROVISIONER, deletionPolicy: 'Delete' } as never);
    for (const node of [NODE, OTHER_NODE]) {
      await k.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { 'kubernetes.io/hostname': node } } });
    }
    work = makeTempDir('lvp-snapshots-');
    poolDir = btrfsPool('pool', 2048 * MiB);
    kubeconfig = path.join(work, 'kubeconfig');
    await k.writeKubeconfig(kubeconfig);
    controller = startSnapshotController(kubeconfig);
    agent = startAgent(NODE, poolDir);
    await agent.waitReady();
  });

  afterAll(async () => {
    await agent?.stop();
    await controller?.stop();
    for (const kind of ['VolumeSnapshot', 'VolumeSnapshotContent']) {
      for (const o of await k.list(SNAPSHOT_API, kind, kind === 'VolumeSnapshot' ? APP : undefined).catch(() => [])) {
        await k.patch(SNAPSHOT_API, kind, o.metadata.name, { metadata: { finalizers: null } }, o.metadata.namespace).catch(() => undefined);
        await k.delete(SNAPSHOT_API, kind, o.metadata.name, o.metadata.namespace).catch(() => undefined);
      }
    }
    await k?.reset();
    cleanupPrivileged();
  });

  const logs = () => `agent:\n${agent.log()}\nsnapshot controller:\n${controller.log().split('\n').slice(-40).join('\n')}`;

  /** A claim the scheduler put on `node`, filled from `dataSource` if given. */
  async function claim(name: string, size: string, dataSource?: { kind: string; name: string; apiGroup?: string }, node = NODE): Promise<void> {
    await k.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: APP, annotations: { 'volume.kubernetes.io/selected-node': node } },
      spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, ...dataSource ? { dataSource } : {} },
    });
  }

  /** The claim's PV, once the agent made its volume and the PV controller bound them. */
  async function boundPv(name: string): Promise<V1PersistentVolume> {
    let pv: V1PersistentVolume | undefined;
    await eventually(async () => {
      const c = await k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP);
      pv = c?.status?.phase === 'Bound' ? await k.get<V1PersistentVolume>('v1', 'PersistentVolume', c.spec!.volumeName!) : undefined;
      return pv !== undefined;
    }, `claim ${name} is bound (${logs()})`);
    return pv!;
  }

  async function provisioned(name: string, size = '64Mi'): Promise<{ pv: V1PersistentVolume; dir: string }> {
    await claim(name, size);
    const pv = await boundPv(name);
    return { pv, dir: path.join(poolDir, pv.metadata!.name!) };
  }

  /** A VolumeSnapshot of the claim, once ready to use; with its content. */
  async function snapshotOf(claimName: string, name: string): Promise<{ snapshot: VolumeSnapshot; content: VolumeSnapshotContent }> {
    await k.create({
      apiVersion: SNAPSHOT_API,
      kind: 'VolumeSnapshot',
      metadata: { name, namespace: APP },
      spec: { volumeSnapshotClassName: SNAPSHOT_CLASS, source: { persistentVolumeClaimName: claimName } },
    });
    let snapshot: VolumeSnapshot | undefined;
    await eventually(async () => {
      snapshot = await k.get<VolumeSnapshot>(SNAPSHOT_API, 'VolumeSnapshot', name, APP);
      return snapshot?.status?.readyToUse === true;
    }, `VolumeSnapshot ${name} is ready to use (${logs()})`);
    const content = (await k.get<VolumeSnapshotContent>(SNAPSHOT_API, 'VolumeSnapshotContent', snapshot!.status!.boundVolumeSnapshotContentName!))!;
    return { snapshot: snapshot!, content };
  }

  function write(dir: string, file: string, bytes: number): string {
    fs.writeFileSync(path.join(dir, file), randomBytes(bytes));
    return digest(path.join(dir, file));
  }

  const digest = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

  /** The subvolume's UUID and whether it is read-only. */
  function subvolume(at: string): { uuid: string; readOnly: boolean } {
    const shown = String(execFileSync('btrfs', ['subvolume', 'show', at]));
    return { uuid: /^\s*UUID:\s+(\S+)/m.exec(shown)![1], readOnly: /Flags:\s+readonly/.test(shown) };
  }

  test('a VolumeSnapshot of a pool claim is taken by the agent: a read-only subvolume of the volume as it was, its handle naming the node', async () => {
    const { pv, dir } = await provisioned('source-a');
    const before = write(dir, 'data', 4 * MiB);
    const { snapshot, content } = await snapshotOf('source-a', 'snap-a');
    write(dir, 'data', 4 * MiB);
    const at = path.join(poolDir, `snapshot-${snapshot.metadata!.uid}`);
    expect(subvolume(at).readOnly).toBe(true);
    expect(digest(path.join(at, 'data'))).toBe(before);
    expect(content.status).toMatchObject({ readyToUse: true, restoreSize: 64 * MiB, snapshotHandle: `${NODE}/${subvolume(at).uuid}` });
    expect(content.spec!.source!.volumeHandle).toBe(pv.metadata!.annotations![POOL_VOLUME_ANNOTATION]);
    expect(snapshot.status!.restoreSize).toBe('64Mi');
  });

  test('a claim restored from a VolumeSnapshot holds the snapshot\'s bytes, in a volume of its own under its own limit', async () => {
    const { dir } = await provisioned('source-b');
    const before = write(dir, 'data', 4 * MiB);
    await snapshotOf('source-b', 'snap-b');
    fs.rmSync(path.join(dir, 'data'));
    await claim('restored-b', '64Mi', { kind: 'VolumeSnapshot', name: 'snap-b', apiGroup: 'snapshot.storage.k8s.io' });
    const pv = await boundPv('restored-b');
    const restored = path.join(poolDir, pv.metadata!.name!);
    expect(digest(path.join(restored, 'data'))).toBe(before);
    expect(pv.metadata!.annotations![POOL_VOLUME_ANNOTATION]).toBe(subvolume(restored).uuid);
    // Its own limit: a tenant writing past it is stopped.
    const fill = spawnSync('dd', ['if=/dev/zero', `of=${path.join(restored, 'fill')}`, 'bs=1M', 'count=80', 'conv=fsync'], { encoding: 'utf8' });
    expect(fill.stderr).toMatch(/Disk quota exceeded/);
  });

  test('a claim cloned from a claim holds its bytes as they were; writes to either are the writer\'s alone', async () => {
    const { dir } = await provisioned('source-c');
    const before = write(dir, 'data', 4 * MiB);
    await claim('clone-c', '64Mi', { kind: 'PersistentVolumeClaim', name: 'source-c' });
    const clone = path.join(poolDir, (await boundPv('clone-c')).metadata!.name!);
    expect(digest(path.join(clone, 'data'))).toBe(before);
    write(clone, 'data', MiB);
    expect(digest(path.join(dir, 'data'))).toBe(before);
  });

  test('with its source claim deleted and its volume destroyed, a snapshot and a clone keep their bytes, and the snapshot still restores', async () => {
    const { dir } = await provisioned('source-d');
    const before = write(dir, 'data', 4 * MiB);
    await snapshotOf('source-d', 'snap-d');
    await claim('clone-d', '64Mi', { kind: 'PersistentVolumeClaim', name: 'source-d' });
    const clone = path.join(poolDir, (await boundPv('clone-d')).metadata!.name!);
    await k.delete('v1', 'PersistentVolumeClaim', 'source-d', APP);
    await eventually(() => !fs.existsSync(dir), `the source's volume is destroyed (${logs()})`);
    expect(digest(path.join(clone, 'data'))).toBe(before);
    await claim('restored-d', '64Mi', { kind: 'VolumeSnapshot', name: 'snap-d', apiGroup: 'snapshot.storage.k8s.io' });
    expect(digest(path.join(poolDir, (await boundPv('restored-d')).metadata!.name!, 'data'))).toBe(before);
  });

  test('a snapshot taken while its tenant writes holds what was written up to a point, whole', async () => {
    const { dir } = await provisioned('source-e');
    // The tenant appends numbered lines as fast as it can, for as long as the snapshot takes.
    const writer = spawn('sh', ['-c', `i=0; while :; do i=$((i+1)); echo "line $i" >> ${path.join(dir, 'log')}; done`]);
    try {
      await eventually(() => fs.existsSync(path.join(dir, 'log')) && fs.statSync(path.join(dir, 'log')).size > 10_000, 'the tenant is writing');
      const { snapshot } = await snapshotOf('source-e', 'snap-e');
      const taken = fs.readFileSync(path.join(poolDir, `snapshot-${snapshot.metadata!.uid}`, 'log'), 'utf8').split('\n').filter((l) => l !== '');
      expect(taken.length).toBeGreaterThan(100);
      expect(taken).toEqual(taken.map((_, i) => `line ${i + 1}`));
    } finally {
      writer.kill();
    }
  });

  test('a VolumeSnapshot deleted under policy Delete takes its snapshot with it, and its content goes', async () => {
    await provisioned('source-f');
    const { snapshot, content } = await snapshotOf('source-f', 'snap-f');
    const at = path.join(poolDir, `snapshot-${snapshot.metadata!.uid}`);
    expect(fs.existsSync(at)).toBe(true);
    await k.delete(SNAPSHOT_API, 'VolumeSnapshot', 'snap-f', APP);
    await eventually(async () => await k.get(SNAPSHOT_API, 'VolumeSnapshotContent', content.metadata!.name!) === undefined, `the content goes (${logs()})`);
    await eventually(() => !fs.existsSync(at), 'the snapshot subvolume is deleted');
  });

  test('a snapshot whose VolumeSnapshot and content an administrator deleted, finalizers stripped, while the agent was down is deleted once it is back', async () => {
    await provisioned('source-h');
    const { snapshot, content } = await snapshotOf('source-h', 'snap-h');
    const at = path.join(poolDir, `snapshot-${snapshot.metadata!.uid}`);
    await agent.stop();
    for (const [kind, name, namespace] of [['VolumeSnapshot', 'snap-h', APP], ['VolumeSnapshotContent', content.metadata!.name!, undefined]] as const) {
      await k.patch(SNAPSHOT_API, kind, name, { metadata: { finalizers: null } }, namespace);
      await k.delete(SNAPSHOT_API, kind, name, namespace);
    }
    await eventually(async () => await k.get(SNAPSHOT_API, 'VolumeSnapshotContent', content.metadata!.name!) === undefined, 'the content is gone');
    expect(fs.existsSync(at)).toBe(true);
    agent = startAgent(NODE, poolDir);
    await agent.waitReady();
    await eventually(() => !fs.existsSync(at), `the snapshot is deleted under its content's policy (${logs()})`);
  });

  test('a restore the scheduler placed on another node is given back, its Event naming the node the snapshot is on', async () => {
    await provisioned('source-g');
    await snapshotOf('source-g', 'snap-g');
    const agentOther = startAgent(OTHER_NODE, btrfsPool('other-pool', 256 * MiB));
    try {
      await agentOther.waitReady();
      await claim('restored-g', '64Mi', { kind: 'VolumeSnapshot', name: 'snap-g', apiGroup: 'snapshot.storage.k8s.io' }, OTHER_NODE);
      let event: CoreV1Event | undefined;
      await eventually(async () => {
        event = (await k.list<CoreV1Event>('v1', 'Event', APP)).find((e) => e.involvedObject.name === 'restored-g' && e.reason === 'PoolClaimSourceElsewhere');
        return event !== undefined;
      }, `the claim is told where its source is (${agentOther.log()})`);
      expect(event!.message).toContain(`is on node "${NODE}"`);
      const c = await k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', 'restored-g', APP);
      expect(c!.metadata!.annotations?.['volume.kubernetes.io/selected-node']).toBeUndefined();
    } finally {
      await agentOther.stop();
    }
  });
});
