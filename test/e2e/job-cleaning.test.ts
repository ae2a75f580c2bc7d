/**
 * End to end, the directory dialect with cleaning in Jobs (`useJobForCleaning`):
 * the agent creates the Job; this suite plays the Job's pod by running the Job's
 * own container command with its env on this host (the class directories are at
 * the same paths in the pod), then reports the pod's outcome with `finishJob`.
 */
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { V1Job } from '@kubernetes/client-node';
import { Cluster, installImageScripts, NODE_NAME, synthesize } from './cluster';
import { VolumeMode } from '../../src/constructs';
import { directoryPVName } from '../../src/runtime/pv';
import { AgentProcess } from '../support/agent-process';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../support/privileged';

const MiB = 1024 * 1024;
const NAMESPACE = 'local-volume-provisioner';
const IMAGE = 'registry.example/lvp:e2e';


describePrivileged('end to end: directory dialect, cleaning in Jobs', () => {
  let cluster: Cluster;
  let agent: AgentProcess;
  let removeScripts = () => {};
  const dirs = { fs: '', block: '' };

  beforeAll(async () => {
    removeScripts = installImageScripts();
    dirs.fs = makeTempDir('lvp-e2e-jobfs-');
    dirs.block = makeTempDir('lvp-e2e-jobblock-');
    cluster = await Cluster.start(synthesize({
      storageClasses: [
        { name: 'e2e-fs', hostDir: dirs.fs },
        { name: 'e2e-block', hostDir: dirs.block, volumeMode: VolumeMode.BLOCK },
      ],
      useJobForCleaning: true,
      image: IMAGE,
    }));
    agent = cluster.startAgent('local-volume-provisioner');
    await agent.waitReady();
  });
  afterEach(() => {
    expect(agent.child.exitCode).toBeNull();
  });
  afterAll(async () => {
    await cluster?.stop();
    cleanupPrivileged();
    removeScripts();
  });

  /** Runs the Job's container as its pod would, then marks the Job Complete (or Failed when the command fails). */
  async function playJob(job: V1Job): Promise<string> {
    const [container] = job.spec!.template.spec!.containers;
    const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? '']));
    const [command, ...args] = [...(container.command ?? []), ...(container.args ?? [])];
    try {
      const { stdout } = await promisify(execFile)(command, args, { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
      await cluster.finishJob(NAMESPACE, job.metadata!.name!, 'Complete');
      return stdout;
    } catch (e) {
      await cluster.finishJob(NAMESPACE, job.metadata!.name!, 'Failed', String(e));
      throw e;
    }
  }

  /** Binds, uses, releases; plays the cleanup Job the agent creates; returns both PVs and the Job. */
  async function recycleThroughJob(name: string, use: () => void) {
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    const claim = await cluster.bindClaim(name);
    await cluster.waitForPv(name, { phase: 'Bound' });
    use();
    await cluster.deleteClaim(claim);
    const jobName = `cleanup-${name}`;
    await cluster.until(() => cluster.get('Job', jobName, NAMESPACE) !== undefined, `the agent creates Job ${jobName}`);
    const job = cluster.get<V1Job>('Job', jobName, NAMESPACE)!;
    // Until the Job is done, the volume is not offered again.
    expect(cluster.pv(name)?.metadata!.uid).toBe(first.metadata!.uid);
    await playJob(job);
    const second = await cluster.waitForPv(name, { phase: 'Available', notUid: first.metadata!.uid });
    return { first, second, job };
  }

  test('Filesystem: emptied by the agent itself, by handle, as upstream cleans only Block volumes in Jobs; no Job is made', async () => {
    const volume = path.join(dirs.fs, 'vol1');
    const loop = createLoopDevice(16 * MiB);
    mkfsExt4(loop.device);
    mount(loop.device, volume);
    const name = directoryPVName('vol1', NODE_NAME, 'e2e-fs');
    const first = await cluster.waitForPv(name, { phase: 'Available' });
    const claim = await cluster.bindClaim(name);
    await cluster.waitForPv(name, { phase: 'Bound' });
    fs.mkdirSync(path.join(volume, 'app'));
    fs.writeFileSync(path.join(volume, 'app', 'data.txt'), 'user data');
    await cluster.deleteClaim(claim);

    const second = await cluster.waitForPv(name, { phase: 'Available', notUid: first.metadata!.uid });
    expect(second.spec!.local!.path).toBe(volume);
    expect(fs.readdirSync(volume)).toEqual([]);
    expect(cluster.jobs(NAMESPACE)).toEqual([]);
  });

  test('Block: the Job runs the class\'s quick_reset.sh on the device; the PV comes back under a new UID with no filesystem left', async () => {
    const loop = createLoopDevice(16 * MiB);
    const link = path.join(dirs.block, 'disk1');
    fs.symlinkSync(loop.device, link);
    const name = directoryPVName('disk1', NODE_NAME, 'e2e-block');

    const { job } = await recycleThroughJob(name, () => mkfsExt4(loop.device));

    const container = job.spec!.template.spec!.containers[0];
    expect(container.command).toEqual(['/scripts/quick_reset.sh']);
    expect(container.env).toEqual([{ name: 'LOCAL_PV_BLKDEVICE', value: link }]);
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).toThrow();
  });

  test('every request the agent made was allowed by the synthesized RBAC (no 403)', () => {
    expect(cluster.denials).toEqual([]);
  });
});
