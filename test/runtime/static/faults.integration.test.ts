/**
 * API failures during passes, injected by the proxy in front of the real apiserver: nothing is lost,
 * nothing duplicated, nothing wiped on an error, and each failure is retried.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ControllerFixture } from './fixture';
import { cleanupPrivileged, describePrivileged, makeMountPoint } from '../../support/privileged';

describePrivileged('API faults during controller passes', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);

  test('429 Too Many Requests with Retry-After on a PV create is waited out and the PV created once', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(fx.dirs['local-fs'], 'vol1'));
    fx.server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 429, count: 2, retryAfterSeconds: 1 });

    expect((await fx.pass()).created).toEqual([fx.pvName('local-fs', 'vol1')]);
    expect(fx.server.counters.get('create', 'persistentvolumes').requests).toBe(3);
    expect(await fx.serverPvNames()).toHaveLength(1);
  });

  test('a StorageClass that cannot be read skips its class for this pass while the other classes go on', async () => {
    fx = await ControllerFixture.start({ classes: { 'class-a': {}, 'class-b': {} } });
    makeMountPoint(path.join(fx.dirs['class-a'], 'vol1'));
    makeMountPoint(path.join(fx.dirs['class-b'], 'vol1'));
    // Every attempt of the first StorageClass read fails (classes go in name order).
    fx.server.faults.failNext({ verb: 'get', resource: 'storageclasses', code: 500, count: 6 });

    const first = await fx.pass();

    expect(first.created).toEqual([fx.pvName('class-b', 'vol1')]);
    const [warning] = await fx.recordedEvents('ProvisioningFailed');
    expect(warning.message).toContain('StorageClass "class-a"');
    expect((await fx.pass()).created).toEqual([fx.pvName('class-a', 'vol1')]);
  });

  test('when the PV cannot be re-read before cleaning, nothing is cleaned; the cleanup is retried after the backoff', async () => {
    fx = await ControllerFixture.start({ backoff: { initialMs: 1000, maxMs: 1000 } });
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(dir);
    await fx.pass();
    const name = fx.pvName('local-fs', 'vol1');
    const pv = await fx.waitForPv(name, { phase: 'Available' });
    fs.writeFileSync(path.join(dir, 'data'), 'user data');
    await fx.release(name);
    fx.server.faults.failNext({ verb: 'get', resource: 'persistentvolumes', code: 500, count: 20 });

    await fx.pass();
    await fx.settle();
    await fx.pass();

    expect(fs.readdirSync(dir)).toEqual(['data']);
    expect((await fx.serverPv(name))!.metadata!.uid).toBe(pv.metadata!.uid);
    expect((await fx.recordedEvents('CleanupFailed')).map((e) => e.involvedObject.name)).toEqual([name]);

    fx.server.faults.clear();
    await fx.waitForRetry(pv.metadata!.uid!);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('Events that cannot be written do not hold up provisioning', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(fx.dirs['local-fs'], 'vol1'));
    fs.mkdirSync(path.join(fx.dirs['local-fs'], 'plain'));
    fx.server.faults.failNext({ verb: 'create', resource: 'events', code: 500, count: 100 });

    expect((await fx.pass()).created).toEqual([fx.pvName('local-fs', 'vol1')]);
    await fx.events.flush();
    expect(await fx.recordedEvents()).toEqual([]);
  });

  test('an API server that goes away and comes back: the failed pass loses nothing, the next one catches up without duplicates', async () => {
    fx = await ControllerFixture.start();
    const dir = fx.dirs['local-fs'];
    makeMountPoint(path.join(dir, 'vol1'));
    await fx.pass();
    await fx.waitForPv(fx.pvName('local-fs', 'vol1'));

    await fx.server.plane.stopApiServer();
    makeMountPoint(path.join(dir, 'vol2'));
    expect((await fx.pass()).created).toEqual([]);
    await fx.server.plane.startApiServer();

    await fx.waitForCache((pvs) => pvs.length === 1, 'the cache is back in sync', 10_000);
    expect((await fx.pass()).created).toEqual([fx.pvName('local-fs', 'vol2')]);
    expect((await fx.pass()).created).toEqual([]);
    expect(await fx.serverPvNames()).toEqual([fx.pvName('local-fs', 'vol1'), fx.pvName('local-fs', 'vol2')].sort());
  });
});
