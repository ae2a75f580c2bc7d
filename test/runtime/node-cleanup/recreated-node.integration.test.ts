/**
 * A Node deleted and created again under the same name, with a new UID, against
 * a real control plane and real mount points: no PV of the earlier Node is orphaned
 * and none is duplicated. Without setPVOwnerRef the agent writes its new
 * provisioner name on the earlier PVs at start (as run-directory.ts does after its
 * cache syncs); with it, the garbage collector deletes them with the old Node and
 * discovery offers the volumes again for the new one.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { V1PersistentVolume } from '@kubernetes/client-node';
import { silentLogger } from '../../../src/runtime/kube/logger';
import { claimVolumesOfEarlierNode } from '../../../src/runtime/static/recreated-node';
import { PROVISIONED_BY_ANNOTATION } from '../../../src/runtime/well-known';
import { cleanupPrivileged, describePrivileged, makeMountPoint } from '../../support/privileged';
import { ControllerFixture, eventually, NODE_HOSTNAME, NODE_NAME } from '../static/fixture';


describePrivileged('a Node recreated under the same name with a new UID', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);

  /** Mount points `entries` in the class directory, offered as Available PVs. */
  async function provision(...entries: string[]): Promise<V1PersistentVolume[]> {
    for (const e of entries) makeMountPoint(path.join(fx!.dirs['local-fs'], e));
    await fx!.pass();
    return Promise.all(entries.map((e) => fx!.waitForPv(fx!.pvName('local-fs', e), { phase: 'Available' })));
  }

  /** Deletes the Node and registers it again, as a reinstalled kubelet does; returns the new UID. */
  async function recreateNode(): Promise<string> {
    const old = await fx!.server.get('v1', 'Node', NODE_NAME);
    await fx!.server.delete('v1', 'Node', NODE_NAME);
    const fresh = await fx!.server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_HOSTNAME } } });
    expect(fresh.metadata.uid).not.toBe(old.metadata.uid);
    return fresh.metadata.uid;
  }

  /** What run-directory.ts does after its cache syncs, then waits for the cache to see it. */
  async function claimAtStart(): Promise<string[]> {
    const name = await fx!.provisionerName();
    const claimed = await claimVolumesOfEarlierNode(fx!.api, fx!.cache.list(), await fx!.node(), name, silentLogger);
    const byUs = (pv: V1PersistentVolume | undefined) => pv?.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] === name;
    await fx!.waitForCache(() => claimed.every((n) => byUs(fx!.cache.get(n))), 'the cache sees the new provisioner name');
    return claimed;
  }

  test('without the new name on it, a Released PV of the earlier Node is never recycled (the orphan the rule prevents)', async () => {
    fx = await ControllerFixture.start();
    const [pv] = await provision('vol1');
    await recreateNode();
    await fx.release(pv.metadata!.name!);

    await fx.pass();
    await fx.settle();
    expect(await fx.serverPv(pv.metadata!.name!)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
    expect(await fx.recordedEvents('CleanupStarted')).toEqual([]);
  });

  test('its Released PV is cleaned, deleted and offered again under the new provisioner name', async () => {
    fx = await ControllerFixture.start();
    const [pv] = await provision('vol1');
    const name = pv.metadata!.name!;
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    fs.writeFileSync(path.join(dir, 'data'), 'the earlier tenant');
    await recreateNode();
    await fx.release(name);

    expect(await claimAtStart()).toEqual([name]);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    await fx.pass();
    const again = await fx.waitForPv(name, { phase: 'Available', notUid: pv.metadata!.uid });

    expect(fs.readdirSync(dir)).toEqual([]);
    expect(again.metadata!.annotations![PROVISIONED_BY_ANNOTATION]).toBe(await fx.provisionerName());
  });

  test('its Available and Bound PVs are kept, not duplicated, and now ours', async () => {
    fx = await ControllerFixture.start();
    const [available, bound] = await provision('vol1', 'vol2');
    await fx.bind(bound.metadata!.name!);
    await fx.waitForPv(bound.metadata!.name!, { phase: 'Bound' });
    await recreateNode();

    expect((await claimAtStart()).sort()).toEqual([available.metadata!.name!, bound.metadata!.name!].sort());
    const result = await fx.pass();

    expect(result.created).toEqual([]);
    expect(await fx.serverPvNames()).toEqual([available.metadata!.name!, bound.metadata!.name!].sort());
    for (const pv of [available, bound]) expect((await fx.serverPv(pv.metadata!.name!))!.metadata!.uid).toBe(pv.metadata!.uid);
  });

  test('claiming at start twice changes nothing the second time', async () => {
    fx = await ControllerFixture.start();
    await provision('vol1');
    await recreateNode();
    await claimAtStart();

    expect(await claimAtStart()).toEqual([]);
  });

  test('with setPVOwnerRef, the PVs go with the earlier Node and discovery offers the volumes once for the new one', async () => {
    fx = await ControllerFixture.start({ config: { setPVOwnerRef: true } });
    const [pv] = await provision('vol1');
    const name = pv.metadata!.name!;
    expect(pv.metadata!.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: NODE_NAME })]);

    const uid = await recreateNode();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    expect(await claimAtStart()).toEqual([]);
    // The PV went without the agent seeing it unused to the end: the volume is cleaned, then offered.
    await fx.passUntilCreated(name);
    const again = await fx.waitForPv(name, { notUid: pv.metadata!.uid });

    expect(await fx.serverPvNames()).toEqual([name]);
    expect(again.metadata!.ownerReferences).toEqual([expect.objectContaining({ kind: 'Node', name: NODE_NAME, uid })]);
    expect(again.metadata!.annotations![PROVISIONED_BY_ANNOTATION]).toBe(await fx.provisionerName());
    await eventually(async () => (await fx!.serverPv(name))?.status?.phase === 'Available', 'the new PV is Available');
  });
});
