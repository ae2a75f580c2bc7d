import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { ClassConfig, DeviceSpecConfig } from '../../../src/config';
import {
  decideRelease,
  neverBound,
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
  wipe: 'full',
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
  finalizer?: boolean;
  identity?: string;
  claimUid?: string;
  boundByController?: boolean;
} = {}): V1PersistentVolume {
  const annotations: Record<string, string> = {};
  if (overrides.provisionedBy !== null) annotations['pv.kubernetes.io/provisioned-by'] = overrides.provisionedBy ?? me.provisionerName;
  if (overrides.identity) annotations['local.storage.k8s.io/volume-identity'] = overrides.identity;
  if (overrides.boundByController) annotations['pv.kubernetes.io/bound-by-controller'] = 'yes';
  return {
    metadata: {
      name: overrides.name ?? 'local-pv-1a2b3c4d',
      uid: overrides.uid ?? 'uid-1',
      annotations,
      labels: overrides.labels ?? { 'local.storage.k8s.io/node': 'worker-1' },
      ...(overrides.deleting ? { deletionTimestamp: new Date() } : {}),
      ...(overrides.finalizer ? { finalizers: ['kubernetes.io/pv-protection', 'local.storage.k8s.io/cleanup'] } : {}),
    },
    spec: {
      capacity: { storage: '10Gi' },
      ...(overrides.claimUid ? { claimRef: { namespace: 'default', name: 'data', uid: overrides.claimUid } } : {}),
      storageClassName: overrides.storageClass ?? 'fast-disks',
      persistentVolumeReclaimPolicy: overrides.policy ?? 'Delete',
      local: { path: overrides.path ?? '/mnt/disks/vol1' },
    },
    status: { phase: overrides.phase ?? 'Released' },
  };
}

describe('the release decision (directory dialect)', () => {
  test('a Released PV of ours with policy Delete is cleaned at its path mapped into mountDir', () => {
    const d = decideRelease(pv(), me, directory, 'legacy');
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
    expect(decideRelease(pv({ phase }), me, directory, 'legacy').action).toBe('skip');
  });

  test('a PV being deleted is skipped', () => {
    expect(decideRelease(pv({ deleting: true }), me, directory, 'legacy').action).toBe('skip');
  });

  test('policy Retain keeps the data', () => {
    expect(decideRelease(pv({ policy: 'Retain' }), me, directory, 'legacy').action).toBe('retain');
  });

  test('policy Recycle gets a warning and keeps the data', () => {
    const d = decideRelease(pv({ policy: 'Recycle' }), me, directory, 'legacy');
    expect(d).toEqual({ action: 'warn', policy: 'unsupported', reason: expect.stringContaining('Recycle') });
  });

  test('an unknown policy gets a warning and keeps the data', () => {
    const d = decideRelease(pv({ policy: 'Shred' }), me, directory, 'legacy');
    expect(d).toEqual({ action: 'warn', policy: 'unknown', reason: expect.stringContaining('"Shred"') });
  });

  test('a PV provisioned by another provisioner is not ours', () => {
    expect(decideRelease(pv({ provisionedBy: 'local-volume-provisioner-worker-2-uid2' }), me, directory, 'legacy').action).toBe('not-ours');
  });

  test('a PV without provisioned-by is not ours', () => {
    expect(decideRelease(pv({ provisionedBy: null }), me, directory, 'legacy').action).toBe('not-ours');
  });

  test('a PV whose node label names another node is not ours, whatever its annotation says', () => {
    expect(decideRelease(pv({ labels: { 'local.storage.k8s.io/node': 'worker-2' } }), me, directory, 'legacy').action).toBe('not-ours');
  });

  test('a PV of ours whose path lies outside the class hostDir is held, not cleaned', () => {
    const d = decideRelease(pv({ path: '/var/lib/important' }), me, directory, 'legacy');
    expect(d).toEqual({ action: 'hold', reason: expect.stringContaining('not inside the configured directory "/mnt/disks"') });
  });

  test('a path climbing out of hostDir with ".." is not cleaned', () => {
    expect(decideRelease(pv({ path: '/mnt/disks/../../etc' }), me, directory, 'legacy').action).toBe('hold');
  });

  test('the class directory itself is not a volume', () => {
    expect(decideRelease(pv({ path: '/mnt/disks' }), me, directory, 'legacy').action).toBe('hold');
  });

  test('a path below a first-level entry is not a volume discovery would make', () => {
    expect(decideRelease(pv({ path: '/mnt/disks/vol1/data' }), me, directory, 'legacy').action).toBe('hold');
  });

  test('a PV of ours of a StorageClass not configured here is held until it is', () => {
    expect(decideRelease(pv({ storageClass: 'slow-disks' }), me, directory, 'legacy')).toEqual({
      action: 'hold', reason: expect.stringContaining('StorageClass "slow-disks" is not configured on this node'),
    });
  });

  test('a PV of another StorageClass whose path lies under this class is not cleaned by this class', () => {
    const twoClasses: ConfiguredVolumes = {
      dialect: 'directory',
      storageClassMap: { 'fast-disks': fastDisks, 'other': { ...fastDisks, hostDir: '/mnt/other', mountDir: '/mnt/other' } },
    };
    expect(decideRelease(pv({ storageClass: 'other' }), me, twoClasses, 'legacy').action).toBe('hold');
  });

  test('a Released PV of another provisioner with Recycle is not ours (no warning about others\' PVs)', () => {
    expect(decideRelease(pv({ provisionedBy: 'someone-else', policy: 'Recycle' }), me, directory, 'legacy').action).toBe('not-ours');
  });
});

describe('the release decision (device dialect)', () => {
  const devicePv = (o: Parameters<typeof pv>[0] = {}): V1PersistentVolume =>
    pv({ path: '/dev/disk/by-path/pci-0000:00:1f.2-ata-1', storageClass: 'local-storage', ...o });

  test('a Released PV of ours under deviceDir is wiped', () => {
    const d = decideRelease(devicePv(), me, devices, 'legacy');
    expect(d.action).toBe('clean');
    if (d.action !== 'clean') return;
    expect(d.target).toMatchObject({ path: '/dev/disk/by-path/pci-0000:00:1f.2-ata-1', classDir: '/dev/disk/by-path', method: { kind: 'device-wipe' } });
  });

  test('a PV made by the device-selecting provisioner is known by its node label', () => {
    const d = decideRelease(devicePv({ provisionedBy: null, labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-1' } }), me, devices, 'legacy');
    expect(d.action).toBe('clean');
  });

  test('a PV labelled for another node is not ours', () => {
    const d = decideRelease(devicePv({ provisionedBy: null, labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-2' } }), me, devices, 'legacy');
    expect(d.action).toBe('not-ours');
  });

  test('a PV without our annotation or any node label is not ours', () => {
    expect(decideRelease(devicePv({ provisionedBy: null, labels: {} }), me, devices, 'legacy').action).toBe('not-ours');
  });

  test('a device outside deviceDir is not wiped', () => {
    // The device dialect wipes every device before offering it: the PV goes, nothing is wiped now.
    expect(decideRelease(devicePv({ path: '/dev/sda' }), me, devices, 'legacy').action).toBe('let-go');
  });

  test('a PV of the directory dialect on this node is not the device dialect\'s', () => {
    expect(decideRelease(devicePv({ provisionedBy: 'local-volume-provisioner-worker-1-uid1x' }), me, devices, 'legacy').action).toBe('not-ours');
  });

  test('an explicit Retain on a PV we made is respected', () => {
    expect(decideRelease(devicePv({ policy: 'Retain' }), me, devices, 'legacy').action).toBe('retain');
  });

  test('the Retain the device-selecting provisioner wrote on all its PVs follows the node spec (Delete: wiped, as its users rely on)', () => {
    const upstreamPv = devicePv({ provisionedBy: null, policy: 'Retain', labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-1' } });
    expect(decideRelease(upstreamPv, me, devices, 'legacy').action).toBe('clean');
  });

  test('a PV of the device-selecting provisioner (no identity on it) is wiped only as the disk the record adopted it with', () => {
    const upstreamPv = devicePv({ provisionedBy: null, labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-1' } });
    const d = decideRelease(upstreamPv, me, devices, 'legacy', { state: 'dirty', identity: 'wwn:0x5000c500a1b2c3d4' });
    expect(d.action === 'clean' && d.target.identity).toBe('wwn:0x5000c500a1b2c3d4');
  });

  test('the identity written on a PV wins over the record\'s line found by its UID', () => {
    const d = decideRelease(devicePv({ identity: 'wwn:0xA' }), me, devices, 'legacy', { state: 'dirty', identity: 'wwn:0xB' });
    expect(d.action === 'clean' && d.target.identity).toBe('wwn:0xA');
  });

  test('the node spec saying Retain keeps PVs of the device-selecting provisioner', () => {
    const upstreamPv = devicePv({ provisionedBy: null, policy: 'Retain', labels: { 'local-pv-provisioner.cybozu.io/node': 'worker-1' } });
    const retaining: ConfiguredVolumes = { dialect: 'device', spec: { ...spec, reclaimPolicy: 'Retain' } };
    expect(decideRelease(upstreamPv, me, retaining, 'legacy').action).toBe('retain');
  });
});

describe('the re-check right before cleaning', () => {
  const target = (() => {
    const d = decideRelease(pv(), me, directory, 'legacy');
    if (d.action !== 'clean') throw new Error('fixture');
    return d.target;
  })();

  test('passes for the same PV, still Released and ours', () => {
    expect(recheckBeforeCleaning(pv(), target, me, directory, 'legacy')).toEqual({ ok: true });
  });

  test('stops when the PV is gone', () => {
    expect(recheckBeforeCleaning(undefined, target, me, directory, 'legacy')).toEqual({ ok: false, reason: expect.stringContaining('no longer exists') });
  });

  test('stops when a new PV of the same name has another UID', () => {
    expect(recheckBeforeCleaning(pv({ uid: 'uid-2' }), target, me, directory, 'legacy')).toEqual({ ok: false, reason: expect.stringContaining('replaced') });
  });

  test('stops when the PV is no longer Released', () => {
    expect(recheckBeforeCleaning(pv({ phase: 'Bound' }), target, me, directory, 'legacy').ok).toBe(false);
  });

  test('stops when the PV is being deleted', () => {
    expect(recheckBeforeCleaning(pv({ deleting: true }), target, me, directory, 'legacy').ok).toBe(false);
  });

  test('stops when the reclaim policy was changed to Retain', () => {
    expect(recheckBeforeCleaning(pv({ policy: 'Retain' }), target, me, directory, 'legacy').ok).toBe(false);
  });

  test('stops when the PV is no longer ours', () => {
    expect(recheckBeforeCleaning(pv({ provisionedBy: 'someone-else' }), target, me, directory, 'legacy').ok).toBe(false);
  });

  test('stops when the PV\'s recorded identity changed', () => {
    expect(recheckBeforeCleaning(pv({ identity: 'wwid:other' }), target, me, directory, 'legacy').ok).toBe(false);
  });

  test('stops when the PV now points at another path', () => {
    expect(recheckBeforeCleaning(pv({ path: '/mnt/disks/vol2' }), target, me, directory, 'legacy')).toEqual({ ok: false, reason: expect.stringContaining('now points at') });
  });
});

describe('the finalizer protocol', () => {
  const held = (o: Parameters<typeof pv>[0] = {}) => pv({ finalizer: true, ...o });

  test('a Released PV without our finalizer gets it first', () => {
    expect(decideRelease(pv(), me, directory, 'finalizer').action).toBe('protect');
  });

  test('a Released PV held by our finalizer is deleted, so that no claim can bind it while it is cleaned', () => {
    expect(decideRelease(held(), me, directory, 'finalizer').action).toBe('retire');
  });

  test('a PV being deleted and held by our finalizer is cleaned, whoever deleted it and whatever its phase', () => {
    for (const phase of ['Released', 'Bound']) {
      const d = decideRelease(held({ deleting: true, phase }), me, directory, 'finalizer');
      expect(d.action).toBe('clean');
    }
  });

  test('a PV being deleted that was never bound is let go without cleaning: nothing of anyone is on it', () => {
    expect(decideRelease(held({ deleting: true, phase: 'Available' }), me, directory, 'finalizer').action).toBe('let-go');
    expect(decideRelease(held({ deleting: true, phase: 'Available', boundByController: true }), me, directory, 'finalizer').action).toBe('clean');
  });

  test('a PV being deleted whose policy keeps its data is let go without cleaning (the deletion is an administrator\'s)', () => {
    for (const policy of ['Retain', 'Recycle']) expect(decideRelease(held({ deleting: true, policy }), me, directory, 'finalizer').action).toBe('let-go');
  });

  test('a PV being deleted whose class is not configured any more is held (not let go), so its volume is never offered dirty', () => {
    expect(decideRelease(held({ deleting: true, storageClass: 'removed' }), me, directory, 'finalizer').action).toBe('hold');
  });

  test('a PV being deleted without our finalizer is not ours to hold', () => {
    expect(decideRelease(pv({ deleting: true }), me, directory, 'finalizer').action).toBe('skip');
  });

  test('the recorded identity travels to the cleaner', () => {
    const d = decideRelease(held({ deleting: true, identity: 'fs:/@wwid:X' }), me, directory, 'finalizer');
    expect(d.action === 'clean' && d.target.identity).toBe('fs:/@wwid:X');
  });

  test('the re-check before cleaning passes only while the PV is still being deleted with our finalizer', () => {
    const d = decideRelease(held({ deleting: true }), me, directory, 'finalizer');
    if (d.action !== 'clean') throw new Error('fixture');
    expect(recheckBeforeCleaning(held({ deleting: true }), d.target, me, directory, 'finalizer')).toEqual({ ok: true });
    expect(recheckBeforeCleaning(pv({ deleting: true }), d.target, me, directory, 'finalizer').ok).toBe(false);
  });
});

describe('a PV that was never bound', () => {
  test('is Available with no claim and no binder annotation', () => {
    expect(neverBound(pv({ phase: 'Available' }))).toBe(true);
  });

  test('a PV whose claimRef an administrator cleared keeps the binder\'s annotation: it was used', () => {
    expect(neverBound(pv({ phase: 'Available', boundByController: true }))).toBe(false);
  });

  test('a Released or Bound PV was used', () => {
    expect(neverBound(pv({ phase: 'Released' }))).toBe(false);
    expect(neverBound(pv({ phase: 'Bound', claimUid: 'c1' }))).toBe(false);
  });
});
