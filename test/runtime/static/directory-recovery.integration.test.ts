/**
 * No duplicates and no lost volumes through the things that happen to a node
 * agent: PVs left by the Go provisioner (adopted), a restart, dropped watches,
 * and a watch history compacted away (410 Gone).
 */
import * as path from 'node:path';
import { V1PersistentVolume } from '@kubernetes/client-node';
import { ControllerFixture, createStorageClass, eventually, localFsPv, NODE_NAME, seedCluster } from './fixture';
import { adoptUnlabelledPersistentVolumes, provisionedBy } from '../../../src/runtime/kube/adoption';
import { NODE_LABEL } from '../../../src/runtime/well-known';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, describePrivileged, makeMountPoint, makeTempDir } from '../../support/privileged';
import { referenceFnv1a32 } from '../pv/reference-fnv1a';

describePrivileged('no duplicates, no lost volumes', () => {
  let fx: ControllerFixture | undefined;
  let server: Kubernetes | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
    await server?.reset();
    server = undefined;
  });
  afterAll(cleanupPrivileged);

  const versions = (pvs: readonly V1PersistentVolume[]) => pvs.map((p) => `${p.metadata!.name}@${p.metadata!.resourceVersion}`).sort().join(' ');

  /** One PV per path, and the cache holds exactly what the server holds. */
  async function expectConsistent(f: ControllerFixture, mountPoints: string[]): Promise<void> {
    const pvs = await f.server.list<V1PersistentVolume>('v1', 'PersistentVolume');
    const paths = pvs.map((p) => p.spec!.local!.path).sort();
    expect(paths).toEqual(mountPoints.map((m) => `/mnt/host/local-fs/${m}`).sort());
    expect(f.cache.list().map((p) => `${p.metadata!.name}@${p.metadata!.resourceVersion}`).sort())
      .toEqual(pvs.map((p) => `${p.metadata!.name}@${p.metadata!.resourceVersion}`).sort());
  }

  test('PVs the Go provisioner made (upstream names, no node label) are adopted: no duplicate, and they are recycled as ours', async () => {
    server = await Kubernetes.forSuite({ controllers: true });
    await seedCluster(server);
    await createStorageClass(server, 'local-fs', {});
    const nodeUid = (await server.get('v1', 'Node', NODE_NAME)).metadata.uid;
    const dir = makeTempDir();
    makeMountPoint(path.join(dir, 'vol1'));
    makeMountPoint(path.join(dir, 'vol2'));
    const upstreamName = upstreamPvName('vol1');
    const upstream = await server.create(localFsPv(upstreamName, '/mnt/host/local-fs/vol1', `local-volume-provisioner-${NODE_NAME}-${nodeUid}`));
    const othersName = 'local-pv-0ther';
    await server.create(localFsPv(othersName, '/mnt/host/local-fs/vol9', 'local-volume-provisioner-worker-2-some-uid'));

    fx = await ControllerFixture.start({
      server,
      mountDirs: { 'local-fs': dir },
      beforeCacheStart: async (f) => {
        const adopted = await adoptUnlabelledPersistentVolumes(f.api, { nodeName: NODE_NAME, criterion: provisionedBy(await f.provisionerName()) });
        expect(adopted.adopted).toEqual([upstreamName]);
      },
    });

    expect((await fx.pass()).created).toEqual([fx.pvName('local-fs', 'vol2')]);
    expect((await fx.serverPv(upstreamName))!.metadata!.uid).toBe(upstream.metadata.uid);
    expect((await fx.serverPv(upstreamName))!.metadata!.labels![NODE_LABEL]).toBe(NODE_NAME);
    expect((await fx.serverPv(othersName))!.metadata!.labels?.[NODE_LABEL]).toBeUndefined();
    expect(fx.cache.get(othersName)).toBeUndefined();

    // Adopted means managed: released, it is cleaned and offered again.
    await fx.waitForPv(upstreamName, { phase: 'Available' });
    await fx.release(upstreamName);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(upstreamName, upstream.metadata.uid);
    expect((await fx.pass()).created).toEqual([upstreamName]);
  });

  test('a restart (new cache and controller over the same cluster) creates no duplicates', async () => {
    server = await Kubernetes.forSuite({ controllers: true });
    fx = await ControllerFixture.start({ server, seed: true });
    const dir = fx.dirs['local-fs'];
    const mounts = ['vol1', 'vol2', 'vol3'];
    for (const m of mounts) makeMountPoint(path.join(dir, m));
    expect((await fx.pass()).created).toHaveLength(3);
    await fx.stop();

    fx = await ControllerFixture.start({ server, mountDirs: { 'local-fs': dir } });
    expect((await fx.pass()).created).toEqual([]);
    expect((await fx.pass()).created).toEqual([]);

    expect(server.counters.get('create', 'persistentvolumes').requests).toBe(3);
    await expectConsistent(fx, mounts);
  });

  test('watches dropped between passes lose no change and cause no duplicate create', async () => {
    fx = await ControllerFixture.start();
    const dir = fx.dirs['local-fs'];
    const mounts: string[] = [];
    for (let i = 1; i <= 5; i++) {
      mounts.push(`vol${i}`);
      makeMountPoint(path.join(dir, `vol${i}`));
      const { created } = await fx.pass();
      expect(created).toEqual([fx.pvName('local-fs', `vol${i}`)]);
      // The ADDED event may be in flight when the watch drops: the cache must get it anyway.
      fx.server.faults.closeWatches();
      await fx.waitForCache(async (pvs) => versions(pvs) === versions(await fx!.server.list<V1PersistentVolume>('v1', 'PersistentVolume')),
        `the cache holds the ${i} PVs as the server has them, after a dropped watch`);
    }
    expect(fx.server.counters.get('create', 'persistentvolumes').requests).toBe(5);
    await expectConsistent(fx, mounts);
  });

  test('a 410 Gone after the watch history was compacted makes the cache relist; a PV deleted meanwhile is recreated, none duplicated', async () => {
    fx = await ControllerFixture.start();
    const dir = fx.dirs['local-fs'];
    makeMountPoint(path.join(dir, 'vol1'));
    makeMountPoint(path.join(dir, 'vol2'));
    await fx.pass();
    await fx.waitForCache((pvs) => pvs.length === 2, 'both PVs are cached');
    const vol1 = fx.pvName('local-fs', 'vol1');
    const oldUid = fx.cache.get(vol1)!.metadata!.uid;
    const lists = fx.server.counters.get('list', 'persistentvolumes').requests;

    // The watch is down while a PV is deleted and the history compacted: it resumes into 410 Gone.
    fx.server.faults.failNext({ verb: 'watch', resource: 'persistentvolumes', code: 503, count: 4 });
    fx.server.faults.closeWatches();
    await fx.core.deletePersistentVolume({ name: vol1 });
    await eventually(async () => await fx!.serverPv(vol1) === undefined, 'the PV is gone from the server');
    await fx.server.compact();

    await fx.waitForPvGone(vol1);
    expect(fx.server.counters.get('list', 'persistentvolumes').requests).toBeGreaterThan(lists);
    // Nothing proves no tenant used the volume while the watch was down: it is cleaned first (a moment for an empty one), then offered.
    await fx.passUntilCreated(vol1);
    const recreated = await fx.waitForPv(vol1);
    expect(recreated.metadata!.uid).not.toBe(oldUid);
    expect((await fx.pass()).created).toEqual([]);
    // The copy was already refreshed by a list while watches failed; the watch itself may still be backing off.
    await fx.waitForCache(async (pvs) => versions(pvs) === versions(await fx!.server.list<V1PersistentVolume>('v1', 'PersistentVolume')),
      'the cache catches up with the server');
    await expectConsistent(fx, ['vol1', 'vol2']);
  });

  test('passes keep going through dropped watches and 410s while volumes appear: every volume gets exactly one PV', async () => {
    fx = await ControllerFixture.start();
    const dir = fx.dirs['local-fs'];
    const mounts: string[] = [];
    for (let i = 1; i <= 6; i++) {
      mounts.push(`vol${i}`);
      makeMountPoint(path.join(dir, `vol${i}`));
      if (i % 2 === 0) await fx.server.compact();
      fx.server.faults.closeWatches();
      await fx.pass();
    }
    await fx.waitForCache((pvs) => pvs.length === 6, 'the cache holds all six PVs');
    expect((await fx.pass()).created).toEqual([]);
    await expectConsistent(fx, mounts);
    expect(await fx.recordedEvents('ProvisioningFailed')).toEqual([]);
  });
});

/** Upstream's name: FNV-1a (32 bit) of entry + node + class, in hex. */
function upstreamPvName(entry: string): string {
  return `local-pv-${referenceFnv1a32(`${entry}${NODE_NAME}local-fs`).toString(16)}`;
}
