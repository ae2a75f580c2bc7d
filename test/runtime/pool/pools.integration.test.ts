/**
 * Pool classes end to end: three fake nodes, each with an agent (the real bin) that
 * owns a btrfs pool of its own size on a loop device, against the real control plane
 * (kube-scheduler with its volume binding, the PV controller). Pods with claims of
 * the pool class are scheduled where the claim fits, by the agents' capacity objects.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CoreV1Event, V1CSIStorageCapacity, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../../src/config';
import { PoolRecord } from '../../../src/runtime/pool/pool-record';
import { VolumeRecord } from '../../../src/runtime/record';
import { runVolumesCommand } from '../../../src/runtime/record/volumes-command';
import { parseQuantity } from '../../../src/runtime/volume';
import { AgentProcess } from '../../support/agent-process';
import { writeConfigDir } from '../../support/class-config';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';
import { eventually } from '../kube/fixtures';


const MiB = 1024 * 1024;
const CLASS = 'local-pool';
const NAMESPACE = 'lvp';
const APP = 'app';
/** Three nodes, pools of three sizes (btrfs keeps some of each for itself). */
const NODES = [{ name: 'pool-small', mib: 256 }, { name: 'pool-medium', mib: 512 }, { name: 'pool-large', mib: 1024 }];

describePrivileged('pool classes on btrfs, with the real scheduler', () => {
  let k: Kubernetes;
  const agents: AgentProcess[] = [];
  const poolDir = new Map<string, string>();
  /** Starts a node's agent (again). */
  const starts = new Map<string, () => AgentProcess>();
  /** Each node's volume record. */
  const stateDirs = new Map<string, string>();

  beforeAll(async () => {
    k = await Kubernetes.forSuite({ controllers: true });
    await k.reset();
    await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }).catch(() => undefined);
    await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: APP } }).catch(() => undefined);
    await k.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: CLASS },
      provisioner: POOL_PROVISIONER,
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
      allowVolumeExpansion: true,
    });
    await k.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: POOL_PROVISIONER },
      spec: { attachRequired: false, storageCapacity: true, volumeLifecycleModes: ['Persistent'] },
    });
    const work = makeTempDir('lvp-pools-');
    // Searchable, so a tenant (an unprivileged user) can reach its volume as a pod's bind mount would let it.
    fs.chmodSync(work, 0o755);
    const kubeconfig = path.join(work, 'kubeconfig');
    await k.writeKubeconfig(kubeconfig);
    for (const node of NODES) {
      await k.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: node.name, labels: { 'kubernetes.io/hostname': node.name } } });
      const loop = createLoopDevice(node.mib * MiB);
      mkfsBtrfs(loop.device);
      const dir = path.join(work, node.name, 'pool');
      mount(loop.device, dir, { type: 'btrfs' });
      poolDir.set(node.name, dir);
      const configDir = writeConfigDir(path.join(work, node.name, 'config'), { storageClassMap: { [CLASS]: { hostDir: dir, mountDir: dir, pool: 'btrfs' } } });
      const stateDir = path.join(work, node.name, 'state');
      fs.mkdirSync(stateDir);
      stateDirs.set(node.name, stateDir);
      const start = () => AgentProcess.start(
        ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--discovery-period', '1m', '--state-dir', stateDir],
        { KUBECONFIG: kubeconfig, MY_NODE_NAME: node.name, MY_NAMESPACE: NAMESPACE },
      );
      starts.set(node.name, start);
      agents.push(start());
    }
    await Promise.all(agents.map((a) => a.waitReady()));
  });

  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await k?.reset();
    cleanupPrivileged();
  });

  const capacities = async () => (k.list<V1CSIStorageCapacity>('storage.k8s.io/v1', 'CSIStorageCapacity', NAMESPACE));
  const capacityOf = async (node: string) => {
    const found = (await capacities()).find((c) => c.nodeTopology?.matchLabels?.['kubernetes.io/hostname'] === node);
    return found ? parseQuantity(found.capacity) : undefined;
  };

  async function claimAndPod(name: string, size: string, node?: string): Promise<void> {
    await k.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: APP },
      spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } },
    });
    await k.create({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: APP },
      spec: {
        ...(node ? { nodeSelector: { 'kubernetes.io/hostname': node } } : {}),
        containers: [{ name: 'app', image: 'registry.invalid/app:1' }],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: name } }],
      },
    });
  }

  const pod = (name: string) => k.get<V1Pod>('v1', 'Pod', name, APP);
  const pvNamed = (name: string) => k.get<V1PersistentVolume>('v1', 'PersistentVolume', name);
  const events = async (reason: string, namespace = 'default') => (await k.list<CoreV1Event>('v1', 'Event', namespace)).filter((e) => e.reason === reason);
  const agentOf = (node: string) => agents[NODES.findIndex((n) => n.name === node)];
  /** A claim of `size` bound on `node`, with a pod; its PV's name and its volume's directory. */
  async function boundOn(name: string, size: string, node: string): Promise<{ pvName: string; volume: string }> {
    await claimAndPod(name, size, node);
    await eventually(async () => (await claim(name))?.status?.phase === 'Bound', `claim ${name} is bound (logs:\n${logs()})`, 120_000);
    const pvName = (await claim(name))!.spec!.volumeName!;
    return { pvName, volume: path.join(poolDir.get(node)!, pvName) };
  }
  /** A claim of the node changed: its agent passes now, not on its period. */
  const nudge = async (name: string) => k.patch('v1', 'PersistentVolumeClaim', name, { metadata: { labels: { nudged: String(Date.now()) } } }, APP);
  const claim = (name: string) => k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP);
  const logs = () => agents.map((a, i) => `--- ${NODES[i].name}\n${a.log()}`).join('\n');

  async function removePodAndClaim(name: string): Promise<void> {
    // No kubelet runs the pod: it is deleted at once, as a kubelet's would be once stopped.
    await k.delete('v1', 'Pod', name, APP, 0).catch(() => undefined);
    await k.delete('v1', 'PersistentVolumeClaim', name, APP).catch(() => undefined);
  }

  test('every node publishes what its pool can give, and only its own', async () => {
    await eventually(async () => (await capacities()).length === NODES.length, `a capacity object per node (logs:\n${logs()})`, 60_000);
    const small = (await capacityOf('pool-small'))!;
    const large = (await capacityOf('pool-large'))!;
    expect(small).toBeGreaterThan(0);
    expect(large).toBeGreaterThan(small);
    expect((await capacities()).every((c) => c.storageClassName === CLASS)).toBe(true);
  });

  test('a pod\'s claim lands only on the node whose pool holds it, limited to its size (writes beyond fail with EDQUOT)', async () => {
    await eventually(async () => (await capacities()).length === NODES.length, 'capacity objects', 60_000);
    const before = (await capacityOf('pool-large'))!;
    await claimAndPod('big', '600Mi');
    await eventually(async () => (await pod('big'))?.spec?.nodeName !== undefined, `the pod is scheduled (logs:\n${logs()})`, 120_000);
    expect((await pod('big'))!.spec!.nodeName).toBe('pool-large');
    const bound = (await claim('big'))!;
    expect(bound.status?.phase).toBe('Bound');
    const pv = (await k.get<V1PersistentVolume>('v1', 'PersistentVolume', bound.spec!.volumeName!))!;
    expect(pv.spec?.local?.path).toBe(path.join(poolDir.get('pool-large')!, `pvc-${bound.metadata!.uid}`));
    expect(pv.spec?.capacity?.storage).toBe('600Mi');
    // The promise counts at once: what the pool can give drops by the claim.
    await eventually(async () => (await capacityOf('pool-large'))! <= before - 600 * MiB, 'the capacity object follows', 60_000);

    const write = spawnSync('dd', ['if=/dev/zero', `of=${path.join(pv.spec!.local!.path!, 'data')}`, 'bs=1M', 'count=700', 'conv=fsync'], { encoding: 'utf8' });
    expect(write.status).not.toBe(0);
    expect(write.stderr).toMatch(/Disk quota exceeded/);
  });

  test('a claim asking for more has its volume\'s limit raised, and the PV\'s and the claim\'s capacity say so', async () => {
    await eventually(async () => (await claim('big'))?.status?.phase === 'Bound', 'the claim of the earlier test is bound', 60_000);
    const bound = (await claim('big'))!;
    const pvName = bound.spec!.volumeName!;
    // The controller manager's own condition on the claim, which the resize must keep.
    await eventually(async () => (await claim('big'))?.status?.conditions?.some((c) => c.type === 'Unused') === true, 'the Unused condition', 60_000);
    await k.patch('v1', 'PersistentVolumeClaim', 'big', { spec: { resources: { requests: { storage: '700Mi' } } } }, APP);
    await eventually(async () => (await claim('big'))?.status?.capacity?.storage === '700Mi', `the claim says 700Mi (logs:\n${logs()})`, 60_000);
    expect((await k.get<V1PersistentVolume>('v1', 'PersistentVolume', pvName))!.spec!.capacity!.storage).toBe('700Mi');
    expect((await claim('big'))!.status?.conditions?.map((c) => c.type)).not.toContain('Resizing');
    // Others' conditions are kept.
    expect((await claim('big'))!.status?.conditions?.map((c) => c.type)).toContain('Unused');
    const write = spawnSync('dd', ['if=/dev/zero', `of=${path.join(poolDir.get('pool-large')!, pvName, 'more')}`, 'bs=1M', 'count=60', 'conv=fsync'], { encoding: 'utf8' });
    expect([write.status, write.stderr]).toEqual([0, expect.any(String)]);
    // Its agent says so in its metrics, with what the volume holds.
    const large = agents[NODES.findIndex((n) => n.name === 'pool-large')];
    await eventually(async () => (await large.get('/metrics')).body
      .includes(`local_volume_provisioner_pool_volume_limit_bytes{persistentvolume="${pvName}",storageclass="${CLASS}"} ${700 * MiB}`), 'the limit metric', 30_000);
  });

  test('growth the pool cannot hold is refused on the claim, and the volume keeps its size', async () => {
    const pvName = (await claim('big'))!.spec!.volumeName!;
    await k.patch('v1', 'PersistentVolumeClaim', 'big', { spec: { resources: { requests: { storage: '5Gi' } } } }, APP);
    await eventually(async () => (await k.list<CoreV1Event>('v1', 'Event', APP))
      .some((e) => e.reason === 'PoolExpansionRefused' && e.involvedObject.name === 'big'), 'a PoolExpansionRefused Event on the claim', 60_000);
    expect((await k.get<V1PersistentVolume>('v1', 'PersistentVolume', pvName))!.spec!.capacity!.storage).toBe('700Mi');
    expect((await claim('big'))!.status?.capacity?.storage).toBe('700Mi');
  });

  test('a claim no pool can hold stays Pending and its pod unscheduled, saying why', async () => {
    await claimAndPod('huge', '5Gi');
    await eventually(async () => {
      const scheduled = (await pod('huge'))?.status?.conditions?.find((c) => c.type === 'PodScheduled');
      return scheduled?.status === 'False' && /enough free storage|storage capacity/i.test(scheduled.message ?? '');
    }, 'the scheduler says no node has the storage', 60_000);
    expect((await claim('huge'))!.status?.phase).toBe('Pending');
    await removePodAndClaim('huge');
  });

  test('a pool PV made Available again by an administrator (its claimRef cleared while its agent was down) is withdrawn, never offered', async () => {
    await claimAndPod('reused', '50Mi');
    await eventually(async () => (await claim('reused'))?.status?.phase === 'Bound', `the claim is bound (logs:\n${logs()})`, 120_000);
    const pvName = (await claim('reused'))!.spec!.volumeName!;
    const nodeName = (await k.get<V1PersistentVolume>('v1', 'PersistentVolume', pvName))!.metadata!.labels!['local.storage.k8s.io/node'];
    const agent = agents[NODES.findIndex((n) => n.name === nodeName)];
    const volume = path.join(poolDir.get(nodeName)!, pvName);
    fs.writeFileSync(path.join(volume, 'secret'), 'the first tenant\'s');
    process.kill(agent.child.pid!, 'SIGSTOP');
    try {
      await removePodAndClaim('reused');
      await eventually(async () => (await k.get<V1PersistentVolume>('v1', 'PersistentVolume', pvName))?.status?.phase === 'Released', 'the PV is Released', 60_000);
      await k.patch('v1', 'PersistentVolume', pvName, { spec: { claimRef: null } });
      await eventually(async () => (await k.get<V1PersistentVolume>('v1', 'PersistentVolume', pvName))?.status?.phase === 'Available', 'the PV is Available', 60_000);
    } finally {
      process.kill(agent.child.pid!, 'SIGCONT');
    }
    await eventually(async () => (await k.get('v1', 'PersistentVolume', pvName)) === undefined, `the PV is withdrawn (logs:\n${logs()})`, 60_000);
    expect(fs.existsSync(volume)).toBe(false);
    await eventually(async () => (await k.list<CoreV1Event>('v1', 'Event', 'default'))
      .some((e) => e.reason === 'VolumeWithdrawn' && e.involvedObject.name === pvName), 'a VolumeWithdrawn Event on the PV', 30_000);
  });

  test('a volume with no PV whose claim the server says is gone (deleted before its PV was made) is destroyed under policy Delete', async () => {
    const name = 'pvc-11111111-2222-3333-4444-555555555555';
    const stray = path.join(poolDir.get('pool-small')!, name);
    // What an agent killed between making a volume and recording it leaves: the line it was being made under, naming its claim.
    await new PoolRecord(VolumeRecord.open(stateDirs.get('pool-small')!).record).making({
      className: CLASS, name, hostPath: stray, claim: `${APP}/gone`, claimUid: '11111111-2222-3333-4444-555555555555',
    });
    spawnSync('btrfs', ['subvolume', 'create', stray], { encoding: 'utf8' });
    fs.writeFileSync(path.join(stray, 'data'), 'written by nobody who can still claim it');
    await eventually(async () => !fs.existsSync(stray), `the stray volume is destroyed (logs:\n${logs()})`, 60_000);
    await eventually(async () => (await k.list<CoreV1Event>('v1', 'Event', 'default'))
      .some((e) => e.reason === 'PoolVolumeStrayDestroyed' && e.message?.includes(stray) && e.message?.includes(`${APP}/gone is gone`)),
    'a PoolVolumeStrayDestroyed Event on the Node', 30_000);
  });

  test('a volume with no PV that no record names a claim of (made by hand) is kept, and said: whose it is cannot be shown', async () => {
    const stray = path.join(poolDir.get('pool-small')!, 'pvc-66666666-7777-8888-9999-000000000000');
    spawnSync('btrfs', ['subvolume', 'create', stray], { encoding: 'utf8' });
    fs.writeFileSync(path.join(stray, 'data'), 'someone\'s');
    await eventually(async () => (await k.list<CoreV1Event>('v1', 'Event', 'default'))
      .some((e) => e.reason === 'PoolVolumeStrayKept' && e.message?.includes(stray) && e.message?.includes('no record names the claim')),
    `PoolVolumeStrayKept names it (logs:\n${logs()})`, 60_000);
    expect(fs.readFileSync(path.join(stray, 'data'), 'utf8')).toBe('someone\'s');
    spawnSync('btrfs', ['subvolume', 'delete', stray]);
  });

  test('a deleted claim\'s volume is destroyed, its PV goes, and the capacity object gives the space back', async () => {
    await eventually(async () => (await claim('big'))?.status?.phase === 'Bound', 'the claim of the earlier test is bound', 60_000);
    const bound = (await claim('big'))!;
    const pvName = bound.spec!.volumeName!;
    const volume = path.join(poolDir.get('pool-large')!, pvName);
    const held = (await capacityOf('pool-large'))!;
    await removePodAndClaim('big');
    await eventually(async () => (await k.get('v1', 'PersistentVolume', pvName)) === undefined, `the PV goes (logs:\n${logs()})`, 60_000);
    expect(fs.existsSync(volume)).toBe(false);
    await eventually(async () => (await capacityOf('pool-large'))! >= held + 600 * MiB, 'the space is given back', 60_000);
  });
  test('a subvolume a tenant makes in its volume, counted to another volume\'s quota group, is put back under its own limit and said on its PV', async () => {
    const victim = await boundOn('victim', '100Mi', 'pool-medium');
    const tenant = await boundOn('escaper', '20Mi', 'pool-medium');
    const victimGroup = `1/${spawnSync('btrfs', ['inspect-internal', 'rootid', victim.volume], { encoding: 'utf8' }).stdout.trim()}`;
    fs.chmodSync(tenant.volume, 0o777);
    const asTenant = (script: string) => spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', 'sh', '-c', script], { encoding: 'utf8' });
    const escaped = asTenant(`btrfs subvolume create -i ${victimGroup} ${tenant.volume}/away`);
    expect({ status: escaped.status, said: escaped.stderr }).toMatchObject({ status: 0 });
    // More than its own 20 MiB, charged to the victim: all of it, or as much as its own limit lets through when a pass (any
    // change starts one) has already put the subvolume back (then dd fails, Disk quota exceeded).
    asTenant(`dd if=/dev/zero of=${tenant.volume}/away/f bs=1M count=30 conv=fsync`);

    await nudge('escaper');

    await eventually(async () => (await events('PoolVolumeLimitEscaped')).some((e) => e.involvedObject.name === tenant.pvName),
      `PoolVolumeLimitEscaped on the tenant's PV (logs:\n${logs()})`, 60_000);
    expect(asTenant(`dd if=/dev/zero of=${tenant.volume}/away/g bs=1M count=4 conv=fsync`).stderr).toMatch(/Disk quota exceeded/);
    expect((await agentOf('pool-medium').get('/metrics')).body).toMatch(new RegExp(`^local_volume_provisioner_pool_limit_escapes_total\\{storageclass="${CLASS}"\\} 1$`, 'm'));
    await removePodAndClaim('escaper');
    await removePodAndClaim('victim');
    await eventually(async () => (await pvNamed(tenant.pvName)) === undefined && (await pvNamed(victim.pvName)) === undefined, 'both PVs go', 60_000);
  });

  test('a volume still mounted on its node (a container that did not stop) is not destroyed: VolumeInUse on its PV, destroyed once unmounted', async () => {
    const { pvName, volume } = await boundOn('held', '20Mi', 'pool-medium');
    const podMount = makeTempDir('lvp-pod-mount-');
    mount(volume, podMount, { bind: true });
    fs.writeFileSync(path.join(podMount, 'still-writing'), 'x');
    await removePodAndClaim('held');
    await eventually(async () => (await events('VolumeInUse')).some((e) => e.involvedObject.name === pvName && e.message!.includes(podMount)),
      `VolumeInUse on the PV (logs:\n${logs()})`, 60_000);
    expect(fs.readFileSync(path.join(volume, 'still-writing'), 'utf8')).toBe('x');
    expect((await pvNamed(pvName))?.metadata?.deletionTimestamp).toBeDefined();

    spawnSync('umount', [podMount]);
    await eventually(async () => (await pvNamed(pvName)) === undefined, `the PV goes once nothing uses its volume (logs:\n${logs()})`, 90_000);
    expect(fs.existsSync(volume)).toBe(false);
  });

  test('a volume that cannot be destroyed is said on its PV and counted, tried again, and the node serves new claims meanwhile', async () => {
    const { pvName, volume } = await boundOn('stuck', '20Mi', 'pool-medium');
    const id = spawnSync('btrfs', ['inspect-internal', 'rootid', volume], { encoding: 'utf8' }).stdout.trim();
    // An administrator made it the filesystem's default subvolume, which btrfs refuses to delete.
    expect(spawnSync('btrfs', ['subvolume', 'set-default', id, poolDir.get('pool-medium')!]).status).toBe(0);
    try {
      await removePodAndClaim('stuck');
      await eventually(async () => (await events('PoolVolumeFailed')).some((e) => e.involvedObject.name === pvName && /destroying .*tried again next pass/.test(e.message!)),
        `PoolVolumeFailed on the PV (logs:\n${logs()})`, 60_000);
      expect((await agentOf('pool-medium').get('/metrics')).body)
        .toMatch(new RegExp(`^local_volume_provisioner_pool_operation_failures_total\\{storageclass="${CLASS}",operation="destroy"\\} [1-9]`, 'm'));
      const after = await boundOn('after', '20Mi', 'pool-medium');
      expect(fs.existsSync(after.volume)).toBe(true);
      await removePodAndClaim('after');
      await eventually(async () => (await pvNamed(after.pvName)) === undefined, 'the other claim\'s volume goes, destroyed while the stuck one is not', 60_000);
      expect(await pvNamed(pvName)).toBeDefined();
    } finally {
      spawnSync('btrfs', ['subvolume', 'set-default', '5', poolDir.get('pool-medium')!]);
    }
    await eventually(async () => (await pvNamed(pvName)) === undefined, `the PV goes once its volume can be destroyed (logs:\n${logs()})`, 90_000);
  });

  test('a Retain PV an administrator deletes keeps its volume: never taken for a stray, until "volumes reclaim" has it destroyed', async () => {
    const { pvName, volume } = await boundOn('retained', '20Mi', 'pool-medium');
    fs.writeFileSync(path.join(volume, 'data'), 'keep me');
    await k.patch('v1', 'PersistentVolume', pvName, { spec: { persistentVolumeReclaimPolicy: 'Retain' } });
    await removePodAndClaim('retained');
    await eventually(async () => (await pvNamed(pvName))?.status?.phase === 'Released', 'the PV is Released', 60_000);
    await k.delete('v1', 'PersistentVolume', pvName);
    await eventually(async () => (await pvNamed(pvName)) === undefined, `the PV goes (logs:\n${logs()})`, 60_000);
    // Passes go on (another claim comes and goes): the volume, with no PV and no claim now, is kept by its line.
    const other = await boundOn('passer-by', '10Mi', 'pool-medium');
    await removePodAndClaim('passer-by');
    await eventually(async () => (await pvNamed(other.pvName)) === undefined, 'the other claim\'s volume is destroyed', 60_000);
    await eventually(async () => (await events('PoolVolumeStrayKept')).some((e) => e.message!.includes(volume) && e.message!.includes('Retain')),
      `PoolVolumeStrayKept names the volume and its PV's policy (logs:\n${logs()})`, 60_000);
    expect(fs.readFileSync(path.join(volume, 'data'), 'utf8')).toBe('keep me');

    expect(await runVolumesCommand({ stateDir: stateDirs.get('pool-medium')!, action: 'reclaim', volume })).toContain(`${volume} (pool:`);
    await boundOn('passer-by-2', '10Mi', 'pool-medium');
    await removePodAndClaim('passer-by-2');
    await eventually(async () => !fs.existsSync(volume), `the volume is destroyed as the administrator said (logs:\n${logs()})`, 60_000);
  });

  test('quotas turned off under a bound volume and on again: the volume gets its group and its PV\'s size back as its limit, and the capacity counts its promise', async () => {
    const node = 'pool-medium';
    const pool = poolDir.get(node)!;
    const { pvName, volume } = await boundOn('requota', '50Mi', node);
    const id = spawnSync('btrfs', ['inspect-internal', 'rootid', volume], { encoding: 'utf8' }).stdout.trim();
    expect(spawnSync('btrfs', ['quota', 'disable', pool]).status).toBe(0);
    await nudge('requota');
    await eventually(async () => (await capacityOf(node)) === undefined, `the capacity is withdrawn while quotas are off (logs:\n${logs()})`, 60_000);

    // What docs/operations.md tells the administrator to do.
    expect(spawnSync('btrfs', ['quota', 'enable', '--simple', pool]).status).toBe(0);
    await nudge('requota');
    const groupOf = () => (JSON.parse(spawnSync('btrfs', ['--format', 'json', 'qgroup', 'show', '-pre', '--raw', pool], { encoding: 'utf8' }).stdout) as {
      'qgroup-show': Array<{ qgroupid: string; max_referenced: number | 'none'; parents: string[] }>;
    })['qgroup-show'];
    await eventually(async () => groupOf().find((g) => g.qgroupid === `1/${id}`)?.max_referenced === 50 * MiB
      && groupOf().find((g) => g.qgroupid === `0/${id}`)!.parents.includes(`1/${id}`), `the volume is in its group, limited to 50Mi (logs:\n${logs()})`, 60_000);
    const write = spawnSync('dd', ['if=/dev/zero', `of=${path.join(volume, 'data')}`, 'bs=1M', 'count=120', 'conv=fsync'], { encoding: 'utf8' });
    expect(write.stderr).toMatch(/Disk quota exceeded/);
    expect(fs.statSync(path.join(volume, 'data')).size).toBeLessThanOrEqual(50 * MiB);
    // Published again, with the volume's promise (its limit less what it holds) taken off the free space.
    await nudge('requota');
    await eventually(async () => (await capacityOf(node)) !== undefined, 'the capacity is published again', 60_000);
    const st = fs.statfsSync(pool);
    expect((await capacityOf(node))!).toBeLessThanOrEqual(st.bavail * st.bsize);
    await eventually(async () => {
      await nudge('requota');
      return (await agentOf(node).get('/metrics')).body.includes(`local_volume_provisioner_pool_volume_limit_bytes{persistentvolume="${pvName}",storageclass="${CLASS}"} ${50 * MiB}`);
    }, 'the limit metric says 50Mi again', 30_000);
    await removePodAndClaim('requota');
    await eventually(async () => (await pvNamed(pvName)) === undefined, 'its PV goes', 60_000);
  });

  test('a PV set to Retain and deleted (its finalizer stripped) while its agent is down: the returning agent holds the volume and says so, never destroys it as a stray', async () => {
    const node = 'pool-medium';
    const { pvName, volume } = await boundOn('unseen-retain', '20Mi', node);
    fs.writeFileSync(path.join(volume, 'data'), 'keep me');
    // Stopped first, so that no pass of it ever sees the Retain; then killed, as a node's crash would.
    process.kill(agentOf(node).child.pid!, 'SIGSTOP');
    await k.patch('v1', 'PersistentVolume', pvName, { spec: { persistentVolumeReclaimPolicy: 'Retain' } });
    await agentOf(node).kill('SIGKILL');
    await removePodAndClaim('unseen-retain');
    await eventually(async () => (await pvNamed(pvName))?.status?.phase === 'Released', 'the PV is Released', 60_000);
    await k.delete('v1', 'PersistentVolume', pvName);
    await k.patch('v1', 'PersistentVolume', pvName, { metadata: { finalizers: null } });
    await eventually(async () => (await pvNamed(pvName)) === undefined, 'the PV is gone', 60_000);

    const again = starts.get(node)!();
    agents[NODES.findIndex((n) => n.name === node)] = again;
    await again.waitReady();
    // Passes go on: the volume stays, with its data, and the agent says why.
    const other = await boundOn('passer-by-held', '10Mi', node);
    await removePodAndClaim('passer-by-held');
    await eventually(async () => (await pvNamed(other.pvName)) === undefined, 'the other claim\'s volume is destroyed', 60_000);
    expect(fs.readFileSync(path.join(volume, 'data'), 'utf8')).toBe('keep me');
    await eventually(async () => (await events('PoolVolumeHeld')).some((e) => e.involvedObject.name === node && e.message!.includes(volume)),
      `PoolVolumeHeld on the Node (logs:\n${logs()})`, 60_000);
    expect((await again.get('/metrics')).body).toMatch(new RegExp(`^local_volume_provisioner_pool_stray_volumes_kept\\{storageclass="${CLASS}"\\} 1$`, 'm'));

    expect(await runVolumesCommand({ stateDir: stateDirs.get(node)!, action: 'reclaim', volume })).toContain(`${volume} (pool:`);
    const third = await boundOn('passer-by-held-2', '10Mi', node);
    await removePodAndClaim('passer-by-held-2');
    await eventually(async () => !fs.existsSync(volume), `the volume is destroyed as the administrator said (logs:\n${logs()})`, 60_000);
    await eventually(async () => (await pvNamed(third.pvName)) === undefined, 'the other claim\'s volume is destroyed', 60_000);
  });

  test('an agent killed -9 while making volumes, and again while destroying them: each claim gets one volume with its limit, then none is left', async () => {
    const node = 'pool-medium';
    const pool = poolDir.get(node)!;
    const names = Array.from({ length: 6 }, (_, i) => `crash-${i}`);
    const volumesIn = () => fs.readdirSync(pool).filter((e) => e.startsWith('pvc-'));
    const restart = async () => {
      await agentOf(node).kill('SIGKILL');
      agents[NODES.findIndex((n) => n.name === node)] = starts.get(node)!();
    };
    const before = volumesIn();
    await Promise.all(names.map((n) => claimAndPod(n, '8Mi', node)));
    // Killed as soon as it has made a first volume: the others are anywhere between nothing and a bound PV.
    await eventually(async () => volumesIn().length > before.length, 'a first volume is made', 60_000);
    await restart();
    await eventually(async () => (await Promise.all(names.map(claim))).every((c) => c?.status?.phase === 'Bound'), `every claim is bound (logs:\n${logs()})`, 120_000);
    const pvNames = await Promise.all(names.map(async (n) => (await claim(n))!.spec!.volumeName!));
    expect(volumesIn().filter((v) => !before.includes(v)).sort()).toEqual([...pvNames].sort());
    const groups = JSON.parse(spawnSync('btrfs', ['--format', 'json', 'qgroup', 'show', '-re', '--raw', pool], { encoding: 'utf8' }).stdout) as {
      'qgroup-show': Array<{ qgroupid: string; max_referenced: number | 'none' }>;
    };
    for (const pvName of pvNames) {
      const id = spawnSync('btrfs', ['inspect-internal', 'rootid', path.join(pool, pvName)], { encoding: 'utf8' }).stdout.trim();
      expect(groups['qgroup-show'].find((g) => g.qgroupid === `1/${id}`)?.max_referenced).toBe(8 * MiB);
    }

    await Promise.all(names.map(removePodAndClaim));
    // Killed again as soon as a first volume is destroyed.
    await eventually(async () => volumesIn().length < before.length + names.length, 'a first volume is destroyed', 60_000);
    await restart();
    await eventually(async () => volumesIn().length === before.length, `every volume is destroyed (logs:\n${logs()})`, 120_000);
    await eventually(async () => (await Promise.all(pvNames.map(pvNamed))).every((p) => p === undefined), 'every PV is gone', 60_000);
  });

  test('a pool directory unmounted under its agent: PoolUnusable, and its capacity withdrawn, after a restart of the agent too', async () => {
    const node = 'pool-small';
    await eventually(async () => (await capacityOf(node)) !== undefined, 'the node publishes its capacity', 60_000);
    const agent = agentOf(node);
    await agent.kill('SIGKILL');
    // Its pool goes while no agent runs: the capacity object the last run wrote stays.
    spawnSync('umount', ['-l', poolDir.get(node)!]);
    expect(await capacityOf(node)).toBeDefined();
    const again = starts.get(node)!();
    agents[NODES.findIndex((n) => n.name === node)] = again;
    await eventually(async () => (await capacityOf(node)) === undefined, `the capacity object is withdrawn (logs:\n${logs()})`, 60_000);
    await eventually(async () => (await events('PoolUnusable')).some((e) => e.involvedObject.name === node), 'PoolUnusable on the Node', 60_000);
    expect((await again.get('/metrics')).body).toMatch(new RegExp(`^local_volume_provisioner_pool_usable\\{storageclass="${CLASS}"\\} 0$`, 'm'));
  });
});
