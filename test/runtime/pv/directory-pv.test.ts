import type { ClassConfig } from '../../../src/config';
import { buildDirectoryPV, directoryPVLabels, directoryPVName, type DirectoryPVInput } from '../../../src/runtime/pv';
import { classConfigOf } from '../../support/class-config';

const GiB = 1024 ** 3;

const classConfig: ClassConfig = classConfigOf('/mnt/disks', '/mnt/disks');

function input(overrides: Partial<DirectoryPVInput> = {}): DirectoryPVInput {
  return {
    volume: { className: 'local-storage', entryName: 'vol1', hostPath: '/mnt/disks/vol1', volumeMode: 'Filesystem', capacityBytes: 10 * GiB + 5 },
    identity: 'fs:/@wwid:naa.5000c500a0b1c2d3',
    classConfig,
    config: { nodeLabelsForPV: [], labelsForPV: {}, useNodeNameOnly: false, setPVOwnerRef: false },
    node: { name: 'node1', uid: 'uid-1', labels: { 'kubernetes.io/hostname': 'node1-host' } },
    storageClass: { reclaimPolicy: 'Delete', mountOptions: [] },
    ...overrides,
  };
}

describe('buildDirectoryPV', () => {
  test('carries no finalizer: a PV is held only once it is bound (pv-stewardship.ts)', () => {
    expect(buildDirectoryPV(input()).metadata?.finalizers).toBeUndefined();
  });

  test('names the PV as the Go provisioner does', () => {
    expect(buildDirectoryPV(input()).metadata?.name).toBe(directoryPVName('vol1', 'node1', 'local-storage'));
  });

  test('puts the host path, class, volume mode and access mode in the spec', () => {
    const spec = buildDirectoryPV(input()).spec!;
    expect(spec.local).toEqual({ path: '/mnt/disks/vol1' });
    expect(spec.storageClassName).toBe('local-storage');
    expect(spec.volumeMode).toBe('Filesystem');
    expect(spec.accessModes).toEqual(['ReadWriteOnce']);
  });

  test('writes the capacity rounded down as a binary Quantity', () => {
    expect(buildDirectoryPV(input()).spec?.capacity).toEqual({ storage: '10Gi' });
  });

  test('annotates the provisioner name with node name and UID, and the identity of the volume', () => {
    expect(buildDirectoryPV(input()).metadata?.annotations).toEqual({
      'local.storage.k8s.io/volume-identity': 'fs:/@wwid:naa.5000c500a0b1c2d3',
      'pv.kubernetes.io/provisioned-by': 'local-volume-provisioner-node1-uid-1',
    });
  });

  test('annotates the provisioner name with the node name only when useNodeNameOnly is set', () => {
    const pv = buildDirectoryPV(input({ config: { ...input().config, useNodeNameOnly: true } }));
    expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).toBe('local-volume-provisioner-node1');
  });

  test('has exactly one hostname affinity term, with the Node\'s hostname label', () => {
    expect(buildDirectoryPV(input()).spec?.nodeAffinity).toEqual({
      required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node1-host'] }] }] },
    });
  });

  test('falls back to the node name when the Node has no hostname label', () => {
    const pv = buildDirectoryPV(input({ node: { name: 'node1', uid: 'uid-1', labels: {} } }));
    expect(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values).toEqual(['node1']);
  });

  test('ORs the class selector terms after the hostname term', () => {
    const selector = [{ matchExpressions: [{ key: 'rack', operator: 'In' as const, values: ['r1', 'r2'] }] }];
    const terms = buildDirectoryPV(input({ classConfig: { ...classConfig, selector } })).spec?.nodeAffinity?.required?.nodeSelectorTerms;
    expect(terms).toHaveLength(2);
    expect(terms?.[1]).toEqual(selector[0]);
  });

  test('copies the configured node labels the Node has, skips one it lacks, and merges labelsForPV over them', () => {
    const pv = buildDirectoryPV(
      input({
        config: {
          nodeLabelsForPV: ['topology.kubernetes.io/zone', 'missing/label', 'tier'],
          labelsForPV: { tier: 'gold', team: 'storage' },
          useNodeNameOnly: false,
          setPVOwnerRef: false,
        },
        node: { name: 'node1', uid: 'uid-1', labels: { 'topology.kubernetes.io/zone': 'z1', 'tier': 'bronze' } },
      }),
    );
    expect(pv.metadata?.labels).toEqual({
      'topology.kubernetes.io/zone': 'z1',
      'tier': 'gold',
      'team': 'storage',
      'local.storage.k8s.io/node': 'node1',
    });
  });

  test('our node label wins over labelsForPV, since the node PV watch relies on it', () => {
    const labels = directoryPVLabels({ nodeLabelsForPV: [], labelsForPV: { 'local.storage.k8s.io/node': 'other' } }, { name: 'node1', uid: 'u', labels: {} });
    expect(labels['local.storage.k8s.io/node']).toBe('node1');
  });

  test('takes reclaim policy and mount options from the StorageClass', () => {
    const pv = buildDirectoryPV(input({ storageClass: { reclaimPolicy: 'Retain', mountOptions: ['noatime', 'discard'] } }));
    expect(pv.spec?.persistentVolumeReclaimPolicy).toBe('Retain');
    expect(pv.spec?.mountOptions).toEqual(['noatime', 'discard']);
  });

  test('leaves mountOptions out when the StorageClass has none', () => {
    expect(buildDirectoryPV(input()).spec).not.toHaveProperty('mountOptions');
  });

  test('writes the class fsType when set', () => {
    const pv = buildDirectoryPV(input({ classConfig: { ...classConfig, fsType: 'xfs' } }));
    expect(pv.spec?.local).toEqual({ path: '/mnt/disks/vol1', fsType: 'xfs' });
  });

  test('writes a Block volume mode for a block class', () => {
    const pv = buildDirectoryPV(input({ volume: { ...input().volume, volumeMode: 'Block' } }));
    expect(pv.spec?.volumeMode).toBe('Block');
  });

  test('has no ownerReference unless setPVOwnerRef is set', () => {
    expect(buildDirectoryPV(input()).metadata).not.toHaveProperty('ownerReferences');
  });

  test('references the Node as owner when setPVOwnerRef is set', () => {
    const pv = buildDirectoryPV(input({ config: { ...input().config, setPVOwnerRef: true } }));
    expect(pv.metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Node', name: 'node1', uid: 'uid-1' }]);
  });

  test('refuses to name the provisioner without a node UID', () => {
    expect(() => buildDirectoryPV(input({ node: { name: 'node1', uid: '', labels: {} } }))).toThrow(/node "node1" has no UID/);
  });
});
