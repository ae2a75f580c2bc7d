/**
 * Snapshots of pool volumes (issue 38): a 1 GiB volume's snapshot, its restore and its
 * clone, by the btrfs backend alone (as the agent calls it), then end to end through the
 * upstream snapshot controller (VolumeSnapshot to ready, restored claim to Bound); and the
 * agent's memory with its CSI node plugin (gRPC and the protos loaded) and without.
 * LVM thin snapshots need device-mapper, which this machine's kernel lacks: the
 * pool-backends section times them in the VM.
 */
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import type { CoreV1Event, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../src/config';
import type { VolumeSnapshot } from '../../src/runtime/kube/snapshot-objects';
import { BtrfsPool } from '../../src/runtime/pool/btrfs';
import { createLoopDevice, makeTempDir, mkfsBtrfs, mount } from '../../test/support/privileged';
import { installSnapshotCrds, startSnapshotController } from '../../test/support/snapshot-controller';
import { BenchCluster, constructRateLimitArgs, NODE } from '../cluster';
import { rssBytes } from '../process-stats';
import { GiB, MiB, mib, millis, row } from '../table';

const CLASS = 'snap-pool';
const APP = 'default';
const uuid = (i: number) => `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`;

/** A btrfs filesystem of `size`, mounted. */
function btrfsDir(size: number): string {
  const loop = createLoopDevice(size);
  mkfsBtrfs(loop.device);
  const dir = makeTempDir('lvp-bench-snap-');
  mount(loop.device, dir, { type: 'btrfs' });
  return dir;
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await work();
  return { ms: performance.now() - t0, value };
}

/** The backend alone: a volume holding 1 GiB, its snapshot, a volume restored from it, a clone of the volume. */
async function btrfsBackend(): Promise<void> {
  const dir = btrfsDir(6 * GiB);
  const pool = new BtrfsPool(dir);
  await pool.open();
  const name = `pvc-${uuid(1)}`;
  const identity = await pool.create(name, 2 * GiB, 'Filesystem');
  execFileSync('dd', ['if=/dev/urandom', `of=${dir}/${name}/data`, 'bs=4M', `count=${GiB / (4 * MiB)}`, 'conv=fsync', 'status=none']);
  const snapshot = await timed(() => pool.snapshot({ identity, name }, `snapshot-${uuid(2)}`));
  row('btrfs pool, snapshot of a volume holding 1 GiB (the backend alone: read-only subvolume, checked by identity)', millis(snapshot.ms), '≤ 1 s (issue 38)',
    snapshot.ms <= 1000);
  const restore = await timed(() => pool.create(`pvc-${uuid(3)}`, 2 * GiB, 'Filesystem', { snapshot: snapshot.value.identity }));
  row('btrfs pool, volume restored from that snapshot (the backend alone: its own group and limit)', millis(restore.ms), '≤ 1 s (issue 38)', restore.ms <= 1000);
  const clone = await timed(() => pool.create(`pvc-${uuid(4)}`, 2 * GiB, 'Filesystem', { volume: identity }));
  row('btrfs pool, clone of the volume holding 1 GiB (the backend alone)', millis(clone.ms), '≤ 1 s (issue 38)', clone.ms <= 1000);
}

/** End to end: a VolumeSnapshot of a claim holding 1 GiB to ready, and a claim restored from it to Bound. */
async function endToEnd(): Promise<void> {
  const cluster = await BenchCluster.start();
  const controller = startSnapshotController(await cluster.kubeconfigFile());
  // Room for the source, its restore and its clone, each promised its 2 GiB.
  const dir = btrfsDir(10 * GiB);
  const agent = await cluster.startAgent(dir, [...constructRateLimitArgs(), '--kubelet-dir', makeTempDir('lvp-bench-kubelet-')], undefined,
    { [CLASS]: { hostDir: dir, mountDir: dir, pool: 'btrfs' } });
  try {
    await installSnapshotCrds(cluster.k);
    await cluster.k.create({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: CLASS }, provisioner: POOL_PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer' });
    await cluster.k.create({ apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotClass', metadata: { name: CLASS }, driver: POOL_PROVISIONER, deletionPolicy: 'Delete' });
    await agent.waitReady();
    const claim = (name: string, dataSource?: object) => cluster.k.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: APP, annotations: { 'volume.kubernetes.io/selected-node': NODE } },
      spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } }, ...dataSource ? { dataSource } : {} },
    });
    const boundName = async (name: string): Promise<string> => {
      for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
        const c = await cluster.k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP);
        if (c?.status?.phase === 'Bound') return c.spec!.volumeName!;
        await new Promise((r) => setTimeout(r, 20));
      }
      const events = (await cluster.k.list<CoreV1Event>('v1', 'Event', APP)).filter((e) => e.involvedObject.name === name).map((e) => `${e.reason}: ${e.message}`);
      throw new Error(`claim ${name} not bound after 120 s (its Events: ${events.join('; ')})`);
    };
    await claim('source');
    const pv = await boundName('source');
    execFileSync('dd', ['if=/dev/urandom', `of=${dir}/${pv}/data`, 'bs=4M', `count=${GiB / (4 * MiB)}`, 'conv=fsync', 'status=none']);
    const snapshot = await timed(async () => {
      await cluster.k.create({
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: { name: 'snap', namespace: APP },
        spec: { volumeSnapshotClassName: CLASS, source: { persistentVolumeClaimName: 'source' } },
      });
      for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
        if ((await cluster.k.get<VolumeSnapshot>('snapshot.storage.k8s.io/v1', 'VolumeSnapshot', 'snap', APP))?.status?.readyToUse) return;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`the VolumeSnapshot was not ready after 120 s (log:\n${agent.log()}\n${controller.log()})`);
    });
    row('Pool class (btrfs), VolumeSnapshot of a claim holding 1 GiB: created to readyToUse (upstream snapshot controller v8.7.0 and the agent)', millis(snapshot.ms));
    const restore = await timed(async () => {
      await claim('restored', { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' });
      await boundName('restored');
    });
    row('Pool class (btrfs), claim restored from that VolumeSnapshot: created to Bound', millis(restore.ms));
    const clone = await timed(async () => {
      await claim('clone', { kind: 'PersistentVolumeClaim', name: 'source' });
      await boundName('clone');
    });
    row('Pool class (btrfs), claim cloned from the claim holding 1 GiB: created to Bound', millis(clone.ms));
  } finally {
    await agent.stop();
    await controller.stop();
    await cluster.stop();
  }
}

/** The agent's RSS, idle with one btrfs pool class, without and with its CSI node plugin (gRPC, the protos). */
async function pluginMemory(): Promise<void> {
  const cluster = await BenchCluster.start();
  try {
    const rss: number[] = [];
    for (const extra of [[], ['--kubelet-dir', makeTempDir('lvp-bench-kubelet-')]]) {
      const dir = btrfsDir(512 * MiB);
      const agent = await cluster.startAgent(dir, [...constructRateLimitArgs(), ...extra], undefined, { [CLASS]: { hostDir: dir, mountDir: dir, pool: 'btrfs' } });
      try {
        await agent.waitReady();
        await new Promise((r) => setTimeout(r, 5000));
        rss.push(rssBytes(agent.child.pid!));
      } finally {
        await agent.stop();
      }
    }
    row('Agent with a btrfs pool class, idle: RSS without the CSI node plugin, with it (gRPC server and protos loaded)',
      `${mib(rss[0])}, ${mib(rss[1])} (+${mib(rss[1] - rss[0])})`);
  } finally {
    await cluster.stop();
  }
}

export async function snapshots(): Promise<void> {
  await btrfsBackend();
  await endToEnd();
  await pluginMemory();
}
