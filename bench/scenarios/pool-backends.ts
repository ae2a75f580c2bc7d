/**
 * Pool classes on the backends this machine's kernel has no quotas or device-mapper for
 * (XFS and ext4 project quotas, LVM thin), on the real node (test/support/node-vm.ts):
 * the agent is the image, run by kubelet as its DaemonSet's pod, against the control
 * plane's scheduler and PV controller. Claims are placed on the node as the scheduler
 * places them (the selected-node annotation), without pods: under TCG a pod per claim
 * would measure the VM's container starts, not the backend. And the cost of making one
 * volume with its limit, the tools alone in the VM, btrfs's beside them. And LVM thin
 * snapshots of a 1 GiB volume (this machine's kernel has no device-mapper): the tools
 * alone, and end to end through the upstream snapshot controller.
 *
 * The VM may run under TCG, several times slower than this machine: compare the backends
 * with each other within this run, not with the btrfs rows measured on the host.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { POOL_PROVISIONER } from '../../src/config';
import { DEFAULT_IMAGE, PoolBackend, ProjectQuotaTenants } from '../../src/constructs';
import type { VolumeSnapshot } from '../../src/runtime/kube/snapshot-objects';
import { synthesize } from '../../test/e2e/cluster';
import { Kubernetes } from '../../test/support/kubernetes';
import { agentImageArchive, NodeVm } from '../../test/support/node-vm';
import { makeTempDir } from '../../test/support/privileged';
import { installSnapshotCrds, startSnapshotController } from '../../test/support/snapshot-controller';
import { millis, row, seconds } from '../table';

const NODE = 'node-1';
const NAMESPACE = 'local-volume-provisioner';
const APP = 'default';
const MANY = 100;
/** Each backend on a disk of its own, /dev/vdb, /dev/vdc, /dev/vdd, in this order. */
const BACKENDS = [
  { backend: PoolBackend.XFS, className: 'bench-xfs', hostDir: '/mnt/pools/xfs', label: 'XFS project quotas' },
  { backend: PoolBackend.EXT4, className: 'bench-ext4', hostDir: '/mnt/pools/ext4', label: 'ext4 project quotas' },
  { backend: PoolBackend.LVM_THIN, className: 'bench-thin', hostDir: '/dev/lvp', label: 'LVM thin (ext4 made on each)' },
] as const;
const DISK_MIB = 2048;
/** LVM's disk: room for a 1 GiB volume, its snapshot, a restore and a clone, each promised its size (sparse: what is written). */
const LVM_DISK_MIB = 5120;

export async function poolBackends(): Promise<void> {
  const work = makeTempDir('lvp-bench-backends-');
  const image = await agentImageArchive(work);
  const k = await Kubernetes.start({ nodes: true });
  let vm: NodeVm | undefined;
  try {
    const kubeconfig = path.join(work, 'admin.kubeconfig');
    k.plane.writeKubeconfig(kubeconfig);
    const manifests = synthesize({
      image: DEFAULT_IMAGE,
      storageClasses: BACKENDS.map((b) => ({
        name: b.className,
        hostDir: b.hostDir,
        pool: b.backend,
        ...(b.backend === PoolBackend.LVM_THIN ? { thinPool: 'thin' } : { projectQuotaTenants: ProjectQuotaTenants.ANY_LIMITS_RESTORED_BY_SCAN }),
      })),
      stateDirectory: '/var/lib/local-volume-provisioner',
    });
    fs.writeFileSync(path.join(work, 'stack.k8s.yaml'), manifests.map((m) => stringify(m)).join('---\n'));
    vm = await NodeVm.boot(k.plane, { name: NODE, disksMiB: BACKENDS.map((b) => b.backend === PoolBackend.LVM_THIN ? LVM_DISK_MIB : DISK_MIB) });
    await vm.importImage(image);
    await promisify(execFile)('kubectl', ['--kubeconfig', kubeconfig, 'apply', '-f', path.join(work, 'stack.k8s.yaml')]);
    const node = vm;
    const [xfs, ext4, lvm] = [1, 2, 3].map((i) => node.disk(i));
    await node.ssh([
      `mkfs.xfs -q ${xfs} && mkdir -p /mnt/pools/xfs && mount -o prjquota ${xfs} /mnt/pools/xfs`,
      `mkfs.ext4 -q -O quota,project ${ext4} && mkdir -p /mnt/pools/ext4 && mount -o prjquota ${ext4} /mnt/pools/ext4`,
      `pvcreate -q ${lvm} && vgcreate -q lvp ${lvm} && lvcreate -q --type thin-pool --size 4800m --name thin lvp`,
      // LVM confined to the pool's disk (a devices file), so that the class gives Block volumes (test/node: a tenant's own LVM).
      'printf "devices {\\n  use_devicesfile = 1\\n}\\n" >> /etc/lvm/lvmlocal.conf', `lvm lvmdevices --adddev ${lvm}`,
    ].join(' && '));
    const where = `VM, ${node.accel.toUpperCase()}`;
    await lvmThinSnapshots(k, node, kubeconfig, where);
    for (const b of BACKENDS) {
      await waitFor(async () => (await k.list('storage.k8s.io/v1', 'CSIStorageCapacity', NAMESPACE)).some((c) => c.storageClassName === b.className),
        `the ${b.className} pool publishes its capacity`);
      const one = await claimsToBound(k, b.className, `${b.className}-one`, 1);
      row(`${b.label} (${where}): 1 claim placed on the node, to Bound`, millis(one.boundMs));
      const many = await claimsToBound(k, b.className, `${b.className}-many`, MANY);
      row(`${b.label} (${where}): ${MANY} claims at once, to every claim Bound`, seconds(many.boundMs));
      row(`${b.label} (${where}): those ${MANY} deleted, to every volume destroyed and its PV gone`, seconds(many.destroyedMs));
    }
    // The tools alone: make one volume with its limit, 10 times each, and take the mean.
    const costs = await node.ssh(`set -e
      ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
      id=3000000; t=$(date +%s%N)
      for i in $(seq 10); do d=/mnt/pools/xfs/cost-$i; mkdir $d; chattr -p $((id+i)) +P $d; xfs_quota -x -c "limit -p bhard=16m ihard=1000 $((id+i))" /mnt/pools/xfs; done
      echo "xfs $(ms $t)"; t=$(date +%s%N)
      for i in $(seq 10); do d=/mnt/pools/ext4/cost-$i; mkdir $d; chattr -p $((id+i)) +P $d; xfs_quota -f -x -c "limit -p bhard=16m ihard=1000 $((id+i))" /mnt/pools/ext4; done
      echo "ext4 $(ms $t)"; t=$(date +%s%N)
      for i in $(seq 10); do lvcreate -q --thin --virtualsize 16m --name cost-$i lvp/thin >/dev/null; done
      echo "lvm $(ms $t)"
      for i in $(seq 10); do lvremove -q -y lvp/cost-$i >/dev/null; done
      truncate -s 1G /var/tmp/btrfs.img; loop=$(losetup -f --show /var/tmp/btrfs.img); mkfs.btrfs -q $loop; mkdir -p /mnt/btrfs; mount $loop /mnt/btrfs
      btrfs quota enable --simple /mnt/btrfs; t=$(date +%s%N)
      for i in $(seq 10); do btrfs -q subvolume create /mnt/btrfs/cost-$i; sid=$(btrfs inspect-internal rootid /mnt/btrfs/cost-$i)
        btrfs qgroup create 1/$sid /mnt/btrfs; btrfs qgroup assign 0/$sid 1/$sid /mnt/btrfs; btrfs qgroup limit 16m 1/$sid /mnt/btrfs; done
      echo "btrfs $(ms $t)"
      umount /mnt/btrfs; losetup -d $loop; rm /var/tmp/btrfs.img`, 300_000);
    const cost = Object.fromEntries(costs.trim().split('\n').map((l) => l.split(' ')).map(([what, ms]) => [what, Number(ms) / 10]));
    row(`Making one pool volume with its limit, the tools alone (${where}): XFS (mkdir, chattr, xfs_quota)`, millis(cost.xfs));
    row(`Making one pool volume with its limit, the tools alone (${where}): ext4 (mkdir, chattr, xfs_quota)`, millis(cost.ext4));
    row(`Making one pool volume with its limit, the tools alone (${where}): LVM thin (lvcreate, without mkfs)`, millis(cost.lvm));
    row(`Making one pool volume with its limit, the tools alone (${where}): btrfs (subvolume, qgroup create, assign, limit)`, millis(cost.btrfs));
  } finally {
    await vm?.destroy();
    await k.stop();
  }
}

/**
 * A Block claim of the LVM thin class holding 1 GiB (written on the node): its snapshot and a clone by the tools alone (the
 * agent's lvcreate, mean of 5), then a VolumeSnapshot of it to readyToUse through the upstream snapshot controller, a claim
 * restored from it and one cloned from the claim to Bound. All deleted again, before the other rows' claims.
 */
async function lvmThinSnapshots(k: Kubernetes, node: NodeVm, kubeconfig: string, where: string): Promise<void> {
  const className = BACKENDS.find((b) => b.backend === PoolBackend.LVM_THIN)!.className;
  await installSnapshotCrds(k);
  const controller = startSnapshotController(kubeconfig);
  try {
    await k.create({ apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotClass', metadata: { name: className }, driver: POOL_PROVISIONER, deletionPolicy: 'Delete' });
    const claim = (name: string, dataSource?: object) => k.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: APP, annotations: { 'volume.kubernetes.io/selected-node': NODE } },
      spec: { storageClassName: className, accessModes: ['ReadWriteOnce'], volumeMode: 'Block', resources: { requests: { storage: '1Gi' } }, ...dataSource ? { dataSource } : {} },
    });
    const bound = async (name: string) => {
      await waitFor(async () => (await k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP))?.status?.phase === 'Bound', `claim ${name} is Bound`);
      return (await k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP))!.spec!.volumeName!;
    };
    await claim('thin-gib');
    const source = await bound('thin-gib');
    await node.ssh(`dd if=/dev/urandom of=/dev/lvp/${source} bs=4M count=256 oflag=direct status=none`, 600_000);
    const tools = (await node.ssh(`set -e
      ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
      t=$(date +%s%N); for i in $(seq 5); do lvcreate -q -y --snapshot --permission r --name bench-snap-$i lvp/${source} >/dev/null; done; echo "snapshot $(ms $t)"
      t=$(date +%s%N); for i in $(seq 5); do lvcreate -q -y --snapshot --setactivationskip n --permission rw --name bench-clone-$i lvp/${source} >/dev/null; done
      echo "clone $(ms $t)"
      for i in $(seq 5); do lvremove -q -y lvp/bench-snap-$i lvp/bench-clone-$i >/dev/null; done`, 300_000))
      .trim().split('\n').map((l) => l.split(' '));
    const mean = Object.fromEntries(tools.map(([what, ms]) => [what, Number(ms) / 5]));
    row(`LVM thin (${where}), snapshot of a volume holding 1 GiB, the tools alone (lvcreate --snapshot, read-only)`, millis(mean.snapshot), '≤ 1 s (issue 38)',
      mean.snapshot <= 1000);
    row(`LVM thin (${where}), clone of a volume holding 1 GiB, the tools alone (lvcreate --snapshot, writable, active)`, millis(mean.clone), '≤ 1 s (issue 38)',
      mean.clone <= 1000);
    const t0 = performance.now();
    await k.create({
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { name: 'thin-gib', namespace: APP },
      spec: { volumeSnapshotClassName: className, source: { persistentVolumeClaimName: 'thin-gib' } },
    });
    await waitFor(async () => (await k.get<VolumeSnapshot>('snapshot.storage.k8s.io/v1', 'VolumeSnapshot', 'thin-gib', APP))?.status?.readyToUse === true,
      'the VolumeSnapshot is ready to use');
    row(`LVM thin (${where}), VolumeSnapshot of a claim holding 1 GiB: created to readyToUse (upstream snapshot controller v8.7.0 and the agent)`,
      millis(performance.now() - t0));
    const t1 = performance.now();
    await claim('thin-gib-restored', { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'thin-gib' });
    await bound('thin-gib-restored');
    row(`LVM thin (${where}), claim restored from that VolumeSnapshot: created to Bound`, millis(performance.now() - t1));
    const t2 = performance.now();
    await claim('thin-gib-clone', { kind: 'PersistentVolumeClaim', name: 'thin-gib' });
    await bound('thin-gib-clone');
    row(`LVM thin (${where}), claim cloned from the claim holding 1 GiB: created to Bound`, millis(performance.now() - t2));
    await k.delete('snapshot.storage.k8s.io/v1', 'VolumeSnapshot', 'thin-gib', APP);
    await Promise.all(['thin-gib-restored', 'thin-gib-clone', 'thin-gib'].map((name) => k.delete('v1', 'PersistentVolumeClaim', name, APP)));
    await waitFor(async () => !(await k.list<V1PersistentVolume>('v1', 'PersistentVolume')).some((p) => p.spec?.storageClassName === className),
      'the snapshot claims\' volumes are gone');
    // The controller runs until the snapshot's content is let go and its thin snapshot removed: it would keep the source's blocks.
    await waitFor(async () => await k.get('snapshot.storage.k8s.io/v1', 'VolumeSnapshot', 'thin-gib', APP) === undefined
      && !/snap-/.test(await node.ssh('lvs --noheadings -o lv_name lvp')), 'the VolumeSnapshot and its thin snapshot are gone');
  } finally {
    await controller.stop();
  }
}

/**
 * `count` claims of the class placed on the node at once: ms until every one is Bound;
 * then all deleted: ms until every PV is gone (each volume destroyed before its PV goes).
 */
async function claimsToBound(k: Kubernetes, className: string, prefix: string, count: number): Promise<{ boundMs: number; destroyedMs: number }> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  const mine = <T extends { metadata?: { name?: string } }>(objects: T[]) => objects.filter((o) => o.metadata?.name?.startsWith(`${prefix}-`));
  const t0 = performance.now();
  await Promise.all(names.map((name) => k.create({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: APP, annotations: { 'volume.kubernetes.io/selected-node': NODE } },
    spec: { storageClassName: className, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '8Mi' } } },
  })));
  await waitFor(async () => mine(await k.list<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', APP)).filter((c) => c.status?.phase === 'Bound').length === count,
    `${count} claims of ${className} are Bound`);
  const boundMs = performance.now() - t0;
  const pvs = new Set(mine(await k.list<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', APP)).map((c) => c.spec!.volumeName!));
  const t1 = performance.now();
  await Promise.all(names.map((name) => k.delete('v1', 'PersistentVolumeClaim', name, APP)));
  await waitFor(async () => !(await k.list<V1PersistentVolume>('v1', 'PersistentVolume')).some((p) => pvs.has(p.metadata!.name!)), `the ${count} PVs of ${className} are gone`);
  return { boundMs, destroyedMs: performance.now() - t1 };
}

/** Polls `condition`; only against a hang, a limit far beyond any figure (TCG is slow). */
async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 15 * 60_000;
  while (!await condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
