import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { ClassConfig, DeviceSpecConfig } from '../../../src/config';
import {
  decideRelease,
  recheckBeforeCleaning,
  type ConfiguredVolumes,
  type NodeIdentity,
} from '../../../src/runtime/cleanup/release-decision';

const me: NodeIdentity = { nodeName: 'worker-1', provisionerName: 'local-volume-provisioner-worker-1-uid1' };

const fastDisks: ClassConfig = {
  hostDir: '/mnt/disks',
  mountDir: '/mnt/fast-disks',
  blockCleanerCommand: ['/scripts/shred.sh', '2'],
  volumeMode: 'Filesystem',
  accessMode: 'ReadWriteOnce',
  fsType: '',
  namePattern: '*',
  selector: [],
};
const directory: ConfiguredVolumes = { dialect: 'directory', storageClassMap: { 'fast-disks': fastDisks } };

const spec: DeviceSpecConfig = {
  storageClassName: 'local-storage',
  volumeMode: 'Block',
  fsType: '',
  deviceDir: '/dev/disk/by-path',
  deviceNameFilter: '.*',
  reclaimPolicy: 'Delete',
  wipeDevicesHoldingData: false,
};
const devices: ConfiguredVolumes = { dialect: 'device', spec };

function pv(overrides: {
  name?: string;
  uid?: string;
  phase?: string;
  policy?: string;
  path?: string;
  storageClass?: string;
  provisionedBy?: string | null;
  labels?: Record<string, string>;
  deleting?: boolean;
} = {}): V1PersistentVolume {
  const annotations: Record<string, string> = {};
  if (overrides.provisionedBy !== null) annotations['pv.kubernetes.io/provisioned-by'] = overrides.provisionedBy ?? me.provisionerName;
  return {
    metadata: {
      name: overrides.name ?? 'local-pv-1a2b3c4d',
      uid: overrides.uid ?? 'uid-1',
      annotations,
      labels: overrides.labels ?? { 'local.storage.k8s.io/node': 'worker-1' },
      ...(overrides.deleting ? { deletionTimestamp: new Date() } : {}),
    },
    spec: {
      capacity: { storage: '10Gi' },
      storageClassName: overrides.storageClass ?? 'fast-disks',
      persistentVolumeReclaimPolicy: overrides.policy ?? 'Delete',
      local: { path: overrides.path ?? '/mnt/disks/vol1' },
    },
    status: { phase: overrides.phase ?? 'Released' },
  };
}

describe('the release decision (directory dialect)', () => {
  test('a Released PV of ours with policy Delete is cleaned at its path mapped into mountDir', () => {
    const d = decideRelease(pv(), me, directory);
    expect(d.action).toBe('clean');
    if (d.action !== 'clean') return;
    expect(d.target).toMatchObject({
      pvName: 'local-pv-1a2b3c4d',
      pvUid: 'uid-1',
      hostPath: '/mnt/disks/vol1',
      path: '/mnt/fast-disks/vol1',
      classDir: '/mnt/fast-disks',
      hostDir: '/mnt/disks',
      volumeMode: 'Filesystem',
      method: { kind: 'class', className: 'fast-disks', blockCleanerCommand: ['/scripts/shred.sh', '2'] },
    });
  });

  test.each(['Pending', 'Available', 'Bound', 'Failed'])('a %s PV is skipped', (phase) => {
    expect(decideRelease(pv({ phase }), me, directory).action).toBe('skip');
  });

  test('a PV being deleted is skipped', () => {
    expect(decideRelease(pv({ deleting: true }), me, directory).action).toBe('skip');
  });

  test('policy Retain keeps the data', () => {
    expect(decideRelease(pv({ policy: 'Retain' }), me, directory).action).toBe('retain');
  });

  test('policy Recycle gets a warning and keeps the data', () => {
    const d = decideRelease(pv({ policy: 'Recycle' }), me, directory);
    expect(d).toEqual({ action: 'warn', reason: expect.stringContaining('Recycle') });
  });

  test('an unknown policy gets a warning and keeps the data', () => {
    const d = decideRelease(pv({ policy: 'Shred' }), me, directory);
    expect(d).toEqual({ action: 'warn', reason: expect.stringContaining('"Shred"') });
  });

  test('a PV provisioned by another provisioner is not ours', () => {
    expect(decideRelease(pv({ provisionedBy: 'local-volume-provisioner-worker-2-uid2' }), me, directory).action).toBe('not-ours');
  });

  test('a PV without provisioned-by is not ours', () => {
    expect(decideRelease(pv({ provisionedBy: null }), me, directory).action).toBe('not-ours');
  });

  test('a PV whose node label names another node is not ours, whatever its annotation says', () => {
    expect(decideRelease(pv({ labels: { 'local.storage.k8s.io/node': 'worker-2' } }), me, directory).action).toBe('not-ours');
  });

  test('a PV of ours whose path lies outside the class hostDir is not cleaned', () => {
    const d = decideRelease(pv({ path: '/var/lib/important' }), me, directory);
    expect(d).toEqual({ action: 'not-ours', reason: expect.stringContaining('not inside the configured directory "/mnt/disks"') });
  });

  test('a path climbing out of hostDir with ".." is not cleaned', () => {
    expect(decideRelease(pv({ path: '/mnt/disks/../../etc' }), me, directory).action).toBe('not-ours');
  });

  test('the class directory itself is not a volume', () => {
    expect(decideRelease(pv({ path: '/mnt/disks' }), me, directory).action).toBe('not-ours');
  });

  test('a path below a first-level entry is not a volume discovery would make', () => {
    expect(decideRelease(pv({ path: '/mnt/disks/vol1/data' }), me, directory).action).toBe('not-ours');
  });

  test('a PV of a StorageClass not configured here is not ours', () => {
    expect(decideRelease(pv({ storageClass: 'slow-disks' }), me, directory).action).toBe('not-ours');
  });

  test('a PV of another StorageClass whose path lies under this class is not cleaned by this class', () => {
    const twoClasses: ConfiguredVolumes = {
      dialect: 'directory',
      storageClassMap: { 'fast-disks': fastDisks, 'other': { ...fastDisks, hostDir: '/mnt/other', mountDir: '/mnt/other' } },
    };
    expect(decideRelease(pv({ storageClass: 'other' }), me, twoClasses).action).toBe('not-ours');
  });

  test('a Released PV of another provisioner with Recycle is not ours (no warning about others\' PVs)', () => {
    expect(decideRelease(pv({ provisionedBy: 'someone-else', policy: 'Recycle' }), me, directory).action).toBe('not-ours');
  });
});

describe('the release decision (device dialect)', () => {
  const devicePv = (o: Parameters<typeof pv>[0] = {}): V1PersistentVolume =>
    pv({ path: '/dev/disk/by-path/pci-0000:00:1f.2-ata-1', storageClass: 'local-storage', ...o });

  test('a Released PV of ours under deviceDir is wiped', () => {
    const d = decideRelease(devicePv(), me, devices);
    expect(d.action).toBe('clean');
    if (d.action !== 'clean') return;
    expect(d.target).toMatchObject({ path: '/dev/disk/by-path/pci-0000:00:1f.2-ata-1', classDir: '/dev/disk/by-path', method: { kind: 'device-wipe' } });
  });

  test('a PV made by the device-selecting provisioner is known by its node label', () => {
    const d = decideRelease(devicePv({ provisionedBy: null, labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-1' } }), me, devices);
    expect(d.action).toBe('clean');
  });

  test('a PV labelled for another node is not ours', () => {
    const d = decideRelease(devicePv({ provisionedBy: null, labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-2' } }), me, devices);
    expect(d.action).toBe('not-ours');
  });

  test('a PV without our annotation or any node label is not ours', () => {
    expect(decideRelease(devicePv({ provisionedBy: null, labels: {} }), me, devices).action).toBe('not-ours');
  });

  test('a device outside deviceDir is not wiped', () => {
    expect(decideRelease(devicePv({ path: '/dev/sda' }), me, devices).action).toBe('not-ours');
  });

  test('an explicit Retain on a PV we made is respected', () => {
    expect(decideRelease(devicePv({ policy: 'Retain' }), me, devices).action).toBe('retain');
  });

  test('the Retain the device-selecting provisioner wrote on all its PVs follows the node spec (Delete: wiped, as its users rely on)', () => {
    const upstreamPv = devicePv({ provisionedBy: null, policy: 'Retain', labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-1' } });
    expect(decideRelease(upstreamPv, me, devices).action).toBe('clean');
  });

  test('the node spec saying Retain keeps PVs of the device-selecting provisioner', () => {
    const upstreamPv = devicePv({ provisionedBy: null, policy: 'Retain', labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-1' } });
    const retaining: ConfiguredVolumes = { dialect: 'device', spec: { ...spec, reclaimPolicy: 'Retain' } };
    expect(decideRelease(upstreamPv, me, retaining).action).toBe('retain');
  });
});

describe('the re-check right before cleaning', () => {
  const target = (() => {
    const d = decideRelease(pv(), me, directory);
    if (d.action !== 'clean') throw new Error('fixture');
    return d.target;
  })();

  test('passes for the same PV, still Released and ours', () => {
    expect(recheckBeforeCleaning(pv(), target, me, directory)).toEqual({ ok: true });
  });

  test('stops when the PV is gone', () => {
    expect(recheckBeforeCleaning(undefined, target, me, directory)).toEqual({ ok: false, reason: expect.stringContaining('no longer exists') });
  });

  test('stops when a new PV of the same name has another UID', () => {
    expect(recheckBeforeCleaning(pv({ uid: 'uid-2' }), target, me, directory)).toEqual({ ok: false, reason: expect.stringContaining('replaced') });
  });

  test('stops when the PV is no longer Released', () => {
    expect(recheckBeforeCleaning(pv({ phase: 'Bound' }), target, me, directory).ok).toBe(false);
  });

  test('stops when the PV is being deleted', () => {
    expect(recheckBeforeCleaning(pv({ deleting: true }), target, me, directory).ok).toBe(false);
  });

  test('stops when the reclaim policy was changed to Retain', () => {
    expect(recheckBeforeCleaning(pv({ policy: 'Retain' }), target, me, directory).ok).toBe(false);
  });

  test('stops when the PV is no longer ours', () => {
    expect(recheckBeforeCleaning(pv({ provisionedBy: 'someone-else' }), target, me, directory).ok).toBe(false);
  });

  test('stops when the PV now points at another path', () => {
    expect(recheckBeforeCleaning(pv({ path: '/mnt/disks/vol2' }), target, me, directory)).toEqual({ ok: false, reason: expect.stringContaining('now points at') });
  });
});
