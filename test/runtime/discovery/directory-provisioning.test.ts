/**
 * Upstream's discovery checklist, end to end without an API server: real mount
 * points and loop devices are discovered, planned against the node's existing
 * PVs, and built into the PV objects the controller would create.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { ClassConfig, ProvisionerConfig } from '../../../src/config';
import { directoryCandidates, discoverClassVolumes, planProvisioning, readMountTable, type RunningCleanups } from '../../../src/runtime/discovery';
import { buildDirectoryPV, directoryPVName, type NodeInfo } from '../../../src/runtime/pv';
import { classConfigOf } from '../../support/class-config';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir } from '../../support/privileged';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const node: NodeInfo = { name: 'node1', uid: 'b7a2-uid', labels: { 'kubernetes.io/hostname': 'node1.example', 'topology.kubernetes.io/zone': 'z1' } };

const config: Pick<ProvisionerConfig, 'nodeLabelsForPV' | 'labelsForPV' | 'useNodeNameOnly' | 'setPVOwnerRef'> = {
  nodeLabelsForPV: ['topology.kubernetes.io/zone', 'node.kubernetes.io/instance-type'],
  labelsForPV: { team: 'storage' },
  useNodeNameOnly: false,
  setPVOwnerRef: false,
};

const classConfig = (mountDir: string, overrides: Partial<ClassConfig> = {}) => classConfigOf('/mnt/disks', mountDir, overrides);

/** One discovery pass for one class: what the controller would create. */
async function pass(
  cls: ClassConfig,
  existing: V1PersistentVolume[] = [],
  options: { running?: RunningCleanups; setPVOwnerRef?: boolean; mountOptions?: string[] } = {},
) {
  const discovery = await discoverClassVolumes('local-storage', cls, await readMountTable());
  const plan = planProvisioning(directoryCandidates(discovery.volumes, node.name), existing, options.running);
  const pvs = plan.create.map((volume) =>
    buildDirectoryPV({
      volume,
      identity: volume.identity,
      classConfig: cls,
      config: { ...config, setPVOwnerRef: options.setPVOwnerRef ?? false },
      node,
      storageClass: { reclaimPolicy: 'Delete', mountOptions: options.mountOptions ?? [] },
    }),
  );
  return { discovery, plan, pvs };
}

describePrivileged('directory dialect: discovery to PV objects', () => {
  afterAll(cleanupPrivileged);

  test('basic: a PV per mount point, every field as upstream writes it', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    const { pvs } = await pass(classConfig(mountDir), [], { mountOptions: ['noatime'] });
    expect(pvs).toHaveLength(1);
    const pv = pvs[0];
    expect(pv.metadata?.name).toBe(directoryPVName('vol1', 'node1', 'local-storage'));
    expect(pv.spec?.local?.path).toBe('/mnt/disks/vol1');
    expect(pv.spec?.storageClassName).toBe('local-storage');
    expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).toBe('local-volume-provisioner-node1-b7a2-uid');
    expect(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms).toEqual([
      { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node1.example'] }] },
    ]);
    // instance-type is configured but the Node lacks it: skipped; labelsForPV merged.
    expect(pv.metadata?.labels).toEqual({ 'topology.kubernetes.io/zone': 'z1', 'team': 'storage', 'local.storage.k8s.io/node': 'node1' });
    expect(pv.spec?.volumeMode).toBe('Filesystem');
    expect(pv.spec?.mountOptions).toEqual(['noatime']);
    expect(pv.spec?.capacity?.storage).toMatch(/^\d+(Mi|Gi)?$/);
    expect(pv.metadata?.ownerReferences).toBeUndefined();
  });

  test('basic with owner reference: the PV is owned by the Node', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    const { pvs } = await pass(classConfig(mountDir), [], { setPVOwnerRef: true });
    expect(pvs[0].metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'node1', uid: 'b7a2-uid' }]);
  });

  test('the same pass twice creates nothing new', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    makeMountPoint(path.join(mountDir, 'vol2'));
    const first = await pass(classConfig(mountDir));
    const second = await pass(classConfig(mountDir), first.pvs);
    expect(first.pvs).toHaveLength(2);
    expect(second.pvs).toEqual([]);
    expect(second.plan.skip.map((s) => s.code)).toEqual(['pv-exists', 'pv-exists']);
  });

  test('a volume appearing later gets its PV on the next pass', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    const first = await pass(classConfig(mountDir));
    makeMountPoint(path.join(mountDir, 'vol2'));
    const second = await pass(classConfig(mountDir), first.pvs);
    expect(second.pvs.map((pv) => pv.spec?.local?.path)).toEqual(['/mnt/disks/vol2']);
  });

  test('a path already used by another PV is skipped', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    const other: V1PersistentVolume = { metadata: { name: 'local-pv-of-old-class' }, spec: { local: { path: '/mnt/disks/vol1' } } };
    const { pvs, plan } = await pass(classConfig(mountDir), [other]);
    expect(pvs).toEqual([]);
    expect(plan.skip[0]).toMatchObject({ code: 'path-in-use' });
  });

  test('a volume whose cleanup is running is skipped', async () => {
    const mountDir = makeTempDir();
    makeMountPoint(path.join(mountDir, 'vol1'));
    const running = { pvNames: new Set([directoryPVName('vol1', 'node1', 'local-storage')]), paths: new Set<string>() };
    const { pvs, plan } = await pass(classConfig(mountDir), [], { running });
    expect(pvs).toEqual([]);
    expect(plan.skip[0].code).toBe('cleanup-running');
  });

  test('a directory in a Block class is skipped while the block entries of the class get PVs', async () => {
    const mountDir = makeTempDir();
    const loop = createLoopDevice(20 * MiB);
    fs.symlinkSync(loop.device, path.join(mountDir, 'disk1'));
    makeMountPoint(path.join(mountDir, 'dir1'));
    const { pvs, discovery } = await pass(classConfig(mountDir, { volumeMode: 'Block' }));
    expect(pvs.map((pv) => [pv.spec?.local?.path, pv.spec?.volumeMode, pv.spec?.capacity?.storage])).toEqual([['/mnt/disks/disk1', 'Block', '20Mi']]);
    expect(discovery.rejections.map((r) => r.entryName)).toEqual(['dir1']);
  });

  test('a directory that is not a mount point is skipped with upstream\'s message', async () => {
    const mountDir = makeTempDir();
    fs.mkdirSync(path.join(mountDir, 'plain'));
    const { pvs, discovery } = await pass(classConfig(mountDir));
    expect(pvs).toEqual([]);
    expect(discovery.rejections[0].reason).toBe(`path "${path.join(mountDir, 'plain')}" is not a valid mount point`);
  });

  test.each([
    ['13 GiB - 512 B', '12Gi', 13 * GiB - 512],
    ['10000 MiB - 512 B', '9999Mi', 10000 * MiB - 512],
    ['10 GiB', '10Gi', 10 * GiB],
    ['9 MiB + 512 B (under 10 MiB: exact bytes)', String(9 * MiB + 512), 9 * MiB + 512],
  ])('a sparse loop device of %s gets capacity %s', async (_name, expected, size) => {
    const mountDir = makeTempDir();
    fs.symlinkSync(createLoopDevice(size).device, path.join(mountDir, 'disk'));
    const { pvs } = await pass(classConfig(mountDir, { volumeMode: 'Block' }));
    expect(pvs[0].spec?.capacity).toEqual({ storage: expected });
  });
});
