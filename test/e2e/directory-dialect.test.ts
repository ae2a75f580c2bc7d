/**
 * End to end, the directory dialect with in-process cleaning: the synthesized
 * stack applied with kubectl, the agent run as its DaemonSet would run it (under
 * the synthesized RBAC), real mounts and loop devices under the class
 * directories, and the user's side played with claims.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { Duration } from 'cdk8s';
import { parse, stringify } from 'yaml';
import { Cluster, find, installImageScripts, Manifest, NODE_NAME, synthesize } from './cluster';
import { VolumeMode } from '../../src/constructs';
import { directoryPVName } from '../../src/runtime/pv';
import { AgentProcess } from '../support/agent-process';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount } from '../support/privileged';

const MiB = 1024 * 1024;
const NAMESPACE = 'local-volume-provisioner';
const CONFIG_MAP = 'local-volume-provisioner-config';


describePrivileged('end to end: directory dialect, in-process cleaning', () => {
  let cluster: Cluster;
  let agent: AgentProcess;
  let manifests: Manifest[];
  let removeScripts = () => {};
  const dirs = { fs: '', block: '', later: '' };

  beforeAll(async () => {
    removeScripts = installImageScripts();
    dirs.fs = makeTempDir('lvp-e2e-fs-');
    dirs.block = makeTempDir('lvp-e2e-block-');
    dirs.later = makeTempDir('lvp-e2e-later-');
    manifests = synthesize({
      storageClasses: [
        { name: 'e2e-fs', hostDir: dirs.fs },
        { name: 'e2e-block', hostDir: dirs.block, volumeMode: VolumeMode.BLOCK },
      ],
      setPVOwnerRef: true,
      configSyncPeriod: Duration.seconds(1),
    });
    cluster = await Cluster.start(manifests);
    agent = cluster.startAgent('local-volume-provisioner');
    await agent.waitReady();
  });
  afterAll(async () => {
    await cluster?.stop();
    cleanupPrivileged();
    removeScripts();
  });

  const pvName = (className: string, entry: string) => directoryPVName(entry, NODE_NAME, className);

  /** Binds a claim, lets `use` write through it, deletes the claim; returns the new PV once offered again. */
  async function recycle(name: string, use: () => void) {
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    const claim = await cluster.bindClaim(name);
    await cluster.waitForPv(name, { phase: 'Bound' });
    use();
    await cluster.deleteClaim(claim);
    const second = await cluster.waitForPv(name, { phase: 'Available', notUid: first.metadata!.uid });
    return { first, second };
  }

  test('the agent runs with the DaemonSet\'s args, as the synthesized ServiceAccount, from the synthesized ConfigMap', () => {
    const container = find(manifests, 'DaemonSet', 'local-volume-provisioner').spec.template.spec.containers[0];
    expect(agent.args[0]).toBe(container.args[0]);
    expect(agent.args.map((a) => a.split('=')[0])).toEqual(container.args.map((a: string) => a.split('=')[0]));
    expect(agent.args).toContain('--config-sync-period=1s');
    expect(cluster.get('ConfigMap', CONFIG_MAP, NAMESPACE)).toBeDefined();
  });

  test('Filesystem: an ext4 volume is offered, bound, written, released, cleaned, and offered again under a new UID without the file', async () => {
    const loop = createLoopDevice(16 * MiB);
    mkfsExt4(loop.device);
    const volume = path.join(dirs.fs, 'vol-ext4');
    mount(loop.device, volume);
    const name = pvName('e2e-fs', 'vol-ext4');

    const { first, second } = await recycle(name, () => fs.writeFileSync(path.join(volume, 'data.txt'), 'user data'));

    expect(first.spec!.local!.path).toBe(volume);
    expect(first.spec!.storageClassName).toBe('e2e-fs');
    expect(first.metadata!.ownerReferences?.[0]).toMatchObject({ kind: 'Node', name: NODE_NAME });
    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    expect(fs.readdirSync(volume).filter((e) => e !== 'lost+found')).toEqual([]);
  });

  test('Block: a loop device linked into the class directory is offered, and after use its filesystem is gone when offered again', async () => {
    const loop = createLoopDevice(16 * MiB);
    const link = path.join(dirs.block, 'disk1');
    fs.symlinkSync(loop.device, link);
    const name = pvName('e2e-block', 'disk1');

    const { first, second } = await recycle(name, () => mkfsExt4(loop.device));

    expect(first.spec!.volumeMode).toBe('Block');
    expect(first.spec!.local!.path).toBe(link);
    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    expect(blkidFindsNothing(loop.device)).toBe(true);
  });

  test('a plain directory in a Filesystem class is refused with an Event naming it, and gets no PV', async () => {
    const plain = path.join(dirs.fs, 'not-mounted');
    fs.mkdirSync(plain);
    await cluster.until(() => cluster.events().some((e) => e.message?.includes(`path "${plain}" is not a valid mount point`)),
      'an Event says the directory is not a valid mount point');
    const event = cluster.events().find((e) => e.message?.includes(plain))!;
    expect(event).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: NODE_NAME } });
    expect(cluster.pv(pvName('e2e-fs', 'not-mounted'))).toBeUndefined();
  });

  test('a class added to the ConfigMap while the agent runs gets its PVs, without a restart', async () => {
    makeMountPoint(path.join(dirs.later, 'vol1'));
    const pid = agent.child.pid;
    fs.writeFileSync(path.join(cluster.work, 'later-class.yaml'), stringify({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'e2e-later' },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    }));
    await cluster.kubectl('apply', '-f', path.join(cluster.work, 'later-class.yaml'));
    const data = cluster.get<V1ConfigMap>('ConfigMap', CONFIG_MAP, NAMESPACE)!.data!;
    const classes = parse(data.storageClassMap);
    classes['e2e-later'] = { ...classes['e2e-fs'], hostDir: dirs.later, mountDir: dirs.later };
    await cluster.editConfigMap(CONFIG_MAP, NAMESPACE, { storageClassMap: stringify(classes) });

    const pv = await cluster.waitForPv(pvName('e2e-later', 'vol1'), { phase: 'Available' });
    expect(pv.spec!.storageClassName).toBe('e2e-later');
    expect(agent.child.pid).toBe(pid);
    expect(agent.child.exitCode).toBeNull();
  });

  test('50 volumes churned 4 times: each round every claim binds, is released, and every volume comes back empty under a new UID', async () => {
    const volumes = Array.from({ length: 50 }, (_, i) => `churn-${String(i).padStart(2, '0')}`);
    for (const v of volumes) makeMountPoint(path.join(dirs.fs, v));
    const names = volumes.map((v) => pvName('e2e-fs', v));
    await cluster.until(() => names.every((n) => cluster.pv(n)?.status?.phase === 'Available'), 'all 50 PVs are Available', 30_000);

    const rounds: number[] = [];
    for (let round = 1; round <= 4; round++) {
      const started = Date.now();
      const uids = new Map(names.map((n) => [n, cluster.pv(n)!.metadata!.uid!]));
      const claims = await Promise.all(names.map((n) => cluster.bindClaim(n, `churn-${round}-${n}`)));
      await cluster.until(() => names.every((n) => cluster.pv(n)?.status?.phase === 'Bound'), `round ${round}: all 50 PVs are Bound`);
      volumes.forEach((v) => fs.writeFileSync(path.join(dirs.fs, v, `round-${round}`), 'x'.repeat(4096)));
      await Promise.all(claims.map((c) => cluster.deleteClaim(c)));
      await cluster.until(() => names.every((n) => {
        const pv = cluster.pv(n);
        return pv !== undefined && pv.metadata!.uid !== uids.get(n) && pv.status?.phase === 'Available';
      }), `round ${round}: all 50 PVs are offered again under new UIDs`, 30_000);
      rounds.push(Date.now() - started);
      for (const v of volumes) expect(fs.readdirSync(path.join(dirs.fs, v))).toEqual([]);
    }
    expect(new Set(cluster.pvs().map((p) => p.metadata!.uid)).size).toBe(cluster.pvs().length);
    // Figures, not assertions: the bench measures speed.
    console.log(`churn of 50 volumes, seconds per round: ${rounds.map((ms) => (ms / 1000).toFixed(1)).join(', ')}`);
  }, 300_000);


  test('every request the agent made was allowed by the synthesized RBAC (no 403)', () => {
    expect(cluster.denials).toEqual([]);
  });

  test('deleting the Node deletes its PVs, which the agent made owned by it', async () => {
    const before = cluster.pvs().filter((p) => p.metadata!.labels?.['local.storage.k8s.io/node'] === NODE_NAME);
    expect(before.length).toBeGreaterThan(50);
    expect(before.every((p) => p.metadata!.ownerReferences?.some((o) => o.kind === 'Node' && o.name === NODE_NAME))).toBe(true);
    // Stop the agent first: a node being deleted has no kubelet left to run it.
    await agent.stop();
    await cluster.kubectl('delete', 'node', NODE_NAME);
    await cluster.until(() => cluster.pvs().length === 0, 'every PV of the deleted node is gone');
  });
});

/** True when blkid finds no filesystem, partition table or other signature on the device. */
function blkidFindsNothing(device: string): boolean {
  try {
    execFileSync('blkid', ['-p', device], { stdio: 'pipe' });
    return false;
  } catch (e) {
    // blkid exits 2 when it finds nothing.
    return (e as { status?: number }).status === 2;
  }
}
