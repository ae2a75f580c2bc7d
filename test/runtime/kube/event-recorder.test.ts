import { CoreV1Event } from '@kubernetes/client-node';
import { coreApiOf, eventually, localPv, serverAndApi } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { EventRecorder, nodeReference, persistentVolumeReference } from '../../../src/runtime/kube/event-recorder';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;

beforeEach(async () => {
  ({ server, api } = await serverAndApi({ maxAttempts: 2 }));
});
afterEach(() => server.reset());

/** The recorder's events: the apiserver writes some of its own into default too (its repair of the kubernetes Service's IP, under load). */
const events = async () => (await server.list<CoreV1Event>('v1', 'Event', 'default')).filter((e) => e.source?.component === 'local-volume-provisioner');

describe('EventRecorder', () => {
  test('writes a Normal event about a PV with our source and the node as host', async () => {
    const pv = await server.create(localPv('local-pv-1', { node: 'node-a' }));
    const recorder = new EventRecorder(api, { nodeName: 'node-a' });
    recorder.normal(persistentVolumeReference(pv), 'Created', 'Created PV for /mnt/disks/a');
    await recorder.flush();
    expect(await events()).toEqual([expect.objectContaining({
      type: 'Normal',
      reason: 'Created',
      message: 'Created PV for /mnt/disks/a',
      count: 1,
      involvedObject: expect.objectContaining({ kind: 'PersistentVolume', name: 'local-pv-1', uid: pv.metadata!.uid }),
      source: { component: 'local-volume-provisioner', host: 'node-a' },
    })]);
  });

  test('three identical warnings become one event with count 3', async () => {
    const recorder = new EventRecorder(api, { nodeName: 'node-a', correlator: { repeatIntervalMs: 0 } });
    for (let i = 0; i < 3; i++) recorder.warning(nodeReference('node-a'), 'DiscoveryFailed', 'path "/mnt/disks/x" is not a valid mount point');
    await recorder.flush();
    const all = await events();
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({ count: 3, type: 'Warning', involvedObject: { kind: 'Node', name: 'node-a' } });
    expect(server.counters.get('patch', 'events').requests).toBe(2);
    expect(new Date(all[0].lastTimestamp as unknown as string).getTime())
      .toBeGreaterThanOrEqual(new Date(all[0].firstTimestamp as unknown as string).getTime());
  });

  test('different messages are different events', async () => {
    const recorder = new EventRecorder(api, { nodeName: 'node-a' });
    recorder.warning(nodeReference('node-a'), 'DiscoveryFailed', 'one');
    recorder.warning(nodeReference('node-a'), 'DiscoveryFailed', 'two');
    await recorder.flush();
    expect((await events()).map((e) => e.message).sort()).toEqual(['one', 'two']);
  });

  test('a warning repeated on every pass is written once per repeat interval, not once per pass', async () => {
    const recorder = new EventRecorder(api, { nodeName: 'node-a' });
    for (let pass = 0; pass < 50; pass++) recorder.warning(nodeReference('node-a'), 'VolumeRejected', 'path "/mnt/disks/notes.txt" is a regular file');
    await recorder.flush();
    expect(await events()).toEqual([expect.objectContaining({ reason: 'VolumeRejected', count: 1 })]);
    expect(server.counters.get('create', 'events').requests + server.counters.get('patch', 'events').requests).toBe(1);
  });

  test('a repeat of an event that expired is written anew with its count', async () => {
    const recorder = new EventRecorder(api, { nodeName: 'node-a', correlator: { repeatIntervalMs: 0 } });
    recorder.warning(nodeReference('node-a'), 'R', 'm');
    await recorder.flush();
    const [first] = await events();
    await coreApiOf(api).deleteNamespacedEvent({ namespace: 'default', name: first.metadata!.name! });
    recorder.warning(nodeReference('node-a'), 'R', 'm');
    await recorder.flush();
    expect(await events()).toEqual([expect.objectContaining({ count: 2 })]);
  });

  test('never throws into the caller: a failed write is logged and counted', async () => {
    const failures: unknown[] = [];
    const recorder = new EventRecorder(api, { nodeName: 'node-a', onFailure: (err) => failures.push(err) });
    server.faults.failNext({ verb: 'create', resource: 'events', code: 403 });
    expect(() => recorder.warning(nodeReference('node-a'), 'R', 'm')).not.toThrow();
    await recorder.flush();
    expect(failures).toHaveLength(1);
    expect(String(failures[0])).toContain('create events');
  });

  test('after a failed create the next repeat creates the event', async () => {
    const recorder = new EventRecorder(api, { nodeName: 'node-a', onFailure: () => {} });
    // A create answered 500 is not sent again (it may have been applied): the repeat is what brings the Event.
    server.faults.failNext({ verb: 'create', resource: 'events', code: 500 });
    recorder.warning(nodeReference('node-a'), 'R', 'm');
    recorder.warning(nodeReference('node-a'), 'R', 'm');
    await recorder.flush();
    expect(await events()).toEqual([expect.objectContaining({ count: 1 })]);
  });

  test('Events refused by RBAC (403) are said once, then not sent again for a while (the device provisioner\'s RBAC grants none)', async () => {
    const warnings: string[] = [];
    const logger = { debug: () => {}, info: () => {}, warn: (_: object, msg: string) => warnings.push(msg), error: () => {} };
    const recorder = new EventRecorder(api, { nodeName: 'node-a', logger, onFailure: () => {} });
    server.faults.failNext({ verb: 'create', resource: 'events', code: 403, count: 1_000 });
    for (const m of ['a', 'b', 'c']) recorder.warning(nodeReference('node-a'), 'R', m);
    await recorder.flush();
    expect(server.counters.get('create', 'events').requests).toBe(1);
    expect(warnings).toEqual([expect.stringContaining('Add {apiGroups: [""], resources: ["events"], verbs: ["create", "patch"]}')]);
  });

  test('an object over its rate limit gets no more events', async () => {
    const recorder = new EventRecorder(api, { nodeName: 'node-a', correlator: { burstPerObject: 2 } });
    for (const m of ['a', 'b', 'c']) recorder.warning(nodeReference('node-a'), 'R', m);
    await recorder.flush();
    expect((await events()).map((e) => e.message).sort()).toEqual(['a', 'b']);
  });

  test('with the API down, events beyond the queue limit are dropped and counted', async () => {
    let failures = 0;
    const recorder = new EventRecorder(api, { nodeName: 'node-a', maxPending: 2, onFailure: () => failures++ });
    server.faults.latency = 50;
    for (const m of ['a', 'b', 'c', 'd']) recorder.warning(nodeReference('node-a'), 'R', m);
    await recorder.flush();
    expect(failures).toBe(2);
    expect(await events()).toHaveLength(2);
  });

  describe('a burst of Normal Events about PVs', () => {
    const created = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `local-pv-${i}`, uid: `uid-${i}` }));
    const recordAll = (recorder: EventRecorder, pvs: Array<{ name: string; uid: string }>, reason = 'ProvisioningSucceeded') => {
      for (const pv of pvs) recorder.normal({ apiVersion: 'v1', kind: 'PersistentVolume', ...pv }, reason, `created PV ${pv.name}`);
    };

    test('of a few is written one Event per PV', async () => {
      const recorder = new EventRecorder(api, { nodeName: 'node-a', burst: { maxSingle: 3 } });
      recordAll(recorder, created(3));
      await recorder.flush();
      expect((await events()).map((e) => e.involvedObject.name).sort()).toEqual(['local-pv-0', 'local-pv-1', 'local-pv-2']);
    });

    test('of many is one Event of the same reason on the Node, naming the PVs', async () => {
      const recorder = new EventRecorder(api, { nodeName: 'node-a', burst: { maxSingle: 3 } });
      recordAll(recorder, created(4));
      await recorder.flush();
      expect(await events()).toEqual([expect.objectContaining({
        type: 'Normal',
        reason: 'ProvisioningSucceeded',
        involvedObject: expect.objectContaining({ kind: 'Node', name: 'node-a' }),
        message: '4 PersistentVolumes: local-pv-0, local-pv-1, local-pv-2, local-pv-3; the first: created PV local-pv-0',
      })]);
      expect(server.counters.total({ resource: 'events' }).requests).toBe(1);
    });

    test('of a thousand is one short Event that says how many it does not name', async () => {
      const recorder = new EventRecorder(api, { nodeName: 'node-a' });
      recordAll(recorder, created(1000));
      await recorder.flush();
      const [summary] = await events();
      expect(await events()).toHaveLength(1);
      expect(summary.message).toMatch(/^1000 PersistentVolumes: local-pv-0, local-pv-1, .*, … \(\d+ more\); the first: created PV local-pv-0$/);
      expect(summary.message!.length).toBeLessThan(1024);
    });

    test('is summarised per reason', async () => {
      const recorder = new EventRecorder(api, { nodeName: 'node-a', burst: { maxSingle: 1 } });
      recordAll(recorder, created(2), 'VolumeAdopted');
      recordAll(recorder, created(1), 'CleanupStarted');
      await recorder.flush();
      expect((await events()).map((e) => `${e.reason} ${e.involvedObject.kind}`).sort()).toEqual(['CleanupStarted PersistentVolume', 'VolumeAdopted Node']);
    });

    test('ends on its own once quiet, without a flush', async () => {
      const recorder = new EventRecorder(api, { nodeName: 'node-a', burst: { quietMs: 20 } });
      recordAll(recorder, created(1));
      await eventually(async () => (await events()).length === 1, 'the held Event is written');
    });

    test('does not hold Warnings', async () => {
      const recorder = new EventRecorder(api, { nodeName: 'node-a', burst: { quietMs: 60_000 } });
      recorder.warning({ apiVersion: 'v1', kind: 'PersistentVolume', name: 'local-pv-0' }, 'CleanupFailed', 'exit 1');
      await eventually(async () => (await events()).length === 1, 'the Warning is written at once');
      await recorder.flush();
    });
  });
});
