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
import { V1PersistentVolume } from '@kubernetes/client-node';
import { Cluster, installImageScripts, NODE_NAME, synthesize } from './cluster';
import { referenceFnv1a32 } from '../runtime/pv/reference-fnv1a';
import { AgentProcess } from '../support/agent-process';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4 } from '../support/privileged';

const MiB = 1024 * 1024;
const NODE_LABEL = 'local.storage.k8s.io/node';

jest.setTimeout(60_000);

/** The Go provisioner's PV name: FNV-1a of entry + node + class, in lower-case hex. */
const goPvName = (entry: string, className: string) => `local-pv-${referenceFnv1a32(`${entry}${NODE_NAME}${className}`).toString(16)}`;

function hostnameAffinity() {
  return { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } };
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
  function inUse(pvName: string): string {
    return cluster!.bindClaim(pvName, `data-${pvName}`);
  }

  test('from the Helm chart: the Go provisioner\'s PVs are adopted under their names (each with a VolumeAdopted Event), no second PV is made, and a released one is recycled', async () => {
    const dir = makeTempDir('lvp-e2e-helm-');
    for (const v of ['vol1', 'vol2']) makeMountPoint(path.join(dir, v));
    cluster = await Cluster.start(synthesize({ storageClasses: [{ name: 'fast-disks', hostDir: dir }] }));
    const nodeUid = cluster.server.get('v1', 'Node', NODE_NAME).metadata.uid;
    const old = ['vol1', 'vol2'].map((v) => cluster!.server.create<V1PersistentVolume>({
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
    }));
    const claim = inUse(old[0].metadata!.name!);
    fs.writeFileSync(path.join(dir, 'vol1', 'data.txt'), 'written under the Go provisioner');

    agent = cluster.startAgent('local-volume-provisioner');
    await agent.waitReady();
    await cluster.until(() => pvs().every((p) => p.metadata!.labels?.[NODE_LABEL] === NODE_NAME), 'both PVs carry the node label');

    expect(pvs().map((p) => [p.metadata!.name, p.metadata!.uid]).sort()).toEqual(old.map((p) => [p.metadata!.name, p.metadata!.uid]).sort());
    expect(fs.readFileSync(path.join(dir, 'vol1', 'data.txt'), 'utf8')).toBe('written under the Go provisioner');

    cluster.deleteClaim(claim);
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
    const spec = { name: 'nvme-block', storageClassName: 'local-storage', volumeMode: 'Block' as const, deviceDir, deviceNameFilter: '^pci-.*-nvme-' };
    cluster = await Cluster.start(synthesize({ devices: { specs: [spec] } }), { 'local-pv-provisioner.cybozu.io/pv-spec-configmap': 'nvme-block' });
    const node = cluster.server.get('v1', 'Node', NODE_NAME);
    // As the device provisioner wrote it: its name rule, its labels and spec annotations, Retain, owned by the Node.
    const name = `local-${NODE_NAME}-${baseName}`.replace(/[^0-9A-Za-z.]+/g, '-').toLowerCase();
    const old = cluster.server.create<V1PersistentVolume>({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name,
        labels: { 'local-pv-provisioner.cybozu.io/node': NODE_NAME, 'local-pv-provisioner.cybozu.com/node': NODE_NAME },
        annotations: {
          'local-pv-provisioner.cybozu.io/storageClassName': spec.storageClassName,
          'local-pv-provisioner.cybozu.io/volumeMode': spec.volumeMode,
          'local-pv-provisioner.cybozu.io/fsType': '',
          'local-pv-provisioner.cybozu.io/deviceDir': deviceDir,
          'local-pv-provisioner.cybozu.io/deviceNameFilter': spec.deviceNameFilter,
        },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: NODE_NAME, uid: node.metadata.uid, controller: true }],
      },
      spec: {
        capacity: { storage: `${16 * MiB}` },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: spec.storageClassName,
        volumeMode: 'Block',
        local: { path: path.join(deviceDir, baseName) },
        nodeAffinity: hostnameAffinity(),
      },
    });
    const claim = inUse(name);
    mkfsExt4(loop.device);

    agent = cluster.startAgent('local-volume-provisioner-devices');
    await agent.waitReady();
    await cluster.until(() => cluster!.pv(name)?.metadata!.labels?.[NODE_LABEL] === NODE_NAME, 'the PV carries the node label');
    expect(pvs().map((p) => p.metadata!.uid)).toEqual([old.metadata!.uid]);
    // In use: not wiped.
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).not.toThrow();

    cluster.deleteClaim(claim);
    const recycled = await cluster.waitForPv(name, { phase: 'Available', notUid: old.metadata!.uid });
    expect(recycled.spec!.persistentVolumeReclaimPolicy).toBe('Delete');
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).toThrow();
    expect(pvs()).toHaveLength(1);
    expect(cluster.denials).toEqual([]);
  });
});
