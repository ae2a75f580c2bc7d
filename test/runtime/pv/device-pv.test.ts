import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { DeviceSpecConfig } from '../../../src/config';
import { buildDevicePV, deviceSpecDifferences, type DevicePVInput } from '../../../src/runtime/pv';

const spec: DeviceSpecConfig = {
  storageClassName: 'local-storage',
  volumeMode: 'Filesystem',
  fsType: 'ext4',
  deviceDir: '/dev/disk/by-path',
  deviceNameFilter: '.*',
  reclaimPolicy: 'Delete',
  wipeDevicesHoldingData: false,
  wipe: 'full',
};

function input(overrides: Partial<DevicePVInput> = {}): DevicePVInput {
  return {
    name: 'local-node1-pci-0000-3c-00.0',
    device: { path: '/dev/disk/by-path/pci-0000:3c:00.0', capacityBytes: 1024 ** 3 + 5 * 1024, identity: 'wwid:naa.5000c500a0b1c2d3' },
    spec,
    node: { name: 'node1', uid: 'uid-1', labels: { 'kubernetes.io/hostname': 'node1' } },
    ...overrides,
  };
}

describe('buildDevicePV', () => {
  test('labels the PV with upstream\'s two node labels and ours', () => {
    expect(buildDevicePV(input()).metadata?.labels).toEqual({
      'local-pv-provisioner.cybozu.io/node': 'node1',
      'local-pv-provisioner.cybozu.com/node': 'node1',
      'local.storage.k8s.io/node': 'node1',
    });
  });

  test('records the spec it was made with in upstream\'s annotations', () => {
    expect(buildDevicePV(input()).metadata?.annotations).toEqual({
      'local-pv-provisioner.cybozu.io/storageClassName': 'local-storage',
      'local-pv-provisioner.cybozu.io/volumeMode': 'Filesystem',
      'local-pv-provisioner.cybozu.io/fsType': 'ext4',
      'local-pv-provisioner.cybozu.io/deviceDir': '/dev/disk/by-path',
      'local-pv-provisioner.cybozu.io/deviceNameFilter': '.*',
      'local.storage.k8s.io/volume-identity': 'wwid:naa.5000c500a0b1c2d3',
    });
  });

  test('adds provisioned-by only when a provisioner name is given', () => {
    const pv = buildDevicePV(input({ provisionerName: 'local-volume-provisioner-node1-uid-1' }));
    expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).toBe('local-volume-provisioner-node1-uid-1');
  });

  test('is controlled by its Node, so the garbage collector removes it with the Node', () => {
    expect(buildDevicePV(input()).metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: 'node1', uid: 'uid-1', controller: true },
    ]);
  });

  test('has the exact device capacity, not rounded', () => {
    expect(buildDevicePV(input()).spec?.capacity).toEqual({ storage: '1048581Ki' });
  });

  test('uses the device path as walked as spec.local.path, with the fsType for Filesystem', () => {
    expect(buildDevicePV(input()).spec?.local).toEqual({ path: '/dev/disk/by-path/pci-0000:3c:00.0', fsType: 'ext4' });
  });

  test('writes no fsType for Block, neither in the spec nor as an annotation (as upstream)', () => {
    const pv = buildDevicePV(input({ spec: { ...spec, volumeMode: 'Block', fsType: '' } }));
    expect(pv.spec?.local).toEqual({ path: '/dev/disk/by-path/pci-0000:3c:00.0' });
    expect(pv.spec?.volumeMode).toBe('Block');
    expect(pv.metadata?.annotations).not.toHaveProperty('local-pv-provisioner.cybozu.io/fsType');
  });

  test('a Block PV made by upstream (no fsType annotation) follows a Block spec: no spec change is reported', () => {
    const blockSpec = { ...spec, volumeMode: 'Block' as const, fsType: '' as const };
    const upstreams = buildDevicePV(input({ spec: blockSpec }));
    expect(deviceSpecDifferences(upstreams, blockSpec)).toEqual([]);
  });

  test('takes class, access mode, reclaim policy and hostname affinity from the spec and node', () => {
    const pv = buildDevicePV(input({ spec: { ...spec, reclaimPolicy: 'Retain' } }));
    expect(pv.spec).toMatchObject({
      storageClassName: 'local-storage',
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node1'] }] }] } },
    });
  });
});

describe('deviceSpecDifferences', () => {
  test('is empty for a PV made with the same spec', () => {
    expect(deviceSpecDifferences(buildDevicePV(input()), spec)).toEqual([]);
  });

  test('names each spec key that changed since the PV was made', () => {
    const pv = buildDevicePV(input());
    expect(deviceSpecDifferences(pv, { ...spec, deviceNameFilter: 'sd[ab]', storageClassName: 'fast' })).toEqual([
      'storageClassName',
      'deviceNameFilter',
    ]);
  });

  test('a PV without annotations differs in every key', () => {
    const pv: V1PersistentVolume = { metadata: { name: 'x' } };
    expect(deviceSpecDifferences(pv, spec)).toHaveLength(5);
  });
});
