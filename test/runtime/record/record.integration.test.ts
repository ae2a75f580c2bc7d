/**
 * The node's volume record against an administrator's hand and the agent's absence:
 * whatever becomes of a PV (finalizers stripped while the agent is down, a Retain PV
 * deleted by hand, a claimRef cleared), a volume a tenant used is cleaned or held,
 * never offered with the tenant's data. Directory dialect, real mount points, the
 * agent stopped and started anew over the same server and the same state directory.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { runVolumesCommand } from '../../../src/runtime/record/volumes-command';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount } from '../../support/privileged';
import { ControllerFixture, eventually, FixtureOptions } from '../static/fixture';

describePrivileged('the volume record, whatever becomes of a used volume\'s PV', () => {
  let server: Kubernetes | undefined;
  let fx: ControllerFixture | undefined;
  let stateDir: string;
  let dirs: Record<string, string> | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
    await server?.reset();
    server = undefined;
    dirs = undefined;
  });
  afterAll(cleanupPrivileged);

  /** This node's agent, started anew: same server, discovery directories and state directory as the last one. */
  async function agent(options: FixtureOptions = {}): Promise<ControllerFixture> {
    const first = server === undefined;
    if (first) stateDir = makeTempDir('lvp-state-');
    server ??= await Kubernetes.forSuite({ controllers: true });
    fx = await ControllerFixture.start({ ...options, server, seed: first, mountDirs: dirs, stateDir });
    dirs = { ...dirs, ...fx.dirs };
    return fx;
  }

  /** A mount point with a PV, bound by a tenant who wrote to it; returns the PV's name and UID and the volume's directory. */
  async function usedVolume(entry: string): Promise<{ name: string; uid: string; dir: string; hostPath: string }> {
    const dir = path.join(fx!.dirs['local-fs'], entry);
    makeMountPoint(dir);
    await fx!.pass();
    const name = fx!.pvName('local-fs', entry);
    const pv = await fx!.waitForPv(name, { phase: 'Available' });
    await fx!.bind(name);
    await fx!.waitForPv(name, { phase: 'Bound' });
    fs.writeFileSync(path.join(dir, 'secret'), `the tenant's data on ${entry}`);
    // The agent sees it used: its record line is dirty from now on.
    await fx!.pass();
    return { name, uid: pv.metadata!.uid!, dir, hostPath: pv.spec!.local!.path };
  }

  async function stripFinalizersAndDelete(name: string): Promise<void> {
    await fx!.core.patchPersistentVolume({ name, body: { metadata: { finalizers: null } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await fx!.core.deletePersistentVolume({ name });
    await eventually(async () => await fx!.serverPv(name) === undefined, `PV ${name} is gone from the server`);
  }

  test('finalizers stripped and the PV deleted while the agent is down: the volume is cleaned before it is offered again', async () => {
    await agent();
    const { name, uid, dir } = await usedVolume('vol1');
    await fx!.stop();
    // While no agent runs, the administrator deletes the claim, strips the PV's finalizers and deletes it.
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: `claim-${name}`, namespace: 'default' });
    await stripFinalizersAndDelete(name);

    await agent();
    await fx!.pass();
    // Upstream would offer it now, with the tenant's file in it; the record has it cleaned first.
    expect(await fx!.serverPv(name)).toBeUndefined();
    await fx!.passUntilCreated(name);
    const again = await fx!.waitForPv(name, { phase: 'Available' });
    expect(again.metadata!.uid).not.toBe(uid);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect((await fx!.recordedEvents('CleanupStarted')).map((e) => e.message)).toEqual([expect.stringContaining(`PV ${name} was deleted before its volume was cleaned`)]);
  });

  test('a Retain PV deleted by hand keeps its data and is never offered; "volumes reclaim" has it cleaned and offered', async () => {
    await agent({ classes: { 'local-fs': { storageClass: { reclaimPolicy: 'Retain' } } } });
    const { name, dir, hostPath } = await usedVolume('vol1');
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: `claim-${name}`, namespace: 'default' });
    await fx!.waitForPv(name, { phase: 'Released' });
    await stripFinalizersAndDelete(name);

    for (let i = 0; i < 3; i++) {
      expect((await fx!.pass()).created).toEqual([]);
      await fx!.settle();
    }
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('the tenant\'s data on vol1');
    expect((await fx!.recordedEvents('VolumeHeldDirty')).map((e) => e.message)).toEqual([expect.stringContaining(`volumes reclaim ${hostPath}`)]);
    expect(await fx!.metric('local_volume_provisioner_volume_state', { state: 'held-dirty', persistentvolume: '', path: hostPath, storageclass: 'local-fs' }))
      .toBe(1);

    expect(await runVolumesCommand({ stateDir, action: 'reclaim', volume: hostPath })).toContain(`${hostPath} `);
    await fx!.passUntilCreated(name);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('"volumes accept" offers a held volume as it is, data and all, and says so in the record', async () => {
    await agent({ classes: { 'local-fs': { storageClass: { reclaimPolicy: 'Retain' } } } });
    const { name, dir, hostPath } = await usedVolume('vol1');
    await fx!.stop();
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: `claim-${name}`, namespace: 'default' });
    await stripFinalizersAndDelete(name);
    await agent({ classes: { 'local-fs': { storageClass: { reclaimPolicy: 'Retain' } } } });
    expect((await fx!.pass()).created).toEqual([]);

    await runVolumesCommand({ stateDir, action: 'accept', volume: hostPath });
    expect((await fx!.pass()).created).toEqual([name]);
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('the tenant\'s data on vol1');
    expect(await runVolumesCommand({ stateDir, action: 'list' })).toMatch(new RegExp(`^offered +${hostPath} `, 'm'));
  });

  test('a claimRef cleared by an administrator: the PV that turned Available is withdrawn, its volume cleaned, then offered anew', async () => {
    // Legacy mode: nothing holds the Released PV, so the administrator's patch is what the agent sees next.
    await agent({ mode: 'legacy' });
    const { name, uid, dir } = await usedVolume('vol1');
    await fx!.stop();
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: `claim-${name}`, namespace: 'default' });
    await eventually(async () => (await fx!.serverPv(name))?.status?.phase === 'Released', 'the PV is Released');
    await fx!.core.patchPersistentVolume({ name, body: { spec: { claimRef: null } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await eventually(async () => (await fx!.serverPv(name))?.status?.phase === 'Available', 'the PV is Available again, with the tenant\'s data');

    await agent({ mode: 'legacy' });
    await fx!.pass();
    await fx!.waitForPvGone(name, uid);
    expect((await fx!.recordedEvents('VolumeWithdrawn')).map((e) => e.involvedObject.uid)).toEqual([uid]);
    await fx!.passUntilCreated(name);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('a Released PV of a class removed while the agent was down, deleted by hand without any finalizer: held, then cleaned once the class is back', async () => {
    // Legacy mode (the chart's RBAC): no finalizer ever holds the PV.
    await agent({ mode: 'legacy' });
    const { name, dir } = await usedVolume('vol1');
    await fx!.stop();
    await agent({ mode: 'legacy', classes: { other: {} } });
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: `claim-${name}`, namespace: 'default' });
    await eventually(async () => (await fx!.serverPv(name))?.status?.phase === 'Released', 'the PV is Released');
    await fx!.core.deletePersistentVolume({ name });
    await eventually(async () => await fx!.serverPv(name) === undefined, 'the PV is gone at once: nothing holds it');
    await fx!.pass();
    await fx!.settle();
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('the tenant\'s data on vol1');
    expect((await fx!.recordedEvents('VolumeHeldDirty')).map((e) => e.message)).toEqual([expect.stringContaining('StorageClass "local-fs" is not configured')]);

    await fx!.stop();
    await agent({ mode: 'legacy' });
    await fx!.passUntilCreated(name);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('a PV an administrator reserved (claimRef by hand, no binder annotation) whose claim uid is removed while the agent is down is cleaned, not let go', async () => {
    await agent();
    const dir = path.join(fx!.dirs['local-fs'], 'vol1');
    makeMountPoint(dir);
    await fx!.pass();
    const name = fx!.pvName('local-fs', 'vol1');
    const pv = await fx!.waitForPv(name, { phase: 'Available' });
    const claim = await fx!.core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: {
        metadata: { name: 'reserved' },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'local-fs', volumeName: name, resources: { requests: { storage: '1Mi' } } },
      },
    });
    await fx!.core.patchPersistentVolume({ name, body: { spec: { claimRef: { namespace: 'default', name: 'reserved', uid: claim.metadata!.uid } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await fx!.waitForPv(name, { phase: 'Bound' });
    fs.writeFileSync(path.join(dir, 'secret'), 'the reserved tenant\'s data');
    await fx!.pass();
    await fx!.stop();
    // While the agent is down: the claimRef's uid goes, then the PV is deleted (our finalizer holds it).
    await fx!.core.patchPersistentVolume({ name, body: { spec: { claimRef: { uid: null } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await fx!.core.deletePersistentVolume({ name });

    await agent();
    await fx!.pass();
    await fx!.settle();
    await fx!.waitForPvGone(name, pv.metadata!.uid);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect((await fx!.recordedEvents('CleanupStarted')).map((e) => e.involvedObject.name)).toEqual([name]);
  });

  test('a bind mount of a subdirectory of an offered filesystem is refused, naming both paths: one piece of storage, one PV', async () => {
    await agent();
    const loop = createLoopDevice(32 * 1024 * 1024);
    mkfsExt4(loop.device);
    const disk = path.join(fx!.dirs['local-fs'], 'vol1');
    mount(loop.device, disk);
    fs.rmdirSync(path.join(disk, 'lost+found'));
    expect((await fx!.pass()).created).toEqual([fx!.pvName('local-fs', 'vol1')]);
    fs.mkdirSync(path.join(disk, 'sub'));
    mount(path.join(disk, 'sub'), path.join(fx!.dirs['local-fs'], 'vol2'), { bind: true });

    expect((await fx!.pass()).created).toEqual([]);
    expect((await fx!.recordedEvents('VolumeOverlaps')).map((e) => e.message)).toEqual([
      expect.stringMatching(new RegExp(`^${fx!.config.storageClassMap['local-fs'].hostDir}/vol2 .* shares storage with ${fx!.config.storageClassMap['local-fs'].hostDir}/vol1 `)),
    ]);
  });

  test('a record file corrupted by hand: nothing is offered or cleaned, the Event names the file; repaired, the agent goes on', async () => {
    await agent();
    const { name, dir } = await usedVolume('vol1');
    const [file] = fs.readdirSync(path.join(stateDir, 'volumes'));
    const good = fs.readFileSync(path.join(stateDir, 'volumes', file));
    fs.writeFileSync(path.join(stateDir, 'volumes', file), '{"identity": "half a li');
    makeMountPoint(path.join(fx!.dirs['local-fs'], 'vol2'));
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: `claim-${name}`, namespace: 'default' });
    await fx!.waitForPv(name, { phase: 'Released' });

    expect((await fx!.pass()).created).toEqual([]);
    await fx!.settle();
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('the tenant\'s data on vol1');
    expect((await fx!.recordedEvents('VolumeRecordUnusable')).map((e) => e.message)).toEqual([expect.stringContaining(file)]);
    expect(await fx!.metric('local_volume_provisioner_volume_record_usable')).toBe(0);

    fs.writeFileSync(path.join(stateDir, 'volumes', file), good);
    await fx!.passUntilCreated(fx!.pvName('local-fs', 'vol2'));
    await fx!.waitForPvGone(name);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('the state directory emptied by hand: nothing whose data is unknown is offered, an empty volume is', async () => {
    await agent();
    const { name, dir } = await usedVolume('vol1');
    const empty = path.join(fx!.dirs['local-fs'], 'vol2');
    await fx!.stop();
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: `claim-${name}`, namespace: 'default' });
    await stripFinalizersAndDelete(name);
    fs.rmSync(stateDir, { recursive: true });
    fs.mkdirSync(stateDir);
    makeMountPoint(empty);

    await agent();
    const { created } = await fx!.pass();
    await fx!.settle();
    expect(created).toEqual([fx!.pvName('local-fs', 'vol2')]);
    expect(await fx!.serverPv(name)).toBeUndefined();
    expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('the tenant\'s data on vol1');
    expect((await fx!.recordedEvents('VolumeHoldsUnknownData')).map((e) => e.message)).toEqual([expect.stringContaining('"secret"')]);
  });
});
