/**
 * Devices over time and their PV names, on real loop devices against the test
 * API server: config changes while old PVs exist, a device that disappears,
 * upstream's name rule and where we fix it, collisions, and the PV itself.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { blockSpec, detach, DeviceFixture, emptyLoopDevice, eventually, fillPattern, NODE_NAME, readBytes, SMALL } from './fixture';
import { devicePVName, upstreamDevicePVName } from '../../../src/runtime/pv';
import { cleanupPrivileged, describePrivileged, makeTempDir, mkfsExt4 } from '../../support/privileged';


const pvName = (device: string) => upstreamDevicePVName(NODE_NAME, device);

describePrivileged('device dialect: devices over time and their names', () => {
  let fx: DeviceFixture;
  afterEach(async () => fx?.stop());
  afterAll(cleanupPrivileged);

  async function start(spec: (dir: string) => Record<string, string>, names: string[]): Promise<void> {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    for (const n of names) fx.addDevice(n);
    await fx.setSpec('spec', spec(fx.deviceDir));
    await fx.pass();
  }

  test('the PV is upstream\'s: labels, spec annotations, Node ownerReference, hostname affinity, exact capacity, Retain', async () => {
    await start((dir) => blockSpec(dir), ['sda']);
    const pv = (await fx.serverPv(pvName('sda')))!;
    const node = await fx.server.get('v1', 'Node', NODE_NAME);
    expect(pv.metadata?.labels).toMatchObject({
      'local-pv-provisioner.cybozu.io/node': NODE_NAME,
      'local-pv-provisioner.cybozu.com/node': NODE_NAME,
      'local.storage.k8s.io/node': NODE_NAME,
    });
    expect(pv.metadata?.annotations).toMatchObject({
      'local-pv-provisioner.cybozu.io/storageClassName': 'local-storage',
      'local-pv-provisioner.cybozu.io/volumeMode': 'Block',
      'local-pv-provisioner.cybozu.io/deviceDir': fx.deviceDir,
      'local-pv-provisioner.cybozu.io/deviceNameFilter': '.*',
    });
    expect(pv.metadata?.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: NODE_NAME, uid: node.metadata.uid, controller: true })]);
    expect(JSON.stringify(pv.spec?.nodeAffinity)).toContain('worker-1.example.internal');
    expect(pv.spec?.capacity?.storage).toBe('8Mi');
    expect(pv.spec?.accessModes).toEqual(['ReadWriteOnce']);
    expect(pv.spec?.storageClassName).toBe('local-storage');
    // The spec's reclaimPolicy default is Delete: the policy that really applies is written.
    expect(pv.spec?.persistentVolumeReclaimPolicy).toBe('Delete');
  });

  test('deleting the Node lets the garbage collector remove its PVs that were never bound (ownerReference)', async () => {
    await start((dir) => blockSpec(dir), ['sda', 'sdb']);
    expect(await fx.serverPvNames()).toHaveLength(2);
    await fx.server.delete('v1', 'Node', NODE_NAME);
    await eventually(async () => (await fx.serverPvNames()).length === 0, 'the PVs are garbage collected');
  });

  test('a PV that was bound is held by our finalizer when its Node is deleted: its disk may come back dirty with the Node', async () => {
    await start((dir) => blockSpec(dir), ['sda']);
    await fx.bind(pvName('sda'));
    await fx.waitForPv(pvName('sda'), { phase: 'Bound' });
    await fx.pass();
    await eventually(async () => (await fx.serverPv(pvName('sda')))?.metadata?.finalizers?.includes('local.storage.k8s.io/cleanup') === true, 'the finalizer is added');
    await fx.server.delete('v1', 'Node', NODE_NAME);
    await eventually(async () => (await fx.serverPv(pvName('sda')))?.metadata?.deletionTimestamp !== undefined, 'the PV is being deleted');
    expect((await fx.serverPv(pvName('sda')))?.metadata?.finalizers).toContain('local.storage.k8s.io/cleanup');
  });

  test('a device holding data that is later wiped by its owner is offered on the next pass', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda', 16 * 1024 * 1024);
    mkfsExt4(sda.device);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([]);
    execFileSync('wipefs', ['--all', '--quiet', sda.device]);
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sda')]);
  });

  test('a second pass creates nothing more and changes nothing', async () => {
    await start((dir) => blockSpec(dir), ['sda', 'sdb']);
    const before = (await fx.serverPvs()).map((pv) => [pv.metadata?.name, pv.metadata?.resourceVersion]);
    const result = await fx.pass();
    expect(result.state === 'provisioned' && result.created).toEqual([]);
    expect((await fx.serverPvs()).map((pv) => [pv.metadata?.name, pv.metadata?.resourceVersion])).toEqual(before);
  });

  describe('config changes: old PVs stay, new devices follow the new spec, a PVSpecChanged Event says so', () => {
    async function changeAndAddDevice(change: (dir: string) => Record<string, string>, newDevice = 'sdb', newDir?: string): Promise<void> {
      await fx.setSpec('spec', change(fx.deviceDir));
      if (newDevice) fx.addDevice(newDevice, undefined, newDir);
      await fx.pass();
    }

    async function expectSpecChangedEvent(): Promise<void> {
      const events = await fx.nodeEvents('PVSpecChanged');
      expect(events).toHaveLength(1);
      expect(events[0].message).toContain(pvName('sda'));
    }

    test('storageClassName', async () => {
      await start((dir) => blockSpec(dir), ['sda']);
      await changeAndAddDevice((dir) => blockSpec(dir, { storageClassName: 'fast' }));
      expect((await fx.serverPv(pvName('sda')))?.spec?.storageClassName).toBe('local-storage');
      expect((await fx.serverPv(pvName('sdb')))?.spec?.storageClassName).toBe('fast');
      await expectSpecChangedEvent();
    });

    test('volumeMode and fsType', async () => {
      await start((dir) => blockSpec(dir), ['sda']);
      await changeAndAddDevice((dir) => blockSpec(dir, { volumeMode: 'Filesystem', fsType: 'xfs' }));
      expect((await fx.serverPv(pvName('sda')))?.spec).toMatchObject({ volumeMode: 'Block' });
      expect((await fx.serverPv(pvName('sdb')))?.spec).toMatchObject({ volumeMode: 'Filesystem', local: { fsType: 'xfs' } });
      await expectSpecChangedEvent();
    });

    test('deviceDir', async () => {
      await start((dir) => blockSpec(dir), ['sda']);
      const other = makeTempDir('lvp-devices-other-');
      await changeAndAddDevice(() => blockSpec(other), 'sdb', other);
      expect((await fx.serverPv(pvName('sda')))?.spec?.local?.path).toBe(path.join(fx.deviceDir, 'sda'));
      expect((await fx.serverPv(pvName('sdb')))?.spec?.local?.path).toBe(path.join(other, 'sdb'));
      await expectSpecChangedEvent();
    });

    test('deviceNameFilter', async () => {
      await start((dir) => blockSpec(dir, { deviceNameFilter: 'sda' }), ['sda']);
      await changeAndAddDevice((dir) => blockSpec(dir, { deviceNameFilter: 'sd[bc]' }));
      expect(await fx.serverPvNames()).toEqual([pvName('sda'), pvName('sdb')]);
      expect((await fx.serverPv(pvName('sdb')))?.metadata?.annotations?.['local-pv-provisioner.cybozu.io/deviceNameFilter']).toBe('sd[bc]');
      await expectSpecChangedEvent();
    });

    test('the annotation switched to another ConfigMap', async () => {
      await start((dir) => blockSpec(dir), ['sda']);
      await fx.setSpec('other', blockSpec(fx.deviceDir, { storageClassName: 'other-class', volumeMode: 'Filesystem', fsType: 'ext4' }));
      await fx.annotate('other');
      fx.addDevice('sdb');
      await fx.pass();
      expect((await fx.serverPv(pvName('sda')))?.spec?.storageClassName).toBe('local-storage');
      expect((await fx.serverPv(pvName('sdb')))?.spec).toMatchObject({ storageClassName: 'other-class', volumeMode: 'Filesystem' });
      await expectSpecChangedEvent();
    });

    test('the Event is recorded once per change, not on every pass', async () => {
      await start((dir) => blockSpec(dir), ['sda']);
      await changeAndAddDevice((dir) => blockSpec(dir, { storageClassName: 'fast' }), '');
      await fx.pass();
      await fx.pass();
      const events = await fx.nodeEvents('PVSpecChanged');
      expect(events.map((e) => e.count ?? 1)).toEqual([1]);
    });
  });

  test('a device that disappears (losetup -d) keeps its PV; the others go on', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fx.addDevice('sdb');
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    const uid = (await fx.serverPv(pvName('sda')))?.metadata?.uid;
    // Made before the detach, so losetup cannot hand sdc the number sda had.
    const sdc = fx.addDevice('sdc');
    detach(sda.device);
    await fx.pass();
    expect(sdc.device).not.toBe(sda.device);
    expect(await fx.serverPvNames()).toEqual(['sda', 'sdb', 'sdc'].map(pvName));
    expect((await fx.serverPv(pvName('sda')))?.metadata?.uid).toBe(uid);
  });

  test('a device whose link disappears (disk pulled) keeps its PV, is counted as an error, not available, and a VolumeMissing Warning says so', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fx.addDevice('sdb');
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    expect(await fx.deviceGauges()).toEqual({ available: 2, error: 0 });
    fs.unlinkSync(sda.link);
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sda'), pvName('sdb')]);
    expect(await fx.deviceGauges()).toEqual({ available: 1, error: 1 });
    const missing = await fx.recordedEvents('VolumeMissing');
    expect(missing.map((e) => [e.type, e.involvedObject.name])).toEqual([['Warning', pvName('sda')]]);
    expect(missing[0].message).toContain(sda.link);
    expect(await fx.metric('local_volume_provisioner_volume_state', {
      state: 'missing', persistentvolume: pvName('sda'), path: sda.link, storageclass: 'local-storage',
    })).toBe(1);
    // The disk comes back: available again.
    fs.symlinkSync(sda.device, sda.link);
    await fx.pass();
    expect(await fx.deviceGauges()).toEqual({ available: 2, error: 0 });
  });

  test('upstream\'s name for pci-0000:3c:00.0-sas-0x5000-lun-0 style paths', async () => {
    const base = 'pci-0000:3c:00.0-sas-0x5000c500a1b2c3d4-lun-0';
    await start((dir) => blockSpec(dir), [base]);
    expect(await fx.serverPvNames()).toEqual([`local-${NODE_NAME}-pci-0000-3c-00.0-sas-0x5000c500a1b2c3d4-lun-0`]);
    expect((await fx.serverPv((await fx.serverPvNames())[0]))?.spec?.local?.path).toBe(path.join(fx.deviceDir, base));
  });

  test('a device named with every punctuation character gets a valid PV name', async () => {
    const punctuation = '!"#$%&\'()*+,-.:;<=>?@[\\]^_`{|}~';
    const base = `a${punctuation}b`;
    await start((dir) => blockSpec(dir), [base]);
    const names = await fx.serverPvNames();
    expect(names).toEqual([devicePVName(NODE_NAME, base).name]);
    expect(names[0]).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
    expect((await fx.serverPv(names[0]))?.spec?.local?.path).toBe(path.join(fx.deviceDir, base));
  });

  test('a base name too long for upstream\'s rule gets a name of at most 253 characters', async () => {
    const base = `disk-${'x'.repeat(240)}`;
    await start((dir) => blockSpec(dir), [base]);
    const [name] = await fx.serverPvNames();
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toBe(devicePVName(NODE_NAME, base).name);
  });

  test('two devices whose names collide are both reported and neither is provisioned; the others are', async () => {
    await start((dir) => blockSpec(dir), ['sd_a', 'sd-a', 'sdb']);
    expect(await fx.serverPvNames()).toEqual([pvName('sdb')]);
    const events = await fx.nodeEvents('NameCollision');
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('Warning');
    expect(events[0].message).toContain(path.join(fx.deviceDir, 'sd_a'));
    expect(events[0].message).toContain(path.join(fx.deviceDir, 'sd-a'));
    expect(await fx.deviceGauges()).toEqual({ available: 1, error: 2 });
  });

  test('a newcomer whose name collides with a provisioned device\'s PV is the only one reported; the PV stays its device\'s', async () => {
    await start((dir) => blockSpec(dir), ['sd_a']);
    const uid = (await fx.serverPv(pvName('sd_a')))?.metadata?.uid;
    fx.addDevice('sd-a');
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sd_a')]);
    expect((await fx.serverPv(pvName('sd_a')))?.metadata?.uid).toBe(uid);
    expect((await fx.serverPv(pvName('sd_a')))?.spec?.local?.path).toBe(path.join(fx.deviceDir, 'sd_a'));
    const events = await fx.nodeEvents('NameCollision');
    expect(events).toHaveLength(1);
    expect(events[0].message).toContain(path.join(fx.deviceDir, 'sd-a'));
    expect(await fx.deviceGauges()).toEqual({ available: 1, error: 1 });
  });

  test('a dangling symlink is an error device; the others go on', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    fx.addDevice('sda');
    fs.symlinkSync('/dev/lvp-test-no-such-device', path.join(fx.deviceDir, 'sdz'));
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sda')]);
    const events = await fx.nodeEvents('DeviceError');
    expect(events.map((e) => e.message).join('\n')).toContain(path.join(fx.deviceDir, 'sdz'));
    expect(await fx.deviceGauges()).toEqual({ available: 1, error: 1 });
  });

  test('a disk that already has a PV is never wiped or offered again under a second path that appears later', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sdb = fx.addDevice('sdb');
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    fillPattern(sdb.link, 0, SMALL);
    // udev adds another name for the same disk, sorting before the first.
    fs.symlinkSync(sdb.device, path.join(fx.deviceDir, 'sda'));
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sdb')]);
    expect(readBytes(sdb.backingFile, 0, 4096).every((b) => b === 0xa5)).toBe(true);
    expect((await fx.nodeEvents('DuplicatePath')).map((e) => e.message)).toEqual([expect.stringContaining(`as PV "${pvName('sdb')}"`)]);
    expect(await fx.deviceGauges()).toEqual({ available: 1, error: 0 });
  });

  test('a deviceDir change that shows a disk with a PV under a new path neither wipes it nor gives it a second PV', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const byPath = fx.addDevice('pci-0000:3c:00.0-sas-0x5000-lun-0');
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    fillPattern(byPath.link, 0, SMALL);
    // The admin moves the spec from by-path to by-id names of the same disks.
    const byId = makeTempDir('lvp-by-id-');
    fs.symlinkSync(byPath.device, path.join(byId, 'wwn-0x5000c500a1b2c3d4'));
    await fx.setSpec('spec', blockSpec(byId));
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('pci-0000:3c:00.0-sas-0x5000-lun-0')]);
    expect(readBytes(byPath.backingFile, 0, 4096).every((b) => b === 0xa5)).toBe(true);
  });

  test('a device of size 0 is an error device, not a PV of capacity 0', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fx.addDevice('sdb');
    // Not detached: a suite running beside this one could attach its own disk under the freed number.
    emptyLoopDevice(sda);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sdb')]);
    expect((await fx.nodeEvents('DeviceError')).map((e) => e.message).join('\n')).toContain(sda.link);
    expect(await fx.deviceGauges()).toEqual({ available: 1, error: 1 });
  });

  test('two paths to one disk offer it once, and count it once', async () => {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    const sda = fx.addDevice('sda');
    fs.symlinkSync(sda.device, path.join(fx.deviceDir, 'sda-alias'));
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sda')]);
    expect(await fx.deviceGauges()).toEqual({ available: 1, error: 0 });
  });
});
