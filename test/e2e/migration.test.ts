/**
 * End to end, the switch docs/migration.md describes: PVs left by the Go static
 * provisioner (Helm chart) and by the device-selecting provisioner are in the
 * cluster, one of each in use; the synthesized stack is applied and its agent
 * started. The agent adopts them (same names, no second PV), under the
 * synthesized RBAC, and recycles them as its own once released.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { V1Node, V1PersistentVolume } from '@kubernetes/client-node';
import { Cluster, installImageScripts, NODE_NAME, synthesize } from './cluster';
import { VolumeMode } from '../../src/constructs';
import { promtoolCheckMetrics, samplesOf } from '../runtime/observability/exposition';
import { referenceFnv1a32 } from '../runtime/pv/reference-fnv1a';
import { AgentProcess, parseJson } from '../support/agent-process';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4 } from '../support/privileged';
import {
  DEVICE_PROVISIONER, DEVICE_PROVISIONER_NAMESPACE, NODE_CLEANUP, renderDeviceProvisioner, renderNodeCleanupExample, renderStaticProvisionerChart,
} from '../support/upstream-deployments';

const MiB = 1024 * 1024;
const NODE_LABEL = 'local.storage.k8s.io/node';


/** The Go provisioner's PV name: FNV-1a of entry + node + class, in lower-case hex. */
const goPvName = (entry: string, className: string) => `local-pv-${referenceFnv1a32(`${entry}${NODE_NAME}${className}`).toString(16)}`;

function hostnameAffinity(node = NODE_NAME) {
  return { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } };
}

/** A PV as the Go static provisioner wrote it: its name rule, its provisioned-by annotation, no label of ours. */
function goPv(options: { entry: string; dir: string; className: string; provisionedBy: string; node?: string }): V1PersistentVolume {
  const node = options.node ?? NODE_NAME;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `local-pv-${referenceFnv1a32(`${options.entry}${node}${options.className}`).toString(16)}`,
      annotations: { 'pv.kubernetes.io/provisioned-by': options.provisionedBy },
    },
    spec: {
      capacity: { storage: '1Mi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: options.className,
      volumeMode: 'Filesystem',
      local: { path: path.join(options.dir, options.entry), fsType: 'ext4' },
      nodeAffinity: hostnameAffinity(node),
    },
  };
}

/** A Block PV as the device provisioner wrote it: its name rule, its labels and spec annotations, Retain, owned by the Node. */
interface DevicePvOptions {
  readonly nodeUid: string;
  readonly deviceDir: string;
  readonly baseName: string;
  readonly storageClassName: string;
  readonly deviceNameFilter: string;
}

function devicePv(options: DevicePvOptions): V1PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `local-${NODE_NAME}-${options.baseName}`.replace(/[^0-9A-Za-z.]+/g, '-').toLowerCase(),
      labels: { 'local-pv-provisioner.cybozu.io/node': NODE_NAME, 'local-pv-provisioner.cybozu.com/node': NODE_NAME },
      annotations: {
        'local-pv-provisioner.cybozu.io/storageClassName': options.storageClassName,
        'local-pv-provisioner.cybozu.io/volumeMode': 'Block',
        'local-pv-provisioner.cybozu.io/fsType': '',
        'local-pv-provisioner.cybozu.io/deviceDir': options.deviceDir,
        'local-pv-provisioner.cybozu.io/deviceNameFilter': options.deviceNameFilter,
      },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: NODE_NAME, uid: options.nodeUid, controller: true }],
    },
    spec: {
      capacity: { storage: `${16 * MiB}` },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: options.storageClassName,
      volumeMode: 'Block',
      local: { path: path.join(options.deviceDir, options.baseName) },
      nodeAffinity: hostnameAffinity(),
    },
  };
}

describePrivileged('end to end: migration from the replaced provisioners', () => {
  let cluster: Cluster | undefined;
  let agent: AgentProcess | undefined;
  let removeScripts = () => {};
  beforeAll(() => {
    removeScripts = installImageScripts();
  });
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
    agent = undefined;
  });
  afterAll(() => {
    cleanupPrivileged();
    removeScripts();
  });

  const pvs = () => cluster!.pvs();

  /** A claim bound to an existing PV, as it was under the old provisioner. */
  function inUse(pvName: string): Promise<string> {
    return cluster!.bindClaim(pvName, `data-${pvName}`);
  }

  test('from the Helm chart: the Go provisioner\'s PVs are adopted under their names (each with a VolumeAdopted Event), no second PV is made, and a released one is recycled', async () => {
    const dir = makeTempDir('lvp-e2e-helm-');
    for (const v of ['vol1', 'vol2']) makeMountPoint(path.join(dir, v));
    // The old PVs are there before the stack's claim guard (which would refuse their creation by anyone but our agents).
    cluster = await Cluster.start(synthesize({ storageClasses: [{ name: 'fast-disks', hostDir: dir }] }), {}, { claimGuardLater: true });
    const nodeUid = cluster.get<V1Node>('Node', NODE_NAME)!.metadata!.uid;
    const old = await Promise.all(['vol1', 'vol2'].map((v) => cluster!.create<V1PersistentVolume>({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: goPvName(v, 'fast-disks'), annotations: { 'pv.kubernetes.io/provisioned-by': `local-volume-provisioner-${NODE_NAME}-${nodeUid}` } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: 'fast-disks',
        volumeMode: 'Filesystem',
        local: { path: path.join(dir, v) },
        nodeAffinity: hostnameAffinity(),
      },
    })));
    const claim = await inUse(old[0].metadata!.name!);
    fs.writeFileSync(path.join(dir, 'vol1', 'data.txt'), 'written under the Go provisioner');
    await cluster.installClaimGuard();

    agent = cluster.startAgent('local-volume-provisioner');
    await agent.waitReady();
    await cluster.until(() => pvs().every((p) => p.metadata!.labels?.[NODE_LABEL] === NODE_NAME), 'both PVs carry the node label');

    expect(pvs().map((p) => [p.metadata!.name, p.metadata!.uid]).sort()).toEqual(old.map((p) => [p.metadata!.name, p.metadata!.uid]).sort());
    expect(fs.readFileSync(path.join(dir, 'vol1', 'data.txt'), 'utf8')).toBe('written under the Go provisioner');

    await cluster.deleteClaim(claim);
    const recycled = await cluster.waitForPv(old[0].metadata!.name!, { phase: 'Available', notUid: old[0].metadata!.uid });
    expect(recycled.metadata!.labels?.[NODE_LABEL]).toBe(NODE_NAME);
    expect(fs.readdirSync(path.join(dir, 'vol1'))).toEqual([]);
    expect(pvs()).toHaveLength(2);
    expect(cluster.denials).toEqual([]);
    // Each adoption is reported on its PV (docs/operations.md, Events: VolumeAdopted).
    const adopted = () => cluster!.events('VolumeAdopted').map((e) => e.involvedObject.name).sort();
    await cluster.until(() => adopted().length >= 2, 'a VolumeAdopted Event is recorded for each adopted PV', 5000);
    expect(adopted()).toEqual(old.map((p) => p.metadata!.name).sort());
  });

  test('from the device provisioner: its Retain PV is adopted under its name, and once released is wiped and offered again as the spec says', async () => {
    const deviceDir = makeTempDir('lvp-e2e-olddevices-');
    const loop = createLoopDevice(16 * MiB);
    const baseName = 'pci-0000:3c:00.0-nvme-1';
    fs.symlinkSync(loop.device, path.join(deviceDir, baseName));
    const spec = { name: 'nvme-block', storageClassName: 'local-storage', volumeMode: VolumeMode.BLOCK, deviceDir, deviceNameFilter: '^pci-.*-nvme-' };
    cluster = await Cluster.start(synthesize({ devices: { specs: [spec] } }), { 'local-pv-provisioner.cybozu.io/pv-spec-configmap': 'nvme-block' }, { claimGuardLater: true });
    const node = cluster.get<V1Node>('Node', NODE_NAME)!;
    const old = await cluster.create<V1PersistentVolume>(devicePv({
      nodeUid: node.metadata!.uid!, deviceDir, baseName, storageClassName: spec.storageClassName, deviceNameFilter: spec.deviceNameFilter,
    }));
    const name = old.metadata!.name!;
    const claim = await inUse(name);
    mkfsExt4(loop.device);
    await cluster.installClaimGuard();

    agent = cluster.startAgent('local-volume-provisioner-devices');
    await agent.waitReady();
    await cluster.until(() => cluster!.pv(name)?.metadata!.labels?.[NODE_LABEL] === NODE_NAME, 'the PV carries the node label');
    expect(pvs().map((p) => p.metadata!.uid)).toEqual([old.metadata!.uid]);
    // In use: not wiped.
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).not.toThrow();

    await cluster.deleteClaim(claim);
    const recycled = await cluster.waitForPv(name, { phase: 'Available', notUid: old.metadata!.uid });
    expect(recycled.spec!.persistentVolumeReclaimPolicy).toBe('Delete');
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).toThrow();
    expect(pvs()).toHaveLength(1);
    expect(cluster.denials).toEqual([]);
  });

  describe('only the image changed: the Helm chart v2.9.0 and the node-cleanup example, with their args, env and RBAC', () => {
    const CLASS = 'nvme-ssd-block';
    const RELEASE = 'local-static-provisioner';

    test('the Go provisioner\'s PVs are managed as it managed them: a Released one cleaned and offered again, one of an earlier Node left, a gone node\'s deleted; the only refusal is a handled probe; nothing exits', async () => {
      const dir = makeTempDir('lvp-e2e-chart-');
      for (const v of ['bound', 'available', 'released', 'earlier']) makeMountPoint(path.join(dir, v));
      cluster = await Cluster.start([
        ...renderStaticProvisionerChart({ release: RELEASE, namespace: 'default', classes: [{ name: CLASS, hostDir: dir, volumeMode: 'Filesystem', fsType: 'ext4', blockCleanerCommand: ['/scripts/shred.sh', '2'] }] }),
        ...renderNodeCleanupExample(),
      ]);
      const c = cluster;
      const ourName = `local-volume-provisioner-${NODE_NAME}-${c.get<V1Node>('Node', NODE_NAME)!.metadata!.uid}`;
      const mine = (entry: string) => c.create<V1PersistentVolume>(goPv({ entry, dir, className: CLASS, provisionedBy: ourName }));
      const bound = await mine('bound');
      const available = await mine('available');
      const released = await mine('released');
      // Made for an earlier Node of this name (another UID): the Go provisioner no longer recognises it.
      const earlier = await c.create<V1PersistentVolume>(goPv({
        entry: 'earlier', dir, className: CLASS, provisionedBy: `local-volume-provisioner-${NODE_NAME}-0b7c2f6e-8d1a-4c3b-9e5f-a1b2c3d4e5f6`,
      }));
      const goneName = 'local-volume-provisioner-worker-gone-5f0e1d2c-3b4a-4968-8776-655443322110';
      const goneAvailable = await c.create<V1PersistentVolume>(goPv({ entry: 'a', dir: '/mnt/disks', className: CLASS, provisionedBy: goneName, node: 'worker-gone' }));
      const goneReleased = await c.create<V1PersistentVolume>(goPv({ entry: 'b', dir: '/mnt/disks', className: CLASS, provisionedBy: goneName, node: 'worker-gone' }));
      const claim = await inUse(bound.metadata!.name!);
      fs.writeFileSync(path.join(dir, 'bound', 'data.txt'), 'a tenant\'s data');
      fs.writeFileSync(path.join(dir, 'released', 'data.txt'), 'a former tenant\'s data');
      for (const pv of [released, goneReleased]) await c.deleteClaim(await inUse(pv.metadata!.name!));
      await c.until(() => [released, goneReleased].every((pv) => c.pv(pv.metadata!.name!)?.status?.phase === 'Released'), 'the released PVs are Released');

      agent = c.startAgent(RELEASE);
      const nodeCleanup = c.startAgent(NODE_CLEANUP, 'Deployment');
      await Promise.all([agent.waitReady(), nodeCleanup.waitReady()]);

      // The Released volume: cleaned, its PV deleted and made again for it (a new UID, same name).
      const reoffered = await c.waitForPv(released.metadata!.name!, { phase: 'Available', notUid: released.metadata!.uid });
      expect(fs.readdirSync(path.join(dir, 'released'))).toEqual([]);
      expect(reoffered.metadata!.annotations!['pv.kubernetes.io/provisioned-by']).toBe(ourName);
      // The gone node's PVs of the listed class: deleted by node-cleanup.
      await c.until(() => !c.pv(goneAvailable.metadata!.name!) && !c.pv(goneReleased.metadata!.name!), 'node-cleanup deleted the gone node\'s PVs');
      // In use and Available: untouched, the data kept; the earlier Node's PV too, and no second PV for its path.
      for (const pv of [bound, available, earlier]) expect(c.pv(pv.metadata!.name!)?.metadata!.uid).toBe(pv.metadata!.uid);
      expect(c.pv(earlier.metadata!.name!)!.metadata!.annotations).toEqual(earlier.metadata!.annotations);
      expect(fs.readFileSync(path.join(dir, 'bound', 'data.txt'), 'utf8')).toBe('a tenant\'s data');
      expect(pvs()).toHaveLength(4);

      // The tenant leaves: cleaned and offered again, as the Go provisioner does.
      await c.deleteClaim(claim);
      await c.waitForPv(bound.metadata!.name!, { phase: 'Available', notUid: bound.metadata!.uid });
      expect(fs.readdirSync(path.join(dir, 'bound'))).toEqual([]);
      expect(pvs()).toHaveLength(4);

      // Upstream's dashboards read the same: two in-process cleanups, PV creates and deletes only in its API series.
      const metrics = (await agent.get('/metrics')).body;
      expect(promtoolCheckMetrics(metrics).output).toBe('');
      expect(samplesOf(metrics, 'local_volume_provisioner_proctable_succeeded')[0].value).toBe(2);
      expect(samplesOf(metrics, 'local_volume_provisioner_persistentvolume_delete_total', { mode: 'Filesystem', type: 'process' })[0].value).toBe(2);
      expect(samplesOf(metrics, 'local_volume_provisioner_persistentvolume_delete_duration_seconds_count', { cleanup_command: '/scripts/shred.sh' })[0].value).toBe(2);
      expect(samplesOf(metrics, 'local_volume_provisioner_apiserver_requests_total').map((x) => x.labels.method).sort()).toEqual(['create', 'delete']);

      // Said once, as an Event on the Node and a log line: what it does without patch, and the rule to add.
      const rule = '{apiGroups: [""], resources: ["persistentvolumes"], verbs: ["patch"]}';
      const permission = c.events('PermissionMissing');
      expect(permission).toEqual([expect.objectContaining({ type: 'Warning', count: 1, involvedObject: expect.objectContaining({ kind: 'Node', name: NODE_NAME }) })]);
      expect(permission[0].message).toContain(rule);
      expect(permission[0].message).toContain('watching every PV in the cluster');
      expect(agent.lines.map(parseJson).filter((r) => r?.level === 'warn' && String(r.msg).includes(rule))).toHaveLength(1);
      // The only request refused: the agent's watch of its Node, which it replaces by reading it now and then.
      const agentUser = `system:serviceaccount:default:${RELEASE}`;
      // (Asked again on a backoff, then once a minute: a 403 may be an apiserver that has just started.)
      expect(new Set(cluster.denials.map((d) => JSON.stringify(d)))).toEqual(new Set([JSON.stringify({ user: agentUser, verb: 'watch', apiGroup: '', resource: 'nodes', name: NODE_NAME })]));
      expect(agent.lines.map(parseJson).filter((r) => String(r?.msg).startsWith(`list/watch forbidden (403); re-reading Node "${NODE_NAME}" at most once a minute`)))
        .toHaveLength(1);
      expect([agent.errors(), nodeCleanup.errors()]).toEqual([[], []]);
      expect([agent.running, nodeCleanup.running]).toEqual([true, true]);
      expect(await agent.stop()).toBe(0);
      expect(await nodeCleanup.stop()).toBe(0);
    });
  });
  describe('only the image changed: the device provisioner\'s DaemonSet, with its args, env and RBAC (no events, no leases)', () => {
    const SPEC = 'pv-spec-cm-block';

    test('its PVs are managed as it managed them: adopted, a blank device offered, a Released one wiped and offered again; every refusal is handled; nothing exits', async () => {
      const deviceDir = makeTempDir('lvp-e2e-e2etest-');
      const used = createLoopDevice(16 * MiB);
      const blank = createLoopDevice(16 * MiB);
      fs.symlinkSync(used.device, path.join(deviceDir, 'loop0'));
      fs.symlinkSync(blank.device, path.join(deviceDir, 'loop1'));
      cluster = await Cluster.start(renderDeviceProvisioner({
        deviceDir,
        storageClasses: ['local-storage-block'],
        specs: { [SPEC]: { storageClassName: 'local-storage-block', volumeMode: 'Block', deviceDir, deviceNameFilter: 'loop[01]' } },
      }), { 'local-pv-provisioner.cybozu.io/pv-spec-configmap': SPEC });
      const c = cluster;
      const node = c.get<V1Node>('Node', NODE_NAME)!;
      // loop0's PV as the device provisioner wrote it, bound and then released by its claim.
      const old = await c.create<V1PersistentVolume>(devicePv({
        nodeUid: node.metadata!.uid!, deviceDir, baseName: 'loop0', storageClassName: 'local-storage-block', deviceNameFilter: 'loop[01]',
      }));
      const name = old.metadata!.name!;
      const claim = await inUse(name);
      mkfsExt4(used.device);

      agent = c.startAgent(DEVICE_PROVISIONER);
      await agent.waitReady();
      // The blank device offered; the used one adopted under its name, its data kept while bound.
      await c.waitForPv(`local-${NODE_NAME}-loop1`, { phase: 'Available' });
      await c.until(() => c.pv(name)?.metadata!.labels?.[NODE_LABEL] === NODE_NAME, 'the PV carries the node label');
      expect(c.pv(name)!.metadata!.uid).toBe(old.metadata!.uid);
      expect(() => execFileSync('blkid', ['-p', used.device], { stdio: 'pipe' })).not.toThrow();

      // Released: wiped and offered again, as its spec says.
      await c.deleteClaim(claim);
      await c.waitForPv(name, { phase: 'Available', notUid: old.metadata!.uid });
      expect(() => execFileSync('blkid', ['-p', used.device], { stdio: 'pipe' })).toThrow();
      expect(pvs().map((pv) => pv.metadata!.name).sort()).toEqual([name, `local-${NODE_NAME}-loop1`]);

      // Its RBAC grants no events: the first refusal is said once, and no more are sent.
      const user = `system:serviceaccount:${DEVICE_PROVISIONER_NAMESPACE}:${DEVICE_PROVISIONER}`;
      const refused = () => c.denials.filter((d) => d.user === user);
      const said = () => agent!.lines.map(parseJson).filter((r) => r?.level === 'warn' && String(r.msg).includes('may not write Events'));
      await c.until(() => said().length > 0, 'the agent says it may not write Events');
      expect(refused()).toEqual([expect.objectContaining({ verb: 'create', resource: 'events' })]);
      expect(said()).toHaveLength(1);
      expect(agent.errors()).toEqual([]);
      expect(agent.running).toBe(true);
      expect(await agent.stop()).toBe(0);
    });
  });
});
