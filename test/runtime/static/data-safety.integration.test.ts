/**
 * No cleanup ever touches another tenant's data, and no volume is offered with
 * old data (docs/operations.md, "What the agent guarantees"): each test plays one
 * of the ways a node gets there — a device name that moves, a claim bound during a
 * cleanup, a PV deleted while the agent is down, one disk behind two names, a
 * volume still in use, a claim racing a missing-volume delete — through the
 * directory dialect's controller, on real loop devices, filesystems and mounts.
 * (The symlink swapped in during a walk is in filesystem-cleaner.test.ts, kill -9
 * and two agents on one node in bin.integration.test.ts.)
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CoreV1Event, PatchStrategy, setHeaderOptions, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { ControllerFixture, eventually, FixtureOptions, NODE_NAME } from './fixture';
import { CLEANUP_FINALIZER } from '../../../src/runtime/well-known';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, LoopDevice, makeMountPoint, makeTempDir, mkfsExt4, mount, unmount } from '../../support/privileged';

const MiB = 1024 * 1024;

/** A cleaner that zeroes the first 64 KiB of what it is given: enough to destroy a marker there. */
const ZERO_CLEANER = ['sh', '-c', 'dd if=/dev/zero of="$LOCAL_PV_BLKDEVICE" bs=65536 count=1 conv=notrunc,fsync status=none'];
const MARK = 'TENANT-DATA';

function markDisk(loop: LoopDevice): void {
  const fd = fs.openSync(loop.device, 'r+');
  fs.writeSync(fd, MARK, 0);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
}

function diskMarked(loop: LoopDevice): boolean {
  const fd = fs.openSync(loop.device, 'r');
  const b = Buffer.alloc(MARK.length);
  fs.readSync(fd, b, 0, b.length, 0);
  fs.closeSync(fd);
  return b.toString() === MARK;
}

/** Re-points a link at another target in one step, as udev does. */
function repoint(link: string, target: string): void {
  const temp = `${link}.new`;
  fs.symlinkSync(target, temp);
  fs.renameSync(temp, link);
}

describePrivileged('data safety', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);

  const blockClass = (extra: object = {}): FixtureOptions['classes'] => ({ 'local-block': { volumeMode: 'Block', blockCleanerCommand: ZERO_CLEANER, ...extra } });

  /** A link to a new loop device in the class directory, with an Available PV. */
  async function linkedDisk(entry: string, className = 'local-block'): Promise<{ loop: LoopDevice; link: string; pv: V1PersistentVolume }> {
    const loop = createLoopDevice(8 * MiB);
    const link = path.join(fx!.dirs[className], entry);
    fs.symlinkSync(loop.device, link);
    await fx!.pass();
    return { loop, link, pv: await fx!.waitForPv(fx!.pvName(className, entry), { phase: 'Available' }) };
  }

  /** Binds a claim to the PV and runs a pass while it is Bound (which holds it with our finalizer). */
  async function bound(name: string): Promise<string> {
    const claim = await fx!.bind(name);
    await fx!.waitForPv(name, { phase: 'Bound' });
    await fx!.pass();
    await eventually(async () => (await fx!.serverPv(name))?.metadata?.finalizers?.includes(CLEANUP_FINALIZER) === true, `PV ${name} holds our finalizer`);
    return claim;
  }

  async function deleteClaim(claim: string): Promise<void> {
    await fx!.core.deleteNamespacedPersistentVolumeClaim({ name: claim, namespace: 'default' });
  }

  /** A disk with a PV, bound, written to by its tenant (marked), then Released by the claim's deletion. */
  async function releasedDisk(entry: string): Promise<{ disk: { loop: LoopDevice; pv: V1PersistentVolume }; name: string }> {
    const disk = await linkedDisk(entry);
    const name = disk.pv.metadata!.name!;
    const claim = await bound(name);
    markDisk(disk.loop);
    await deleteClaim(claim);
    await fx!.waitForPv(name, { phase: 'Released' });
    return { disk, name };
  }

  describe('a device whose name now leads to another disk', () => {
    test('a Released PV whose link was moved to a Bound tenant\'s disk is not wiped: a VolumeIdentityMismatch Warning, a metric, the PV kept', async () => {
      fx = await ControllerFixture.start({ classes: blockClass() });
      const mine = await linkedDisk('disk1');
      const tenant = await linkedDisk('disk2');
      const claim = await bound(mine.pv.metadata!.name!);
      await bound(tenant.pv.metadata!.name!);
      markDisk(tenant.loop);
      // A re-plug: the name disk1 now leads to the tenant's disk.
      repoint(mine.link, tenant.loop.device);
      await deleteClaim(claim);
      await fx.waitForPv(mine.pv.metadata!.name!, { phase: 'Released' });

      for (let i = 0; i < 3; i++) {
        await fx.pass();
        await fx.settle();
      }

      expect(diskMarked(tenant.loop)).toBe(true);
      expect((await fx.serverPv(mine.pv.metadata!.name!))?.metadata?.uid).toBe(mine.pv.metadata!.uid);
      expect((await fx.serverPv(tenant.pv.metadata!.name!))?.status?.phase).toBe('Bound');
      const warnings = await fx.recordedEvents('VolumeIdentityMismatch');
      expect(warnings.map((e) => e.involvedObject.name)).toContain(mine.pv.metadata!.name);
      expect(await fx.metrics.exposition()).toMatch(/^local_volume_provisioner_cleanup_refused_total\{reason="identity-mismatch"\} [1-9]/m);
    });

    test('a Bound disk that reappears under a new name is neither wiped nor offered as a second PV', async () => {
      fx = await ControllerFixture.start({ classes: blockClass() });
      const tenant = await linkedDisk('disk2');
      await bound(tenant.pv.metadata!.name!);
      markDisk(tenant.loop);
      // After a reboot the disk shows up under another name.
      fs.unlinkSync(tenant.link);
      fs.symlinkSync(tenant.loop.device, path.join(fx.dirs['local-block'], 'disk9'));

      await fx.pass();
      await fx.settle();

      expect(await fx.serverPvNames()).toEqual([tenant.pv.metadata!.name]);
      expect(diskMarked(tenant.loop)).toBe(true);
      const [warning] = await fx.recordedEvents('DuplicatePath');
      expect(warning.message).toContain(`as PV "${tenant.pv.metadata!.name}"`);
    });

    test('a Released Filesystem PV whose mount point now shows another filesystem is not emptied', async () => {
      fx = await ControllerFixture.start();
      const dir = path.join(fx.dirs['local-fs'], 'vol1');
      const mine = createLoopDevice(32 * MiB);
      const theirs = createLoopDevice(32 * MiB);
      mkfsExt4(mine.device);
      mkfsExt4(theirs.device);
      mount(mine.device, dir);
      await fx.pass();
      const name = fx.pvName('local-fs', 'vol1');
      await fx.waitForPv(name, { phase: 'Available' });
      const claim = await bound(name);
      // After a reboot the mount at vol1 is another disk (an fstab line naming /dev/sdX).
      unmount(dir);
      mount(theirs.device, dir);
      fs.writeFileSync(path.join(dir, 'their-data'), 'another tenant\'s');
      await deleteClaim(claim);
      await fx.waitForPv(name, { phase: 'Released' });

      for (let i = 0; i < 3; i++) {
        await fx.pass();
        await fx.settle();
      }

      expect(fs.readFileSync(path.join(dir, 'their-data'), 'utf8')).toBe('another tenant\'s');
      expect(await fx.serverPv(name)).toBeDefined();
      expect((await fx.recordedEvents('VolumeIdentityMismatch')).length).toBeGreaterThan(0);
    });
  });

  describe('a claim bound while a volume is cleaned', () => {
    test('finalizer mode: a PV being cleaned cannot be bound, even with its claimRef cleared; it is offered again only once clean', async () => {
      const gate = path.join(makeTempDir(), 'gate');
      // A slow cleaner: it waits for the test to open the gate, then zeroes the disk.
      const slow = ['sh', '-c', `while [ ! -e ${gate} ]; do sleep 0.05; done; ${ZERO_CLEANER[2]}`];
      fx = await ControllerFixture.start({ classes: blockClass({ blockCleanerCommand: slow }) });
      const { disk, name } = await releasedDisk('disk1');
      await fx.pass();
      await eventually(async () => (await fx!.serverPv(name))?.metadata?.deletionTimestamp !== undefined, 'the Released PV is being deleted');

      // An administrator clears claimRef to reuse the PV, and a new claim names it.
      await fx.core.patchPersistentVolume({ name, body: [{ op: 'remove', path: '/spec/claimRef' }] },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch));
      // The real PV binder refuses a claim naming it, and says so on the claim.
      await fx.server.create({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'new-tenant', namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } }, storageClassName: 'local-block', volumeMode: 'Block', volumeName: name },
      });
      const refusal = async () => (await fx!.server.list<CoreV1Event>('v1', 'Event', 'default'))
        .find((e) => e.involvedObject.name === 'new-tenant' && e.reason === 'VolumeMismatch');
      await eventually(async () => (await refusal()) !== undefined, 'the binder refuses the claim');
      expect((await refusal())!.message).toContain('the volume is marked for deletion');
      expect((await fx.server.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', 'new-tenant', 'default'))!.status!.phase).toBe('Pending');
      expect((await fx.serverPv(name))!.spec!.claimRef).toBeUndefined();

      fs.writeFileSync(gate, '');
      await fx.settle();
      await fx.waitForPvGone(name, disk.pv.metadata!.uid);
      expect(diskMarked(disk.loop)).toBe(false);
      expect((await fx.pass()).created).toEqual([name]);
    });

    test('legacy mode: a PV rebound during its cleanup is never deleted (resourceVersion precondition)', async () => {
      const gate = path.join(makeTempDir(), 'gate');
      const slow = ['sh', '-c', `while [ ! -e ${gate} ]; do sleep 0.05; done; ${ZERO_CLEANER[2]}`];
      fx = await ControllerFixture.start({ classes: blockClass({ blockCleanerCommand: slow }), mode: 'legacy' });
      const disk = await linkedDisk('disk1');
      const name = disk.pv.metadata!.name!;
      await fx.release(name);
      await fx.pass();
      await eventually(async () => fx!.deleter.isCleaning(name), 'the cleanup runs');

      await fx.core.patchPersistentVolume({ name, body: [{ op: 'remove', path: '/spec/claimRef' }] },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch));
      await eventually(async () => (await fx!.serverPv(name))?.status?.phase === 'Available', 'the PV is Available again');
      await fx.bind(name, 'new-tenant');

      fs.writeFileSync(gate, '');
      await fx.settle();
      expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: disk.pv.metadata!.uid }, status: { phase: 'Bound' } });
      expect((await fx.serverPv(name))?.spec?.claimRef?.name).toBe('new-tenant');
    });
  });

  describe('a PV deleted while the agent is down', () => {
    let server: Kubernetes | undefined;
    let stateDir: string | undefined;
    afterEach(async () => {
      await fx?.stop();
      fx = undefined;
      await server?.reset();
      server = undefined;
      stateDir = undefined;
    });

    /** This node's agent, over a server the test owns (so the agent can be stopped and started anew, remembering nothing). */
    async function agent(options: FixtureOptions, dirs?: Record<string, string>): Promise<ControllerFixture> {
      const first = server === undefined;
      server ??= await Kubernetes.forSuite({ controllers: true });
      // The node's volume record is a host directory: a restarted agent finds it as the last one left it.
      fx = await ControllerFixture.start({ ...options, server, seed: first, mountDirs: dirs, stateDir: stateDir ??= makeTempDir('lvp-state-') });
      return fx;
    }

    test('a Released volume is cleaned before it is offered again, whoever deleted its PV and whenever', async () => {
      fx = await agent({ classes: blockClass() });
      const { dirs } = fx;
      // The agent is gone (crashed, or stopped for an upgrade) once the claim has gone, and an administrator deletes the PV.
      const { disk, name } = await releasedDisk('disk1');
      const core = fx.core;
      await fx.stop();
      await core.deletePersistentVolume({ name });
      const stored = () => server!.get<V1PersistentVolume>('v1', 'PersistentVolume', name);
      await eventually(async () => (await stored())?.metadata?.deletionTimestamp !== undefined, 'the PV is being deleted');
      // Held by our finalizer, it is not offered again by anyone meanwhile.
      expect((await stored())?.metadata?.finalizers).toContain(CLEANUP_FINALIZER);

      fx = await agent({ classes: blockClass() }, dirs);
      await fx.pass();
      await fx.settle();
      await fx.waitForPvGone(name, disk.pv.metadata!.uid);
      expect(diskMarked(disk.loop)).toBe(false);
      const again = await fx.pass();
      expect(again.created).toEqual([name]);
    });

    test('a PV of a class removed from the configuration is held until the class is back, then cleaned', async () => {
      fx = await agent({});
      const { dirs } = fx;
      const dir = path.join(dirs['local-fs'], 'vol1');
      makeMountPoint(dir);
      await fx.pass();
      const name = fx.pvName('local-fs', 'vol1');
      const pv = await fx.waitForPv(name, { phase: 'Available' });
      const claim = await bound(name);
      fs.writeFileSync(path.join(dir, 'secret'), 'the last user\'s');
      await deleteClaim(claim);
      await fx.waitForPv(name, { phase: 'Released' });

      // The class is taken out of the configuration, and the Released PV deleted meanwhile.
      await fx.stop();
      await agent({ classes: { other: {} } }, dirs);
      await fx.core.deletePersistentVolume({ name });
      for (let i = 0; i < 2; i++) {
        await fx.pass();
        await fx.settle();
      }
      expect((await fx.serverPv(name))?.metadata?.deletionTimestamp).toBeDefined();
      expect(fs.readFileSync(path.join(dir, 'secret'), 'utf8')).toBe('the last user\'s');
      expect((await fx.recordedEvents('CleanupRefused')).map((e) => e.message)).toEqual([expect.stringContaining('StorageClass "local-fs" is not configured')]);

      // The class comes back: its volume is cleaned, then offered as new.
      await fx.stop();
      await agent({}, dirs);
      await fx.pass();
      await fx.settle();
      await fx.waitForPvGone(name, pv.metadata!.uid);
      expect(fs.readdirSync(dir)).toEqual([]);
      expect((await fx.pass()).created).toEqual([name]);
    });
  });

  describe('one disk, one PV', () => {
    test('one device behind two links in one class gets one PV', async () => {
      fx = await ControllerFixture.start({ classes: blockClass() });
      const loop = createLoopDevice(8 * MiB);
      fs.symlinkSync(loop.device, path.join(fx.dirs['local-block'], 'by-id'));
      fs.symlinkSync(loop.device, path.join(fx.dirs['local-block'], 'by-path'));
      await fx.pass();
      expect(await fx.serverPvNames()).toHaveLength(1);
    });

    test('one device linked into two classes gets one PV', async () => {
      fx = await ControllerFixture.start({ classes: { fast: { volumeMode: 'Block' }, slow: { volumeMode: 'Block' } } });
      const loop = createLoopDevice(8 * MiB);
      fs.symlinkSync(loop.device, path.join(fx.dirs.fast, 'disk'));
      fs.symlinkSync(loop.device, path.join(fx.dirs.slow, 'disk'));
      await fx.pass();
      await fx.pass();
      expect(await fx.serverPvNames()).toHaveLength(1);
    });

    test('one filesystem mounted at two entries gets one PV', async () => {
      fx = await ControllerFixture.start();
      const shared = makeTempDir('lvp-shared-');
      mount(shared, path.join(fx.dirs['local-fs'], 'a'), { bind: true });
      mount(shared, path.join(fx.dirs['local-fs'], 'b'), { bind: true });
      await fx.pass();
      expect(await fx.serverPvNames()).toHaveLength(1);
    });

    test('two classes over one host directory, with every watch failing: three mounts, three PVs', async () => {
      const hostDir = makeTempDir('lvp-host-');
      for (const v of ['v1', 'v2', 'v3']) makeMountPoint(path.join(hostDir, v));
      // One host directory mounted into the agent at two places, with the mounts below it.
      const first = makeTempDir('lvp-first-');
      const second = makeTempDir('lvp-second-');
      for (const at of [first, second]) execFileSync('mount', ['--rbind', hostDir, at]);
      fx = await ControllerFixture.start({ classes: { a: { mountDir: first }, b: { mountDir: second } } });
      fx.server.faults.failNext({ verb: 'watch', code: 500, count: 1000 });
      fx.server.faults.closeWatches();
      for (let i = 0; i < 3; i++) await fx.pass();
      expect(await fx.serverPvNames()).toHaveLength(3);
      fx.server.faults.clear();
      for (const at of [first, second]) unmount(at);
    });
  });

  describe('a Released volume still in use', () => {
    test('a volume still mounted by a pod that did not go, with a process writing in it, is not emptied until nothing uses it', async () => {
      fx = await ControllerFixture.start();
      const dir = path.join(fx.dirs['local-fs'], 'vol1');
      makeMountPoint(dir);
      await fx.pass();
      const name = fx.pvName('local-fs', 'vol1');
      const pv = await fx.waitForPv(name, { phase: 'Available' });
      const claim = await bound(name);
      // The pod's view of the volume, and its container still writing there.
      const podDir = path.join(makeTempDir('lvp-pod-'), 'data');
      mount(dir, podDir, { bind: true });
      const writer = spawn('bash', ['-c', 'while :; do echo x >> log; sleep 0.05; done'], { cwd: podDir, stdio: 'ignore' });
      try {
        await deleteClaim(claim);
        await fx.waitForPv(name, { phase: 'Released' });
        await eventually(async () => fs.existsSync(path.join(dir, 'log')), 'the writer writes');
        await fx.pass();
        await fx.settle();
        // The refusal is reported by the next pass.
        await fx.pass();

        expect(fs.existsSync(path.join(dir, 'log'))).toBe(true);
        expect((await fx.serverPv(name))?.metadata?.uid).toBe(pv.metadata!.uid);
        const [inUse] = await fx.recordedEvents('VolumeInUse');
        expect(inUse.message).toContain(podDir);
        expect(await fx.metric('local_volume_provisioner_volume_state', {
          state: 'in-use', persistentvolume: name, path: '/mnt/host/local-fs/vol1', storageclass: 'local-fs',
        })).toBe(1);
      } finally {
        writer.kill('SIGKILL');
      }
      await new Promise((r) => writer.once('exit', r));
      unmount(podDir);

      await fx.waitForRetry(pv.metadata!.uid!);
      await fx.pass();
      await fx.settle();
      await fx.waitForPvGone(name, pv.metadata!.uid);
      expect(fs.readdirSync(dir)).toEqual([]);
    });
  });

  test('a missing volume\'s Available PV bound by a claim just before its delete is not deleted (resourceVersion precondition)', async () => {
    fx = await ControllerFixture.start({ config: { missingVolumeGracePeriod: 0 } });
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(dir);
    await fx.pass();
    const name = fx.pvName('local-fs', 'vol1');
    await fx.waitForPv(name, { phase: 'Available' });
    unmount(dir);
    // A claim binds the PV in the window between the agent's decision and its delete.
    fx.server.faults.beforeNext({ verb: 'delete', resource: 'persistentvolumes' }, async () => fx!.bind(name));

    await fx.pass();
    await fx.pass();

    expect((await fx.serverPv(name))?.status?.phase).toBe('Bound');
    expect((await fx.serverPv(name))?.metadata?.deletionTimestamp).toBeUndefined();
  });

  test('a rejected entry seen on every pass does not use up the Node\'s Event budget: a ConfigInvalid still goes out', async () => {
    fx = await ControllerFixture.start();
    for (let i = 0; i < 30; i++) fs.mkdirSync(path.join(fx.dirs['local-fs'], `stray-${i}`));
    for (let i = 0; i < 5; i++) await fx.pass();
    fx.events.warning({ apiVersion: 'v1', kind: 'Node', name: NODE_NAME, uid: NODE_NAME }, 'ConfigInvalid', 'storageClassMap.x.volumeMode: "block" is not one of Filesystem, Block');
    expect((await fx.recordedEvents('ConfigInvalid'))).toHaveLength(1);
  });
});
