/**
 * Cleanup in Jobs (`useJobForCleaning`) through the DirectoryController: the
 * real Job controller makes each Job's pod, which no kubelet runs here: the tests
 * finish it with `finishJob`, as the pod succeeding or failing would.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { V1Job, V1PersistentVolume } from '@kubernetes/client-node';
import { ControllerFixture, eventually, JOB_IMAGE, JOB_NAMESPACE, NODE_NAME } from './fixture';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint } from '../../support/privileged';

const MiB = 1024 * 1024;
const TOLERATION = { key: 'storage.example.com/cleaning', operator: 'Exists' as const, effect: 'NoSchedule' as const };

describePrivileged('cleanup Jobs through the controller', () => {
  let fx: ControllerFixture | undefined;
  const stopAfter: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
    for (const stop of stopAfter.splice(0)) await stop();
  });
  afterAll(cleanupPrivileged);

  const options = (backoffMs = 300) => ({
    classes: { 'local-block': { volumeMode: 'Block' as const, blockCleanerCommand: ['/scripts/shred.sh', '2'] } },
    config: { useJobForCleaning: true, jobTolerations: [TOLERATION] },
    backoff: { initialMs: backoffMs, maxMs: backoffMs },
  });

  async function start(backoffMs = 300): Promise<ControllerFixture> {
    fx = await ControllerFixture.start(options(backoffMs));
    return fx;
  }

  async function releasedDevice(): Promise<V1PersistentVolume> {
    const loop = createLoopDevice(8 * MiB);
    fs.symlinkSync(loop.device, path.join(fx!.dirs['local-block'], 'disk1'));
    await fx!.pass();
    const name = fx!.pvName('local-block', 'disk1');
    await fx!.waitForPv(name, { phase: 'Available' });
    return fx!.release(name);
  }

  const jobs = (): Promise<V1Job[]> => fx!.server.list<V1Job>('batch/v1', 'Job', JOB_NAMESPACE);
  const jobOf = async (pvName: string) => fx!.server.get<V1Job>('batch/v1', 'Job', `cleanup-${pvName}`, JOB_NAMESPACE);

  test('a Released Block PV gets one Job cleanup-<pv> in the namespace, built as upstream builds it, with /dev and the tolerations', async () => {
    await start();
    const pv = await releasedDevice();
    const name = pv.metadata!.name!;

    await fx!.pass();
    await eventually(async () => (await jobOf(name)) !== undefined, 'the cleanup Job exists');
    for (let i = 0; i < 3; i++) await fx!.pass();
    await new Promise((r) => setTimeout(r, 100));

    expect((await jobs()).map((j) => j.metadata!.name)).toEqual([`cleanup-${name}`]);
    expect(fx!.server.counters.get('create', 'jobs').requests).toBe(1);
    const job = (await jobOf(name))!;
    expect(job.metadata!.labels).toEqual({ 'kubernetes.io/hostname': NODE_NAME, 'pv': name, 'pvuuid': pv.metadata!.uid });
    expect(job.metadata!.annotations).toMatchObject({ device: path.join(fx!.dirs['local-block'], 'disk1') });
    const pod = job.spec!.template.spec!;
    const [container] = pod.containers;
    expect(container).toMatchObject({
      image: JOB_IMAGE,
      command: ['/scripts/shred.sh', '2'],
      env: [{ name: 'LOCAL_PV_BLKDEVICE', value: path.join(fx!.dirs['local-block'], 'disk1') }],
      securityContext: { privileged: true },
    });
    expect(container.volumeMounts).toEqual(expect.arrayContaining([
      { name: 'dev', mountPath: '/dev' },
      expect.objectContaining({ mountPath: fx!.dirs['local-block'] }),
    ]));
    // The API server defaults an unset hostPath type to "" (any type), as it reads back.
    expect(pod.volumes).toEqual(expect.arrayContaining([
      { name: 'dev', hostPath: { path: '/dev', type: '' } },
      { name: 'class-dir', hostPath: { path: '/mnt/host/local-block', type: '' } },
    ]));
    expect(pod.tolerations).toEqual([TOLERATION]);
    expect(pod.restartPolicy).toBe('Never');
    expect(await fx!.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
  });

  test('a Filesystem volume is emptied in the agent, by handle, as upstream cleans only Block volumes in Jobs', async () => {
    fx = await ControllerFixture.start({ config: { useJobForCleaning: true } });
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(dir);
    await fx.pass();
    const name = fx.pvName('local-fs', 'vol1');
    const pv = await fx.waitForPv(name, { phase: 'Available' });
    fs.writeFileSync(path.join(dir, 'data'), 'the last user\'s');
    await fx.release(name);

    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(await jobOf(name)).toBeUndefined();
    expect(fx.server.counters.get('create', 'jobs').requests).toBe(0);
  });

  test('a Job that completes is deleted, then the PV, and the volume is offered again with a new UID', async () => {
    await start();
    const pv = await releasedDevice();
    const name = pv.metadata!.name!;
    await fx!.pass();
    await eventually(async () => (await jobOf(name))?.status?.startTime !== undefined, 'the cleanup Job started');

    let jobGoneAt: number | undefined;
    let pvGoneAt: number | undefined;
    let watching = true;
    // Read in this order, a PV seen gone while its Job is still there would be caught.
    const watcher = (async () => {
      while (watching) {
        const jobGone = (await jobOf(name)) === undefined;
        if (jobGone) jobGoneAt ??= performance.now();
        const pvGone = (await fx!.serverPv(name)) === undefined;
        if (pvGone) pvGoneAt ??= performance.now();
      }
    })();
    await fx!.server.finishJob(JOB_NAMESPACE, `cleanup-${name}`, 'Complete');
    await fx!.settle();
    await eventually(async () => pvGoneAt !== undefined, 'the PV is deleted');
    watching = false;
    await watcher;

    expect(jobGoneAt).toBeDefined();
    expect(jobGoneAt!).toBeLessThanOrEqual(pvGoneAt!);
    await fx!.waitForPvGone(name, pv.metadata!.uid);
    expect((await fx!.pass()).created).toEqual([name]);
    expect((await fx!.waitForPv(name)).metadata!.uid).not.toBe(pv.metadata!.uid);
    expect(await fx!.metrics.exposition()).toMatch(/persistentvolume_delete_total\{mode="Block",type="job"\} 1/);
  });

  test('a failed Job is reported with a Warning and retried with a new Job after the backoff', async () => {
    await start(1000);
    const pv = await releasedDevice();
    const name = pv.metadata!.name!;
    await fx!.pass();
    await eventually(async () => (await jobOf(name))?.status?.startTime !== undefined, 'the first Job started');
    const firstJob = (await jobOf(name))!.metadata!.uid;

    await fx!.server.finishJob(JOB_NAMESPACE, `cleanup-${name}`, 'Failed', 'shred: /dev/loop9: Input/output error');
    await fx!.settle();
    expect(await jobOf(name)).toBeUndefined();
    await fx!.pass();
    const [failed] = await fx!.recordedEvents('CleanupFailed');
    expect(failed).toMatchObject({ type: 'Warning', involvedObject: { kind: 'PersistentVolume', name } });
    // The Job controller's words, then the cleaner's own, from its pod.
    expect(failed.message).toContain('BackoffLimitExceeded');
    expect(failed.message).toContain('the cleaner: Error (exit 1): shred: /dev/loop9: Input/output error');
    expect(await jobOf(name)).toBeUndefined();
    expect((await fx!.serverPv(name))!.metadata!.uid).toBe(pv.metadata!.uid);

    await fx!.waitForRetry(pv.metadata!.uid!);
    await fx!.pass();
    await eventually(async () => (await jobOf(name)) !== undefined, 'a second Job exists');
    expect((await jobOf(name))!.metadata!.uid).not.toBe(firstJob);
    expect((await jobOf(name))!.metadata!.labels!.pvuuid).toBe(pv.metadata!.uid);

    await fx!.server.finishJob(JOB_NAMESPACE, `cleanup-${name}`, 'Complete');
    await fx!.settle();
    await fx!.waitForPvGone(name, pv.metadata!.uid);
  });

  test('a Job during which the device sees no I/O for cleanupStallTimeout is deleted and reported, and the PV kept for a retry', async () => {
    fx = await ControllerFixture.start({ ...options(60_000), config: { ...options().config, cleanupStallTimeout: 1000 } });
    const pv = await releasedDevice();
    const name = pv.metadata!.name!;
    await fx.pass();
    // No kubelet runs the Job's pod here, so nothing ever writes to the device.
    await eventually(async () => (await jobOf(name)) !== undefined, 'the cleanup Job exists');
    await fx.settle();

    expect(await jobOf(name)).toBeUndefined();
    await fx.pass();
    const [failed] = await fx.recordedEvents('CleanupFailed');
    expect(failed).toMatchObject({ type: 'Warning', involvedObject: { kind: 'PersistentVolume', name } });
    expect(failed.message).toMatch(/was stopped: no I\/O reached the device for \d+ s \(cleanupStallTimeout 1 s\)/);
    expect((await fx.serverPv(name))!.metadata!.uid).toBe(pv.metadata!.uid);
  });

  test('a Job an earlier run left for this very PV is waited for, not created again', async () => {
    // The suite's cluster, passed to both agents so that the first one's stop leaves its Job there.
    const server = await Kubernetes.forSuite({ controllers: true });
    await server.reset();
    stopAfter.push(() => server.reset());
    fx = await ControllerFixture.start({ ...options(), server, seed: true });
    const pv = await releasedDevice();
    const name = pv.metadata!.name!;
    // A first controller made the Job, then the process restarted: the new one finds it.
    await fx.pass();
    await eventually(async () => (await jobOf(name)) !== undefined, 'the Job exists');
    await fx.stop();
    fx = await ControllerFixture.start({ ...options(), server, mountDirs: fx.dirs });
    const leftover = (await jobOf(name))!.metadata!.uid;

    await fx.pass();
    await new Promise((r) => setTimeout(r, 100));
    expect((await jobOf(name))!.metadata!.uid).toBe(leftover);
    expect(server.counters.get('create', 'jobs').requests).toBe(1);

    await server.finishJob(JOB_NAMESPACE, `cleanup-${name}`, 'Complete');
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
  });

  test('a Job left for an older PV of the same name is replaced by one for this PV', async () => {
    await start();
    const pv = await releasedDevice();
    const name = pv.metadata!.name!;
    await fx!.server.create({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: `cleanup-${name}`, namespace: JOB_NAMESPACE, labels: { pv: name, pvuuid: 'an-older-uid' } },
      spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'cleaner', image: JOB_IMAGE }] } } },
    });
    // The old Job's success must not count for this PV.
    await fx!.server.finishJob(JOB_NAMESPACE, `cleanup-${name}`, 'Complete');

    await fx!.pass();
    await eventually(async () => (await jobOf(name))?.metadata?.labels?.pvuuid === pv.metadata!.uid, 'a Job for this PV replaced the old one');
    expect((await fx!.serverPv(name))!.metadata!.uid).toBe(pv.metadata!.uid);
  });
});
