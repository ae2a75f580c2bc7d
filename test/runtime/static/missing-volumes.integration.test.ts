/**
 * Volumes that go away under their PV (a disk pulled, a mount gone), through
 * the DirectoryController with a short grace period.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ControllerFixture } from './fixture';
import type { ProvisionerConfig } from '../../../src/config';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, mkfsExt4, mount, unmount } from '../../support/privileged';

const GRACE_MS = 300;

describePrivileged('missing volumes through the controller', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);

  async function provision(className: string, entry: string) {
    const dir = path.join(fx!.dirs[className], entry);
    makeMountPoint(dir);
    await fx!.pass();
    return { pv: await fx!.waitForPv(fx!.pvName(className, entry), { phase: 'Available' }), dir };
  }

  test('an Available PV whose mount is gone is deleted once the grace period has passed, not before', async () => {
    fx = await ControllerFixture.start({ config: { missingVolumeGracePeriod: GRACE_MS } });
    const { pv, dir } = await provision('local-fs', 'vol1');
    const name = pv.metadata!.name!;
    unmount(dir);

    await fx.pass();
    expect((await fx.serverPv(name))!.metadata!.uid).toBe(pv.metadata!.uid);
    expect(await fx.metrics.exposition()).toMatch(new RegExp(`volume_state\\{state="missing",persistentvolume="${name}"`));

    await new Promise((r) => setTimeout(r, GRACE_MS + 50));
    await fx.pass();
    await fx.waitForPvGone(name);
    // Still not a mount point: nothing is offered in its place.
    expect((await fx.pass()).created).toEqual([]);
  });

  test('a missing Available PV that a claim has bound meanwhile is not deleted, even while the cache still says Available', async () => {
    fx = await ControllerFixture.start({ config: { missingVolumeGracePeriod: GRACE_MS } });
    const { pv, dir } = await provision('local-fs', 'vol1');
    const name = pv.metadata!.name!;
    unmount(dir);
    await fx.pass();
    // The cache's watch is down (it keeps failing), so it does not see the claim bind the PV.
    fx.server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', code: 503, count: 1000 });
    fx.server.faults.failNext({ verb: 'list', resource: 'persistentvolumes', code: 503, count: 1000 });
    // Ended by the proxy, a watch passes on nothing more from here.
    fx.server.faults.closeWatches();
    await fx.bind(name);
    expect(fx.cache.get(name)!.status!.phase).toBe('Available');

    await new Promise((r) => setTimeout(r, GRACE_MS + 50));
    await fx.pass();

    expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Bound' } });
    expect((await fx.serverPv(name))!.metadata!.deletionTimestamp).toBeUndefined();
    fx.server.faults.clear();
  });

  test('an Available PV whose entry the configuration no longer accepts is left alone (namePattern narrowed, class removed, hostDir changed)', async () => {
    fx = await ControllerFixture.start({ config: { missingVolumeGracePeriod: 0 } });
    const { pv } = await provision('local-fs', 'vol1');
    const name = pv.metadata!.name!;
    const classConfig = fx.config.storageClassMap['local-fs'];
    const changes: ProvisionerConfig[] = [
      { ...fx.config, storageClassMap: { 'local-fs': { ...classConfig, namePattern: 'disk*' } } },
      { ...fx.config, storageClassMap: {} },
      { ...fx.config, storageClassMap: { 'local-fs': { ...classConfig, hostDir: '/mnt/elsewhere' } } },
    ];
    for (const config of changes) {
      await fx.pass(config);
      await fx.pass(config);
      expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Available' } });
      expect((await fx.serverPv(name))!.metadata!.deletionTimestamp).toBeUndefined();
    }
    const warnings = await fx.recordedEvents('VolumeNotConfigured');
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings[0]).toMatchObject({ type: 'Warning', involvedObject: { kind: 'PersistentVolume', name } });
  });

  test('a mount that comes back within the grace period keeps its PV', async () => {
    fx = await ControllerFixture.start({ config: { missingVolumeGracePeriod: GRACE_MS } });
    const { pv, dir } = await provision('local-fs', 'vol1');
    unmount(dir);
    await fx.pass();
    makeMountPoint(dir);
    await new Promise((r) => setTimeout(r, GRACE_MS + 50));
    await fx.pass();
    await fx.pass();
    expect((await fx.serverPv(pv.metadata!.name!))!.metadata!.uid).toBe(pv.metadata!.uid);
  });

  test('a Released PV whose volume is gone gets a VolumeMissing Warning and stays', async () => {
    fx = await ControllerFixture.start({
      classes: { 'local-retain': { storageClass: { reclaimPolicy: 'Retain' } } },
      config: { missingVolumeGracePeriod: GRACE_MS },
    });
    const { pv, dir } = await provision('local-retain', 'vol1');
    const name = pv.metadata!.name!;
    await fx.release(name);
    unmount(dir);
    fs.rmdirSync(dir);

    await fx.pass();
    await new Promise((r) => setTimeout(r, GRACE_MS + 50));
    await fx.pass();
    await fx.settle();

    expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
    const [warning] = await fx.recordedEvents('VolumeMissing');
    expect(warning).toMatchObject({ type: 'Warning', involvedObject: { kind: 'PersistentVolume', name } });
    expect(warning.message).toContain('/mnt/host/local-retain/vol1');
  });

  test('a Released Delete PV whose mount is gone is not cleaned through the directory left beneath it, and stays', async () => {
    fx = await ControllerFixture.start({ config: { missingVolumeGracePeriod: GRACE_MS } });
    // A real disk: an ext4 loop device mounted at the entry.
    const disk = createLoopDevice(16 * 1024 * 1024);
    mkfsExt4(disk.device);
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    mount(disk.device, dir);
    fs.rmSync(path.join(dir, 'lost+found'), { recursive: true });
    await fx.pass();
    const pv = await fx.waitForPv(fx.pvName('local-fs', 'vol1'), { phase: 'Available' });
    const name = pv.metadata!.name!;
    fs.writeFileSync(path.join(dir, 'user-data'), 'on the disk');
    await fx.release(name);
    // The disk goes away; the empty mount-point directory stays behind on the node's root filesystem.
    unmount(dir);
    fs.writeFileSync(path.join(dir, 'under-the-mount'), 'on the root filesystem');

    await fx.pass();
    await fx.settle();
    await fx.pass();
    await fx.settle();

    // Letting the PV go now would let the disk, once back, be offered with the old user's data on it.
    expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
    expect(fs.readdirSync(dir)).toEqual(['under-the-mount']);
    const [missing] = await fx.recordedEvents('VolumeMissing');
    expect(missing.message).toContain(`"${dir}" is no longer a mount point`);
    mount(disk.device, dir);
    expect(fs.readdirSync(dir)).toEqual(['user-data']);

    // The disk is back: it is cleaned, and then offered again under a new PV.
    await fx.waitForRetry(pv.metadata!.uid!);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
