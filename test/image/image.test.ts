/**
 * The container image, built from image/Dockerfile by scripts/image.sh and run as
 * the synthesized DaemonSet runs it on a node (pod-container.ts), against a real
 * Kubernetes control plane (test/e2e/cluster.ts) with a real ServiceAccount token.
 * Everything the agent does here it does with what the image holds: its Node, its
 * bundled code, its cleaner scripts and the Debian tools they call.
 *
 * Runs last (test/support/suite-order.ts) while the test task builds the image
 * in the background; building it here then waits for that build.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PodContainer, podmanRunArgs } from './pod-container';
import { PrivateNetwork } from './private-network';
import { DEFAULT_IMAGE, VolumeMode } from '../../src/constructs';
import { directoryPVName } from '../../src/runtime/pv';
import { Cluster, find, Manifest, NODE_NAME, synthesize } from '../e2e/cluster';
import { REPO } from '../support/agent-process';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../support/privileged';

const MiB = 1024 * 1024;
const DAEMONSET = 'local-volume-provisioner';
/** A first build on a fresh machine makes the base images too (several minutes under load). */
const BUILD_TIMEOUT_MS = 40 * 60_000;
/** Only against a hang: every wait below ends as soon as its condition holds. */
const WAIT_TIMEOUT_MS = 120_000;

jest.setTimeout(WAIT_TIMEOUT_MS + 30_000);

describePrivileged('the container image, run as the synthesized DaemonSet runs it', () => {
  let cluster: Cluster;
  let network: PrivateNetwork;
  let container: PodContainer;
  let manifests: Manifest[];
  const dirs = { fs: '', block: '' };

  beforeAll(async () => {
    await buildImage();
    // The class directories sit in a shared mount, as kubelet's hostPath does for
    // HostToContainer: a volume mounted after the pod started reaches it.
    const root = makeTempDir('lvp-image-');
    mount(root, root, { bind: true });
    execFileSync('mount', ['--make-rshared', root]);
    dirs.fs = path.join(root, 'fs');
    dirs.block = path.join(root, 'block');
    manifests = synthesize({
      // The image scripts/image.sh just built, under the default name on purpose.
      image: DEFAULT_IMAGE,
      storageClasses: [
        { name: 'image-fs', hostDir: dirs.fs },
        { name: 'image-block', hostDir: dirs.block, volumeMode: VolumeMode.BLOCK },
      ],
    });
    cluster = await Cluster.start(manifests);
    network = await PrivateNetwork.start({
      work: cluster.work,
      apiServerPort: Number(new URL(cluster.url).port),
      agentPort: daemonSetContainer().ports[0].containerPort,
    });
    const name = `lvp-image-test-${process.pid}`;
    container = PodContainer.start(network, name, podmanRunArgs(cluster, DAEMONSET, name));
    await waitFor(async () => (await network.get('/readyz').catch(() => ({ status: 0 }))).status === 200, '/readyz answers 200');
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await container?.remove();
    await network?.stop();
    await cluster?.stop();
    cleanupPrivileged();
  });

  const daemonSetContainer = () => find(manifests, 'DaemonSet', DAEMONSET).spec.template.spec.containers[0];
  const pvName = (className: string, entry: string) => directoryPVName(entry, NODE_NAME, className);

  /** Waits until `condition` holds; on a hang fails with what was awaited and the container's log. */
  async function waitFor(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + WAIT_TIMEOUT_MS;
    while (!(await condition())) {
      if (!container.running || Date.now() > deadline) {
        throw new Error(`${container.running ? 'timed out' : 'the container exited'} waiting until ${what}\ncontainer log:\n${container.log()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The PV once it exists in `phase` (with a UID other than `notUid`). */
  async function pvWhen(name: string, phase: string, notUid?: string) {
    await waitFor(() => {
      const pv = cluster.pv(name);
      return pv?.status?.phase === phase && (notUid === undefined || pv.metadata!.uid !== notUid);
    }, `PV ${name} is ${phase}${notUid ? ' under a new UID' : ''}`);
    return cluster.pv(name)!;
  }

  /** Binds a claim, lets `use` write through it, deletes the claim; returns the PV before and after. */
  async function recycle(name: string, use: () => void) {
    const first = await pvWhen(name, 'Available');
    const claim = await cluster.bindClaim(name);
    await pvWhen(name, 'Bound');
    use();
    await cluster.deleteClaim(claim);
    const second = await pvWhen(name, 'Available', first.metadata!.uid);
    return { first, second };
  }

  test('it runs the image\'s ENTRYPOINT, the bin under tini without a subcommand, with the DaemonSet\'s args', () => {
    const inspect = (...args: string[]) => JSON.parse(execFileSync(path.join(REPO, 'scripts/podman.sh'), args, { encoding: 'utf8' }));
    const { args } = daemonSetContainer();

    const [image] = inspect('image', 'inspect', daemonSetContainer().image);
    const [running] = inspect('container', 'inspect', container.name);

    expect(image.Config.Entrypoint).toEqual(['/usr/bin/tini', '--', 'local-volume-provisioner']);
    expect([running.Path, ...running.Args]).toEqual([...image.Config.Entrypoint, ...args]);
  });

  test.each([
    ['/local-provisioner', 'run'],
    ['/local-pv-provisioner', 'devices'],
    ['/main', 'node-cleanup'],
  ])('%s, an upstream image\'s binary, starts the bin as its %s', async (binary, command) => {
    const { stdout } = await promisify(execFile)(path.join(REPO, 'scripts/podman.sh'),
      ['run', '--rm', '--network=none', `--entrypoint=${binary}`, daemonSetContainer().image, '--help'], { cwd: REPO });

    expect(stdout.split('\n')[0]).toBe(`Usage: local-volume-provisioner ${command} [flags]`);
  });

  test('it carries btrfs, which pool classes make, limit and destroy their volumes with', async () => {
    const { stdout } = await promisify(execFile)(path.join(REPO, 'scripts/podman.sh'),
      ['run', '--rm', '--network=none', '--entrypoint=btrfs', daemonSetContainer().image, '--version'], { cwd: REPO });
    expect(stdout).toMatch(/^btrfs-progs v\d/);
  });

  test('a volume mounted under the class directory after the pod started becomes an Available PV', async () => {
    const loop = createLoopDevice(16 * MiB);
    mkfsExt4(loop.device);
    const volume = path.join(dirs.fs, 'vol1');
    mount(loop.device, volume);

    const pv = await pvWhen(pvName('image-fs', 'vol1'), 'Available');

    expect(pv.spec!.local!.path).toBe(volume);
    expect(pv.spec!.storageClassName).toBe('image-fs');
  });

  test('Filesystem: a released volume is emptied and offered again under a new UID', async () => {
    const volume = path.join(dirs.fs, 'vol1');

    const { first, second } = await recycle(pvName('image-fs', 'vol1'), () => fs.writeFileSync(path.join(volume, 'data.txt'), 'user data'));

    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    expect(fs.readdirSync(volume).filter((e) => e !== 'lost+found')).toEqual([]);
  });

  test('Block: a released loop device is reset by the image\'s /scripts/quick_reset.sh and offered again under a new UID', async () => {
    const loop = createLoopDevice(16 * MiB);
    fs.mkdirSync(dirs.block, { recursive: true });
    fs.symlinkSync(loop.device, path.join(dirs.block, 'disk1'));

    const { first, second } = await recycle(pvName('image-block', 'disk1'), () => mkfsExt4(loop.device));

    expect(first.spec!.volumeMode).toBe('Block');
    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    // blkid exits 2 when it finds no filesystem, partition table or other signature.
    expect(spawnSync('blkid', ['-p', loop.device]).status).toBe(2);
    const metrics = (await network.get('/metrics')).body;
    expect(metrics).toMatch(/local_volume_provisioner_persistentvolume_delete_duration_seconds_count\{[^}]*mode="Block"[^}]*cleanup_command="\/scripts\/quick_reset.sh"[^}]*\} 1/);
  });

  test('/metrics and /readyz answer on the DaemonSet\'s metrics port, reporting the package version', async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };

    const [metrics, ready] = await Promise.all([network.get('/metrics'), network.get('/readyz')]);

    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain(`local_volume_provisioner_build_info{version="${pkg.version}"`);
    expect(ready.status).toBe(200);
  });

  test('SIGTERM, as kubelet stops the pod, ends it with exit code 0', async () => {
    await container.signal('SIGTERM');

    expect(await container.exited()).toBe(0);
  });
});

/**
 * Builds the image with scripts/image.sh. A build already under way (the test task
 * starts one in the background) holds its lock, so this waits for it and then
 * finds every layer built.
 */
async function buildImage(): Promise<void> {
  try {
    await promisify(execFile)(path.join(REPO, 'scripts/image.sh'), [], { cwd: REPO, maxBuffer: 256 * MiB });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    const output = `${err.stdout ?? ''}${err.stderr ?? ''}`.split('\n').slice(-60).join('\n');
    throw new Error(`scripts/image.sh failed: ${err.message}\n${output}`);
  }
}
