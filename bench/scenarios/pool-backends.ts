/**
 * Pool classes on the backends this machine's kernel has no quotas or device-mapper for
 * (XFS and ext4 project quotas, LVM thin), on the real node (test/support/node-vm.ts):
 * the agent is the image, run by kubelet as its DaemonSet's pod, against the control
 * plane's scheduler and PV controller. Claims are placed on the node as the scheduler
 * places them (the selected-node annotation), without pods: under TCG a pod per claim
 * would measure the VM's container starts, not the backend. And the cost of making one
 * volume with its limit, the tools alone in the VM, btrfs's (full-mode quotas: the VM's
 * Linux 6.1 has no simple quotas) beside them.
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
import { DEFAULT_IMAGE, PoolBackend, ProjectQuotaTenants } from '../../src/constructs';
import { synthesize } from '../../test/e2e/cluster';
import { Kubernetes } from '../../test/support/kubernetes';
import { agentImageArchive, NodeVm } from '../../test/support/node-vm';
import { makeTempDir } from '../../test/support/privileged';
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
    vm = await NodeVm.boot(k.plane, { name: NODE, disksMiB: BACKENDS.map(() => DISK_MIB) });
    await vm.importImage(image);
    await promisify(execFile)('kubectl', ['--kubeconfig', kubeconfig, 'apply', '-f', path.join(work, 'stack.k8s.yaml')]);
    const node = vm;
    const [xfs, ext4, lvm] = [1, 2, 3].map((i) => node.disk(i));
    await node.ssh([
      `mkfs.xfs -q ${xfs} && mkdir -p /mnt/pools/xfs && mount -o prjquota ${xfs} /mnt/pools/xfs`,
      `mkfs.ext4 -q -O quota,project ${ext4} && mkdir -p /mnt/pools/ext4 && mount -o prjquota ${ext4} /mnt/pools/ext4`,
      `pvcreate -q ${lvm} && vgcreate -q lvp ${lvm} && lvcreate -q --type thin-pool --size 1800m --name thin lvp`,
    ].join(' && '));
    const where = `VM, ${node.accel.toUpperCase()}`;
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
      btrfs quota enable /mnt/btrfs; t=$(date +%s%N)
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
