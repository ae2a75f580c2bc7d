/**
 * Where a pool class's storage is, as an administrator lays it out: pool directories
 * below the mount point of one btrfs filesystem, each reached through a bind mount of
 * it (as the DaemonSet's hostPath reaches it in the agent's container). The agent is
 * the real bin, against the real control plane and scheduler.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CoreV1Event, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../../src/config';
import { AgentProcess } from '../../support/agent-process';
import { writeConfigDir } from '../../support/class-config';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';
import { eventually } from '../kube/fixtures';


const MiB = 1024 * 1024;
const NODE = 'pool-split';
const NAMESPACE = 'lvp';
const APP = 'app';
/** Configured first: a plain directory below the filesystem's mount point, bind-mounted. */
const PLAIN = 'split-plain';
/** A subvolume below the mount point, bind-mounted. */
const SUBVOLUME = 'split-subvolume';

describePrivileged('pool directories below a btrfs filesystem\'s mount point', () => {
  let k: Kubernetes;
  let agent: AgentProcess;
  const dirs = { plain: '', subvolume: '' };

  beforeAll(async () => {
    k = await Kubernetes.forSuite({ controllers: true });
    await k.reset();
    for (const ns of [NAMESPACE, APP]) await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
    for (const name of [PLAIN, SUBVOLUME]) {
      await k.create({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name },
        provisioner: POOL_PROVISIONER,
        volumeBindingMode: 'WaitForFirstConsumer',
        reclaimPolicy: 'Delete',
      });
    }
    await k.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: POOL_PROVISIONER },
      spec: { attachRequired: false, storageCapacity: true, volumeLifecycleModes: ['Persistent'] },
    });
    await k.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } });
    const work = makeTempDir('lvp-pool-storage-');
    const kubeconfig = path.join(work, 'kubeconfig');
    await k.writeKubeconfig(kubeconfig);
    // A fresh filesystem, quotas off: the first usable class turns them on.
    const loop = createLoopDevice(512 * MiB);
    mkfsBtrfs(loop.device);
    const filesystem = path.join(work, 'fs');
    mount(loop.device, filesystem, { type: 'btrfs' });
    fs.mkdirSync(path.join(filesystem, 'plain'));
    expect(spawnSync('btrfs', ['subvolume', 'create', path.join(filesystem, 'subvolume')]).status).toBe(0);
    for (const d of ['plain', 'subvolume'] as const) {
      dirs[d] = path.join(work, `bound-${d}`);
      mount(path.join(filesystem, d), dirs[d], { bind: true });
    }
    const configDir = writeConfigDir(path.join(work, 'config'), {
      storageClassMap: {
        [PLAIN]: { hostDir: dirs.plain, mountDir: dirs.plain, pool: 'btrfs' },
        [SUBVOLUME]: { hostDir: dirs.subvolume, mountDir: dirs.subvolume, pool: 'btrfs' },
      },
    });
    const stateDir = path.join(work, 'state');
    fs.mkdirSync(stateDir);
    agent = AgentProcess.start(
      ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--discovery-period', '1m', '--state-dir', stateDir],
      { KUBECONFIG: kubeconfig, MY_NODE_NAME: NODE, MY_NAMESPACE: NAMESPACE },
    );
    await agent.waitReady();
  });

  afterAll(async () => {
    await agent?.stop();
    await k?.reset();
    cleanupPrivileged();
  });

  const claim = (name: string) => k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP);
  const pv = (name: string) => k.get<V1PersistentVolume>('v1', 'PersistentVolume', name);
  const events = async (reason: string) => (await k.list<CoreV1Event>('v1', 'Event', 'default')).filter((e) => e.reason === reason);

  test('a plain directory reached through a bind mount is refused, saying why, and does not keep the other class from the filesystem', async () => {
    await eventually(async () => (await events('PoolUnusable')).some((e) => e.message!.includes(`class "${PLAIN}"`)
      && e.message!.includes('is a plain directory of its btrfs filesystem') && e.message!.includes('btrfs subvolume create')),
    `PoolUnusable says why the plain directory cannot be a pool (logs:\n${agent.log()})`, 60_000);
    expect((await events('PoolUnusable')).filter((e) => e.message!.includes(`class "${SUBVOLUME}"`))).toEqual([]);
  });

  test('a subvolume reached through a bind mount serves claims: a volume made, limited, and destroyed when its claim goes', async () => {
    await k.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: APP },
      spec: { storageClassName: SUBVOLUME, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } } },
    });
    await k.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'data', namespace: APP },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': NODE },
        containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      },
    });
    await eventually(async () => (await claim('data'))?.status?.phase === 'Bound', `the claim is bound (logs:\n${agent.log()})`, 120_000);
    const pvName = (await claim('data'))!.spec!.volumeName!;
    const volume = path.join(dirs.subvolume, pvName);
    const write = spawnSync('dd', ['if=/dev/zero', `of=${path.join(volume, 'f')}`, 'bs=1M', 'count=64', 'conv=fsync'], { encoding: 'utf8' });
    expect(write.stderr).toMatch(/Disk quota exceeded/);

    await k.delete('v1', 'Pod', 'data', APP, 0);
    await k.delete('v1', 'PersistentVolumeClaim', 'data', APP);
    await eventually(async () => (await pv(pvName)) === undefined, `the PV goes, its volume destroyed (logs:\n${agent.log()})`, 60_000);
    expect(fs.existsSync(volume)).toBe(false);
  });
});
