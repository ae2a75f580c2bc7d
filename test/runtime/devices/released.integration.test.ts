/**
 * Released devices, on real loop devices against a real control plane: wiped
 * and re-offered when provably this node's, left alone otherwise, and an
 * explicit Retain respected.
 */
import * as path from 'node:path';
import { V1PersistentVolume } from '@kubernetes/client-node';
import { blockSpec, detach, DeviceFixture, eventually, fillPattern, isZero, KiB, NODE_NAME, readBytes, SMALL } from './fixture';
import { upstreamDevicePVName } from '../../../src/runtime/pv';
import { cleanupPrivileged, describePrivileged, makeTempDir, mkfsExt4, mount } from '../../support/privileged';


const pvName = (device: string) => upstreamDevicePVName(NODE_NAME, device);

/** A PV as the device-selecting provisioner wrote it (no provisioned-by, Retain), labelled for `node`. */
function upstreamPv(name: string, devicePath: string, labels: Record<string, string>): V1PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels },
    spec: {
      capacity: { storage: '8Mi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: 'local-storage',
      volumeMode: 'Block',
      local: { path: devicePath },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } },
    },
  };
}

describePrivileged('device dialect: Released devices', () => {
  let fx: DeviceFixture;
  afterEach(async () => fx?.stop());
  afterAll(cleanupPrivileged);

  /** A fixture with one device `sda` whose user data is the 0xa5 pattern. */
  async function withUsedDevice(spec: Record<string, string> = {}): Promise<ReturnType<DeviceFixture['addDevice']>> {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    await fx.setSpec('spec', blockSpec(fx.deviceDir, spec));
    await fx.pass();
    fillPattern(sda.link, 0, SMALL);
    return sda;
  }

  /** A used device whose PV is Released after a spec change moved deviceDir elsewhere, one pass run on it. */
  async function releasedOutsideDeviceDir(): Promise<ReturnType<DeviceFixture['addDevice']>> {
    const sda = await withUsedDevice();
    await fx.setSpec('spec', blockSpec(makeTempDir('lvp-devices-other-')));
    await fx.release(pvName('sda'));
    await fx.pass();
    await fx.settle();
    return sda;
  }

  test('our Released PV is wiped and deleted, and the next pass offers the device again with a new UID and zeros', async () => {
    const sda = await withUsedDevice();
    const uid = (await fx.serverPv(pvName('sda')))!.metadata!.uid!;
    await fx.release(pvName('sda'));
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(pvName('sda'), uid);
    await fx.pass();
    // Made Pending, then Available once the PV controller has seen it.
    const again = await fx.waitForPv(pvName('sda'), { notUid: uid, phase: 'Available' });
    expect(again.status?.phase).toBe('Available');
    expect(readBytes(sda.backingFile, 0, 5 * KiB).every((b) => b === 0)).toBe(true);
    // The device is smaller than 100 MiB: its one wipe range is the whole device.
    expect(isZero(sda.backingFile, 0, SMALL)).toBe(true);
    expect((await fx.recordedEvents('CleanupStarted')).map((e) => e.involvedObject.name)).toEqual([pvName('sda')]);
  });

  test('a Released PV of ours with reclaim policy Retain is neither wiped nor deleted', async () => {
    const sda = await withUsedDevice({ reclaimPolicy: 'Retain' });
    expect((await fx.serverPv(pvName('sda')))?.spec?.persistentVolumeReclaimPolicy).toBe('Retain');
    await fx.release(pvName('sda'));
    await fx.pass();
    await fx.settle();
    expect((await fx.serverPv(pvName('sda')))?.status?.phase).toBe('Released');
    expect(readBytes(sda.backingFile, 0, 4 * KiB).every((b) => b === 0xa5)).toBe(true);
  });

  test('an upstream-made PV (no provisioned-by, Retain, its node label) is wiped and re-offered, as its users expect', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fillPattern(sda.link, 0, SMALL);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    const created = await fx.server.create(upstreamPv(pvName('sda'), sda.link, { 'local-pv-provisioner.cybozu.io/node': NODE_NAME }));
    expect(await fx.adopt()).toEqual([pvName('sda')]);
    await fx.release(pvName('sda'));
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(pvName('sda'), created.metadata.uid);
    await fx.pass();
    const ours = await fx.waitForPv(pvName('sda'), { notUid: created.metadata.uid });
    expect(ours.spec?.persistentVolumeReclaimPolicy).toBe('Delete');
    expect(isZero(sda.backingFile, 0, SMALL)).toBe(true);
  });

  test.each([
    ['without any node label', {}],
    ['labelled for another node', { 'local-pv-provisioner.cybozu.io/node': 'worker-2' }],
    ['labelled for another node with the legacy label', { 'local-pv-provisioner.cybozu.com/node': 'worker-2' }],
    ['with our node label but upstream\'s naming another node', { 'local.storage.k8s.io/node': NODE_NAME, 'local-pv-provisioner.cybozu.io/node': 'worker-2' }],
  ])('a Released PV %s is ignored: not wiped, not deleted', async (_, labels) => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fillPattern(sda.link, 0, SMALL);
    // Only sdb is offered, so what happens to sda is the deleter's doing alone.
    fx.addDevice('sdb');
    await fx.setSpec('spec', blockSpec(fx.deviceDir, { deviceNameFilter: '^sdb$' }));
    await fx.server.create(upstreamPv('someone-elses', sda.link, labels));
    expect(await fx.adopt()).toEqual([]);
    const bound = (await fx.server.get<V1PersistentVolume>('v1', 'PersistentVolume', 'someone-elses'))!;
    await fx.server.bindNewClaim('someone-elses', 'c');
    await fx.server.delete('v1', 'PersistentVolumeClaim', 'c', 'default');
    await eventually(async () => (await fx.serverPv('someone-elses'))?.status?.phase === 'Released', 'the PV is Released');
    await fx.pass();
    await fx.settle();
    expect((await fx.serverPv('someone-elses'))?.metadata?.uid).toBe(bound.metadata?.uid);
    expect((await fx.serverPv('someone-elses'))?.status?.phase).toBe('Released');
    expect(readBytes(sda.backingFile, 0, 4 * KiB).every((b) => b === 0xa5)).toBe(true);
    expect(await fx.recordedEvents('CleanupStarted')).toEqual([]);
  });

  test('a Released PV whose path is outside deviceDir is not wiped (it goes; its device is wiped before it is offered again)', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda', SMALL, path.join(fx.deviceDir, '..', `${path.basename(fx.deviceDir)}-elsewhere`));
    fillPattern(sda.link, 0, SMALL);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    fx.addDevice('sdb');
    await fx.server.create(upstreamPv(pvName('sda'), sda.link, { 'local-pv-provisioner.cybozu.io/node': NODE_NAME }));
    expect(await fx.adopt()).toEqual([pvName('sda')]);
    await fx.release(pvName('sda'));
    await fx.pass();
    await fx.settle();
    expect(readBytes(sda.backingFile, 0, 4 * KiB).every((b) => b === 0xa5)).toBe(true);
  });

  test('a device whose PV name already exists in the server (not yet in the cache) is not wiped', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fillPattern(sda.link, 0, SMALL);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    // Made by the device-selecting provisioner after our adoption pass, so the cache does not list it.
    const theirs = await fx.server.create(upstreamPv(pvName('sda'), sda.link, { 'local-pv-provisioner.cybozu.io/node': NODE_NAME }));
    await fx.pass();
    expect((await fx.serverPv(pvName('sda')))?.metadata?.uid).toBe(theirs.metadata.uid);
    expect(readBytes(sda.backingFile, 0, 4 * KiB).every((b) => b === 0xa5)).toBe(true);
    expect((await fx.nodeEvents('DeviceError')).map((e) => e.message)).toEqual([expect.stringContaining(`PV ${pvName('sda')} already exists`)]);
    expect(await fx.deviceGauges()).toEqual({ available: 0, error: 1 });
  });

  test('a Released PV whose device is mounted is neither wiped nor let go; a VolumeInUse Warning says why', async () => {
    const sda = await withUsedDevice();
    await fx.release(pvName('sda'));
    mkfsExt4(sda.device);
    mount(sda.device, path.join(makeTempDir(), 'mnt'), { type: 'ext4' });
    await fx.pass();
    await fx.settle();
    await fx.pass();
    expect((await fx.serverPv(pvName('sda')))?.status?.phase).toBe('Released');
    expect(readBytes(sda.backingFile, 1024 + 56, 2)).toEqual(Buffer.from([0x53, 0xef]));
    const inUse = await fx.recordedEvents('VolumeInUse');
    expect(inUse.map((e) => [e.type, e.involvedObject.name])).toEqual([['Warning', pvName('sda')]]);
  });

  test('a Released PV whose device is gone (losetup -d) goes, as upstream deletes it, and the other devices go on: the disk is wiped before it is ever offered again', async () => {
    const sda = await withUsedDevice();
    fx.addDevice('sdb');
    await fx.release(pvName('sda'));
    detach(sda.device);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(pvName('sda'));
    expect(await fx.serverPv(pvName('sdb'))).toBeDefined();
  });

  test('a Released PV left outside deviceDir by a spec change goes without its device being wiped (it is wiped before it is offered again)', async () => {
    const sda = await releasedOutsideDeviceDir();
    await fx.pass();
    await fx.waitForPvGone(pvName('sda'));
    expect(readBytes(sda.backingFile, 0, 4 * KiB).every((b) => b === 0xa5)).toBe(true);
  });

  test('the disk of a Released PV that went while it was gone is wiped when it comes back, before it is offered again', async () => {
    const sda = await releasedOutsideDeviceDir();
    await fx.waitForPvGone(pvName('sda'));
    // The old tenant wrote raw data, no signature: it is wiped, not held.
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.passUntilCreated(pvName('sda'));
    const again = await fx.waitForPv(pvName('sda'), { phase: 'Available' });
    expect(again).toBeDefined();
    expect(readBytes(sda.backingFile, 0, 4 * KiB).every((b) => b === 0)).toBe(true);
  });

  test('an upstream-made PV is kept when the spec says reclaimPolicy: Retain', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fillPattern(sda.link, 0, SMALL);
    await fx.setSpec('spec', blockSpec(fx.deviceDir, { reclaimPolicy: 'Retain' }));
    await fx.server.create(upstreamPv(pvName('sda'), sda.link, { 'local-pv-provisioner.cybozu.io/node': NODE_NAME }));
    await fx.adopt();
    await fx.release(pvName('sda'));
    await fx.pass();
    await fx.settle();
    expect((await fx.serverPv(pvName('sda')))?.status?.phase).toBe('Released');
    expect(readBytes(sda.backingFile, 0, 4 * KiB).every((b) => b === 0xa5)).toBe(true);
  });
});
