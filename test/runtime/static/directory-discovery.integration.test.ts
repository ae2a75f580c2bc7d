/**
 * Upstream's discovery test cases that need the API, end to end through the
 * DirectoryController: real bind mounts and loop devices in the discovery
 * directories, the real client against a real control plane.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ControllerFixture, localFsPv, NODE_HOSTNAME, NODE_NAME } from './fixture';
import { readMountTable } from '../../../src/runtime/discovery';
import { filesystemSize, formatBinaryQuantity, mountIdentity, roundDownCapacity } from '../../../src/runtime/volume';
import { PROVISIONED_BY_ANNOTATION, NODE_LABEL, VOLUME_IDENTITY_ANNOTATION } from '../../../src/runtime/well-known';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir } from '../../support/privileged';
import { referenceFnv1a32 } from '../pv/reference-fnv1a';

const MiB = 1024 * 1024;

describePrivileged('directory discovery through the controller', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);

  const dir = () => fx!.dirs['local-fs'];

  test('basic: each mount point becomes one Available PV of ours, with a ProvisioningSucceeded Event', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    makeMountPoint(path.join(dir(), 'vol2'));
    const names = [fx.pvName('local-fs', 'vol1'), fx.pvName('local-fs', 'vol2')].sort();

    const result = await fx.pass();

    expect([...result.created].sort()).toEqual(names);
    expect(await fx.serverPvNames()).toEqual(names);
    for (const name of names) {
      const pv = (await fx.serverPv(name))!;
      expect(pv.metadata!.ownerReferences).toBeUndefined();
      expect(pv.metadata!.labels![NODE_LABEL]).toBe(NODE_NAME);
    }
    await fx.waitForCache((pvs) => pvs.length === 2 && pvs.every((p) => p.status?.phase === 'Available'), 'both PVs are cached Available');
    const created = await fx.recordedEvents('ProvisioningSucceeded');
    expect(created.map((e) => e.involvedObject.name).sort()).toEqual(names);
    expect(created.every((e) => e.type === 'Normal')).toBe(true);
  });

  test('basic with setPVOwnerRef: each PV is owned by the Node', async () => {
    fx = await ControllerFixture.start({ config: { setPVOwnerRef: true } });
    makeMountPoint(path.join(dir(), 'vol1'));
    await fx.pass();
    const node = await fx.server.get('v1', 'Node', NODE_NAME);
    expect((await fx.serverPv(fx.pvName('local-fs', 'vol1')))!.metadata!.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: NODE_NAME, uid: node.metadata.uid },
    ]);
  });

  test('the same pass twice creates nothing new', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    makeMountPoint(path.join(dir(), 'vol2'));
    await fx.pass();
    await fx.waitForCache((pvs) => pvs.length === 2, 'both PVs are cached');
    const creates = fx.server.counters.get('create', 'persistentvolumes').requests;

    const second = await fx.pass();

    expect(second.created).toEqual([]);
    expect(fx.server.counters.get('create', 'persistentvolumes').requests).toBe(creates);
    expect(await fx.serverPvNames()).toHaveLength(2);
  });

  test('a missing discovery directory creates nothing and is reported on the Node', async () => {
    const missing = path.join(makeTempDir(), 'absent');
    fx = await ControllerFixture.start({ classes: { 'local-fs': { mountDir: missing } } });

    const result = await fx.pass();

    expect(result.created).toEqual([]);
    expect(result.classes[0].problem).toMatch(/does not exist/);
    const [event] = await fx.recordedEvents('VolumeRejected');
    expect(event).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: NODE_NAME } });
    expect(event.message).toBe(`discovery directory "${missing}" of class "local-fs" does not exist; create it on the host and mount it into the container at that path`);
  });

  test('an empty discovery directory creates nothing and reports nothing', async () => {
    fx = await ControllerFixture.start();
    const result = await fx.pass();
    expect(result.created).toEqual([]);
    expect(await fx.serverPvNames()).toEqual([]);
    expect((await fx.recordedEvents()).filter((e) => e.type === 'Warning')).toEqual([]);
  });

  test('volumes appearing later get PVs on a later pass', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    expect((await fx.pass()).created).toEqual([fx.pvName('local-fs', 'vol1')]);
    await fx.waitForPv(fx.pvName('local-fs', 'vol1'));

    makeMountPoint(path.join(dir(), 'vol2'));
    makeMountPoint(path.join(dir(), 'vol3'));

    expect([...(await fx.pass()).created].sort()).toEqual([fx.pvName('local-fs', 'vol2'), fx.pvName('local-fs', 'vol3')].sort());
    expect(await fx.serverPvNames()).toHaveLength(3);
  });

  test('a PV create answered 503 with Retry-After is sent again and the PV is created once', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    fx.server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 503, count: 2, retryAfterSeconds: 1 });

    const result = await fx.pass();

    expect(result.created).toEqual([fx.pvName('local-fs', 'vol1')]);
    expect(fx.server.counters.get('create', 'persistentvolumes').requests).toBe(3);
    expect(await fx.serverPvNames()).toEqual([fx.pvName('local-fs', 'vol1')]);
    expect(await fx.recordedEvents('ProvisioningFailed')).toEqual([]);
  });

  test('a PV create answered 500 is not sent again in the pass (it may have been applied); the next pass makes the PV once', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    fx.server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 500 });

    expect((await fx.pass()).created).toEqual([]);
    expect(fx.server.counters.get('create', 'persistentvolumes').requests).toBe(1);
    expect(await fx.recordedEvents('ProvisioningFailed')).toHaveLength(1);
    expect((await fx.pass()).created).toEqual([fx.pvName('local-fs', 'vol1')]);
    expect(await fx.serverPvNames()).toEqual([fx.pvName('local-fs', 'vol1')]);
  });

  test('a PV create that keeps failing caches nothing, records ProvisioningFailed, and succeeds on a later pass', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    const name = fx.pvName('local-fs', 'vol1');
    // More failures than the client's attempts per call.
    fx.server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 500, count: 20 });

    const failed = await fx.pass();

    expect(failed.created).toEqual([]);
    expect(await fx.serverPvNames()).toEqual([]);
    expect(fx.cache.list()).toEqual([]);
    const [event] = await fx.recordedEvents('ProvisioningFailed');
    expect(event).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: NODE_NAME } });
    expect(event.message).toContain(`cannot create PV ${name} for /mnt/host/local-fs/vol1`);

    fx.server.faults.clear();
    expect((await fx.pass()).created).toEqual([name]);
    await fx.waitForPv(name, { phase: 'Available' });
  });

  test('our own PV already there under its name (a create whose answer was lost) counts as done, not as a failure', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    const name = fx.pvName('local-fs', 'vol1');
    // The same PV, but without our node label, so the cache does not see it: the create meets AlreadyExists.
    await fx.server.create(localFsPv(name, '/mnt/host/local-fs/vol1', await fx.provisionerName(), {}));

    const result = await fx.pass();

    expect(result.created).toEqual([]);
    expect(await fx.serverPvNames()).toEqual([name]);
    expect(await fx.recordedEvents('ProvisioningFailed')).toEqual([]);
  });

  test('another PV under the name we want (AlreadyExists for another path) is a ProvisioningFailed naming both, and is left alone', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    const name = fx.pvName('local-fs', 'vol1');
    const squatter = await fx.server.create(localFsPv(name, '/somewhere/else', 'someone-else', {}));

    expect((await fx.pass()).created).toEqual([]);

    expect((await fx.serverPv(name))!.metadata!.uid).toBe(squatter.metadata!.uid);
    const [event] = await fx.recordedEvents('ProvisioningFailed');
    expect(event.message).toContain('path "/somewhere/else" (provisioned by "someone-else")');
    expect(event.message).toContain('not creating it for path "/mnt/host/local-fs/vol1"');
  });

  test('a path already used by another PV is skipped with a DuplicatePath Warning', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    makeMountPoint(path.join(dir(), 'vol2'));
    // e.g. made under the class's old name before it was renamed.
    await fx.server.create(localFsPv('local-pv-renamed', '/mnt/host/local-fs/vol1', await fx.provisionerName(), { [NODE_LABEL]: NODE_NAME }));
    await fx.waitForPv('local-pv-renamed');

    const result = await fx.pass();

    expect(result.created).toEqual([fx.pvName('local-fs', 'vol2')]);
    expect(await fx.serverPv(fx.pvName('local-fs', 'vol1'))).toBeUndefined();
    const [event] = await fx.recordedEvents('DuplicatePath');
    expect(event).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: NODE_NAME } });
    expect(event.message).toBe(`path "/mnt/host/local-fs/vol1" is already used by PV "local-pv-renamed"; not creating PV "${fx.pvName('local-fs', 'vol1')}" for it`);
  });

  test('a directory that is not a mount point is skipped with upstream\'s message while mount points go on', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'good'));
    fs.mkdirSync(path.join(dir(), 'plain'));

    const result = await fx.pass();

    expect(result.created).toEqual([fx.pvName('local-fs', 'good')]);
    const [event] = await fx.recordedEvents('VolumeNotMountPoint');
    expect(event).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: NODE_NAME } });
    expect(event.message?.startsWith(`path "${path.join(dir(), 'plain')}" is not a valid mount point`)).toBe(true);
  });

  test('a rejected entry is one deduplicated Warning however many passes see it, and an error in volume_state, not unreadiness', async () => {
    fx = await ControllerFixture.start();
    fs.mkdirSync(path.join(dir(), 'lost+found'));

    for (let i = 0; i < 3; i++) await fx.pass();

    const events = await fx.recordedEvents('VolumeNotMountPoint');
    expect(events).toHaveLength(1);
    // Repeats are counted and written at most once per repeat interval (10 min), not once per pass.
    expect(events[0].count).toBe(1);
    expect(fx.server.counters.get('patch', 'events').requests).toBe(0);
    expect(await fx.metrics.exposition()).toContain(
      `local_volume_provisioner_volume_state{state="error",persistentvolume="",path="${path.join(dir(), 'lost+found')}",storageclass="local-fs"} 1`);
  });

  test('an entry of an unknown type (a regular file) is skipped with a Warning while the others go on', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(dir(), 'vol1'));
    fs.writeFileSync(path.join(dir(), 'notes.txt'), 'hello');

    expect((await fx.pass()).created).toEqual([fx.pvName('local-fs', 'vol1')]);
    const rejected = await fx.recordedEvents('VolumeRejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0].message).toContain(path.join(dir(), 'notes.txt'));
  });

  test('a directory in a Block class is skipped while the block entries of that class go on', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-block': { volumeMode: 'Block' } } });
    const blockDir = fx.dirs['local-block'];
    const loop = createLoopDevice(16 * MiB);
    fs.symlinkSync(loop.device, path.join(blockDir, 'disk1'));
    makeMountPoint(path.join(blockDir, 'adir'));

    const result = await fx.pass();

    expect(result.created).toEqual([fx.pvName('local-block', 'disk1')]);
    const rejected = await fx.recordedEvents('VolumeRejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0].message).toContain(path.join(blockDir, 'adir'));
  });

  test('a symlink to a block device in a Block class becomes a Block PV sized from the device', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-block': { volumeMode: 'Block' } } });
    const loop = createLoopDevice(24 * MiB);
    fs.symlinkSync(loop.device, path.join(fx.dirs['local-block'], 'disk1'));

    await fx.pass();

    const pv = (await fx.serverPv(fx.pvName('local-block', 'disk1')))!;
    expect(pv.spec).toMatchObject({
      volumeMode: 'Block',
      capacity: { storage: '24Mi' },
      local: { path: '/mnt/host/local-block/disk1' },
      storageClassName: 'local-block',
    });
    expect(pv.spec!.local!.fsType).toBeUndefined();
  });

  test('a symlink to a block device in a Filesystem class becomes a Filesystem PV with the class fsType', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-fs': { fsType: 'ext4' } } });
    const loop = createLoopDevice(20 * MiB);
    fs.symlinkSync(loop.device, path.join(dir(), 'disk1'));

    await fx.pass();

    expect((await fx.serverPv(fx.pvName('local-fs', 'disk1')))!.spec).toMatchObject({
      volumeMode: 'Filesystem',
      capacity: { storage: '20Mi' },
      local: { path: '/mnt/host/local-fs/disk1', fsType: 'ext4' },
    });
  });

  test('a created PV carries every field upstream writes, from the config, the Node and the StorageClass', async () => {
    fx = await ControllerFixture.start({
      classes: { 'local-fs': { storageClass: { reclaimPolicy: 'Retain', mountOptions: ['noatime', 'nodiscard'] } } },
      nodeLabels: { 'topology.kubernetes.io/zone': 'zone-a', 'example.com/rack': 'r1', 'example.com/unused': 'x' },
      config: {
        nodeLabelsForPV: ['topology.kubernetes.io/zone', 'example.com/rack', 'example.com/not-on-the-node'],
        labelsForPV: { 'example.com/rack': 'from-config', 'team': 'storage' },
      },
    });
    const mountPoint = path.join(dir(), 'vol1');
    makeMountPoint(mountPoint);
    const name = fx.pvName('local-fs', 'vol1');
    const node = await fx.server.get('v1', 'Node', NODE_NAME);

    await fx.pass();

    const pv = (await fx.serverPv(name))!;
    const mount = (await readMountTable()).entries.filter((e) => e.mountPoint === mountPoint).pop()!;
    expect(pv.metadata!.annotations).toEqual({
      [PROVISIONED_BY_ANNOTATION]: `local-volume-provisioner-${NODE_NAME}-${node.metadata.uid}`,
      [VOLUME_IDENTITY_ANNOTATION]: await mountIdentity(mount),
    });
    expect(pv.metadata!.finalizers).toEqual(['kubernetes.io/pv-protection']);
    expect(pv.metadata!.labels).toEqual({
      'topology.kubernetes.io/zone': 'zone-a',
      'example.com/rack': 'from-config',
      'team': 'storage',
      [NODE_LABEL]: NODE_NAME,
    });
    expect(pv.spec).toEqual(expect.objectContaining({
      capacity: { storage: formatBinaryQuantity(roundDownCapacity(filesystemSize(mountPoint))) },
      local: { path: '/mnt/host/local-fs/vol1' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'local-fs',
      persistentVolumeReclaimPolicy: 'Retain',
      volumeMode: 'Filesystem',
      mountOptions: ['noatime', 'nodiscard'],
      nodeAffinity: {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_HOSTNAME] }] }] },
      },
    }));
  });

  test('with useNodeNameOnly the provisioned-by annotation names the node only, and the PV name is upstream\'s', async () => {
    fx = await ControllerFixture.start({ config: { useNodeNameOnly: true } });
    makeMountPoint(path.join(dir(), 'vol1'));
    await fx.pass();
    // The Go provisioner's name: FNV-1a (32 bit) of entry + node + class, hex, not zero-padded.
    const pv = (await fx.serverPv(`local-pv-${referenceFnv1a32(`vol1${NODE_NAME}local-fs`).toString(16)}`))!;
    expect(pv).toBeDefined();
    expect(pv.metadata!.annotations![PROVISIONED_BY_ANNOTATION]).toBe(`local-volume-provisioner-${NODE_NAME}`);
  });

  test('a class whose StorageClass does not exist creates nothing and says which class to create', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-fs': { storageClass: false } } });
    makeMountPoint(path.join(dir(), 'vol1'));
    expect((await fx.pass()).created).toEqual([]);
    const [event] = await fx.recordedEvents('StorageClassMissing');
    expect(event.message).toContain('StorageClass "local-fs" does not exist');
  });
});
