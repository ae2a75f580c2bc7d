/**
 * A Released PV deleted by someone else before we cleaned it (an admin's
 * `kubectl delete pv`): upstream offers its volume again with the old user's
 * data. We clean the volume first, then offer it. With our finalizer the PV
 * itself waits (data-safety tests); here, in legacy mode (the Go provisioner's
 * RBAC, no finalizer), the agent remembers the volume while it runs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ControllerFixture } from './fixture';
import { cleanupPrivileged, describePrivileged, makeMountPoint } from '../../support/privileged';

describePrivileged('a Released PV deleted before its cleanup', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);

  test('in legacy mode its volume is cleaned before discovery offers it again', async () => {
    fx = await ControllerFixture.start({ config: { maxConcurrentCleanups: 1 }, mode: 'legacy' });
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(dir);
    await fx.pass();
    const name = fx.pvName('local-fs', 'vol1');
    const first = await fx.waitForPv(name, { phase: 'Available' });
    fs.writeFileSync(path.join(dir, 'secret'), 'the last user\'s data');
    await fx.release(name);

    // Hold the only cleanup slot, so our cleanup waits in the queue while the PV is deleted.
    let openSlot!: () => void;
    const slotHeld = fx.limiter.run(() => new Promise<void>((resolve) => (openSlot = resolve)));
    await fx.pass();
    await fx.core.deletePersistentVolume({ name });
    await fx.waitForPvGone(name, first.metadata!.uid);
    await fx.waitForCache((pvs) => pvs.length === 0, 'the deleted PV to leave the cache');
    openSlot();
    await slotHeld;
    await fx.settle();

    // The queued cleanup found its PV gone; the volume still holds data, so it is not offered. It is cleaned when the cleanup is
    // tried again: at this pass already if the cleanup's backoff has passed meanwhile (a slow machine), else once it has.
    await fx.pass();
    await fx.settle();
    expect(await fx.serverPvNames()).toEqual([]);
    if (fs.existsSync(path.join(dir, 'secret'))) {
      await fx.waitForRetry(first.metadata!.uid!);
      await fx.pass();
      await fx.settle();
    }
    expect(fs.readdirSync(dir)).toEqual([]);

    await fx.pass();
    const offered = await fx.waitForPv(name, { phase: 'Available' });
    expect(offered.metadata!.uid).not.toBe(first.metadata!.uid);
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
