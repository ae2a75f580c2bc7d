/**
 * The real bin (`local-volume-provisioner run`) as a child process against the
 * a real control plane: readiness, metrics, reaction time to a new mount point, and
 * kill -9 in the middle of a cleanup.
 *
 * The bin runs from the TypeScript sources through ts-node (transpile only), in
 * this test's private mount namespace, so it sees the bind mounts and loop
 * devices the test makes.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CoreV1Api, V1PersistentVolume, V1Taint } from '@kubernetes/client-node';
import { resolveProvisionerConfig, serializeProvisionerConfig, ProvisionerConfigInput } from '../../../src/config';
import { directoryPVName, provisionerName } from '../../../src/runtime/pv';
import { AgentProcess, parseJson } from '../../support/agent-process';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir } from '../../support/privileged';
import { eventually } from '../kube/fixtures';
import { createStorageClass, JOB_NAMESPACE, localFsPv, NODE_NAME, seedCluster } from '../static/fixture';

const MiB = 1024 * 1024;


/** A running `local-volume-provisioner run`. */
function startRun(options: { kubeconfig: string; configDir: string; discoveryPeriod?: string }): AgentProcess {
  return AgentProcess.start([
    'run',
    '--config-dir', options.configDir,
    '--listen-address', '127.0.0.1:0',
    '--discovery-period', options.discoveryPeriod ?? '1m',
    '--config-sync-period', '1s',
  ], { KUBECONFIG: options.kubeconfig, MY_NODE_NAME: NODE_NAME, MY_NAMESPACE: JOB_NAMESPACE });
}

describePrivileged('the local-volume-provisioner bin', () => {
  let server: Kubernetes | undefined;
  const bins: AgentProcess[] = [];
  afterEach(async () => {
    for (const bin of bins.splice(0)) {
      if (bin.running) await bin.kill('SIGKILL');
    }
    await server?.reset();
    server = undefined;
  });
  afterAll(cleanupPrivileged);

  /** A server with this node, the class's StorageClass, and a config dir + kubeconfig for the bin. */
  async function setUp(config: ProvisionerConfigInput, taints: V1Taint[] = []) {
    server = await Kubernetes.forSuite({ controllers: true });
    await seedCluster(server, {}, taints);
    for (const name of Object.keys(config.storageClassMap ?? {})) await createStorageClass(server, name, {});
    const work = makeTempDir('lvp-bin-');
    const kubeconfig = path.join(work, 'kubeconfig');
    await server.writeKubeconfig(kubeconfig);
    const configDir = path.join(work, 'config');
    fs.mkdirSync(configDir);
    writeConfig(configDir, config);
    const start = () => {
      const bin = startRun({ kubeconfig, configDir });
      bins.push(bin);
      return bin;
    };
    return { server, start, configDir, core: server.kubeConfig().makeApiClient(CoreV1Api) };
  }

  const pvOf = async (s: Kubernetes, name: string) => s.get<V1PersistentVolume>('v1', 'PersistentVolume', name);

  test('becomes ready after the first pass, serves metrics, offers a new mount point within about a second, and stops on SIGTERM', async () => {
    const dir = makeTempDir('lvp-disks-');
    makeMountPoint(path.join(dir, 'vol1'));
    // A stray directory is a rejected entry, not a reason to stay unready.
    fs.mkdirSync(path.join(dir, 'lost+found'));
    const { server: s, start } = await setUp({ storageClassMap: { 'local-fs': { hostDir: '/mnt/host/local-fs', mountDir: dir } } });

    const bin = start();
    await bin.waitReady();

    expect(await pvOf(s, directoryPVName('vol1', NODE_NAME, 'local-fs'))).toBeDefined();
    expect((await bin.get('/healthz')).status).toBe(200);
    const metrics = await bin.get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body).toMatch(/^local_volume_provisioner_persistentvolume_discovery_total\{mode="Filesystem"\} 1$/m);

    // The fallback period is a minute: only the change watchers can make this quick.
    const vol2 = directoryPVName('vol2', NODE_NAME, 'local-fs');
    const started = performance.now();
    makeMountPoint(path.join(dir, 'vol2'));
    await eventually(async () => (await pvOf(s, vol2)) !== undefined, 'the new mount point has a PV', 20_000);
    const ms = performance.now() - started;
    process.stdout.write(`new mount point to PV: ${ms.toFixed(0)} ms\n`);
    expect(ms).toBeLessThan(20_000);

    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('a discovery directory created after the start is watched too: a device link put in it is offered at once', async () => {
    const dir = path.join(makeTempDir('lvp-later-'), 'disks');
    const { server: s, start } = await setUp({
      storageClassMap: { 'local-block': { hostDir: '/mnt/host/local-block', mountDir: dir, volumeMode: 'Block' } },
    });
    const bin = start();
    await bin.waitReady();

    fs.mkdirSync(dir);
    // Within a config-sync period (1 s) it is watched; a symlink changes no mount, so only the watch can see it.
    await new Promise((r) => setTimeout(r, 2500));
    const loop = createLoopDevice(8 * MiB);
    const started = performance.now();
    fs.symlinkSync(loop.device, path.join(dir, 'disk1'));
    await eventually(async () => (await pvOf(s, directoryPVName('disk1', NODE_NAME, 'local-block'))) !== undefined, 'the device has a PV', 20_000);
    process.stdout.write(`new device link to PV: ${(performance.now() - started).toFixed(0)} ms\n`);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('applies a changed configuration without a restart, and keeps the last good one when a change is invalid', async () => {
    const first = makeTempDir('lvp-disks-');
    const second = makeTempDir('lvp-disks-');
    makeMountPoint(path.join(first, 'vol1'));
    makeMountPoint(path.join(second, 'vol1'));
    const one = { 'local-fs': { hostDir: '/mnt/host/local-fs', mountDir: first } };
    const { server: s, start, configDir } = await setUp({ storageClassMap: one });
    await createStorageClass(s, 'local-two', {});
    const bin = start();
    await bin.waitReady();
    expect(await pvOf(s, directoryPVName('vol1', NODE_NAME, 'local-two'))).toBeUndefined();
    const lists = s.counters.get('list', 'persistentvolumes').requests;

    writeConfig(configDir, { storageClassMap: { ...one, 'local-two': { hostDir: '/mnt/host/local-two', mountDir: second } } });
    await eventually(async () => (await pvOf(s, directoryPVName('vol1', NODE_NAME, 'local-two'))) !== undefined, 'the new class is provisioned', 20_000);
    // Applied without a relist of the PVs.
    expect(s.counters.get('list', 'persistentvolumes').requests).toBe(lists);

    // YAML the Go provisioner cannot read either.
    writeConfigFile(configDir, 'storageClassMap', 'local-fs:\n  hostDir: [/mnt/host/local-fs\n');
    await eventually(async () => (await s.list('v1', 'Event', 'default')).some((e) => e.reason === 'ConfigInvalid'), 'a ConfigInvalid Event', 20_000);
    const invalid = (await s.list('v1', 'Event', 'default')).find((e) => e.reason === 'ConfigInvalid');
    expect(invalid.message).toContain('storageClassMap: YAML syntax error');
    // The last good configuration (both classes) is still in force.
    makeMountPoint(path.join(second, 'vol2'));
    await eventually(async () => (await pvOf(s, directoryPVName('vol2', NODE_NAME, 'local-two'))) !== undefined, 'the old config still provisions', 20_000);
    expect((await bin.get('/metrics')).body).toMatch(/^local_volume_provisioner_config_reloads_total\{result="failed"\} 1$/m);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('runs without a class that has a problem of its own, says so in an Event and a metric, and runs the others', async () => {
    const good = makeTempDir('lvp-disks-');
    makeMountPoint(path.join(good, 'vol1'));
    const { server: s, start, configDir } = await setUp({ storageClassMap: { 'local-fs': { hostDir: '/mnt/host/local-fs', mountDir: good } } });
    writeConfigFile(configDir, 'storageClassMap', `local-fs:\n  hostDir: /mnt/host/local-fs\n  mountDir: ${good}\n`
      + 'local-bad:\n  hostDir: /mnt/host/local-bad\n  mountDir: /mnt/local-bad\n  volumeMode: block\n');
    const bin = start();
    await bin.waitReady();
    await eventually(async () => (await pvOf(s, directoryPVName('vol1', NODE_NAME, 'local-fs'))) !== undefined, 'the good class is provisioned', 20_000);
    await eventually(async () => (await s.list('v1', 'Event', 'default')).some((e) => e.reason === 'StorageClassSkipped'), 'a StorageClassSkipped Event', 20_000);
    const skipped = (await s.list('v1', 'Event', 'default')).find((e) => e.reason === 'StorageClassSkipped');
    expect(skipped.message).toBe('storageClassMap.local-bad is left out: storageClassMap.local-bad.volumeMode: "block" is not one of Filesystem, Block; the other classes run');
    expect((await bin.get('/metrics')).body).toMatch(/^local_volume_provisioner_config_skipped_storageclass\{storageclass="local-bad"\} 1$/m);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('removes the startup taint from its Node once discovery is ready, and only that taint', async () => {
    const dir = makeTempDir('lvp-disks-');
    const startup = { key: 'example.com/local-volumes-not-ready', effect: 'NoSchedule' };
    const other = { key: 'example.com/dedicated', value: 'storage', effect: 'NoSchedule' };
    const { server: s, start } = await setUp({
      storageClassMap: { 'local-fs': { hostDir: '/mnt/host/local-fs', mountDir: dir } },
      removeNodeNotReadyTaint: true,
      provisionerNotReadyNodeTaintKey: startup.key,
    }, [startup, other]);

    const bin = start();
    await bin.waitReady();

    await eventually(async () => ((await s.get('v1', 'Node', NODE_NAME)).spec?.taints ?? []).length === 1, 'the startup taint is removed', 20_000);
    expect((await s.get('v1', 'Node', NODE_NAME)).spec.taints).toEqual([other]);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('labelling the Go provisioner\'s PVs refused though the access review allowed it (an admission webhook): runs without patch, says so on its Node, and still cleans those PVs when Released', async () => {
    const dir = makeTempDir('lvp-disks-');
    makeMountPoint(path.join(dir, 'vol1'));
    const { server: s, start, core } = await setUp({ storageClassMap: { 'local-fs': { hostDir: dir, mountDir: dir } } });
    const goName = provisionerName(NODE_NAME, (await s.get('v1', 'Node', NODE_NAME)).metadata.uid, false);
    const name = directoryPVName('vol1', NODE_NAME, 'local-fs');
    const old = await s.create<V1PersistentVolume>(localFsPv(name, path.join(dir, 'vol1'), goName));
    s.faults.failNext({ verb: 'patch', resource: 'persistentvolumes', code: 403, count: 1_000 });

    const bin = start();
    await bin.waitReady();

    const permission = async () => (await s.list('v1', 'Event', 'default')).filter((e) => e.reason === 'PermissionMissing');
    await eventually(async () => (await permission()).length > 0, 'a PermissionMissing Event', 20_000);
    expect((await permission())[0]).toMatchObject({ type: 'Warning', involvedObject: { kind: 'Node', name: NODE_NAME } });
    expect((await permission())[0].message).toContain('labelling this node\'s older PVs was refused');
    // Without patch every PV is watched: the unlabelled PV is still this node's to clean once Released.
    fs.writeFileSync(path.join(dir, 'vol1', 'data.txt'), 'a former tenant\'s data');
    await releaseThroughClaim(s, core, name);
    await eventually(async () => {
      const pv = await pvOf(s, name);
      return pv !== undefined && pv.metadata!.uid !== old.metadata!.uid && pv.status?.phase === 'Available';
    }, 'the volume is cleaned and offered again under a new UID', 20_000);
    expect(fs.readdirSync(path.join(dir, 'vol1'))).toEqual([]);
    expect(bin.running).toBe(true);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('SIGTERM during a cleanup stops the cleaner with its process group, keeps the PV Released, and exits 0', async () => {
    const dir = makeTempDir('lvp-block-');
    const log = path.join(makeTempDir(), 'cleaner.log');
    const loop = createLoopDevice(8 * MiB);
    fs.symlinkSync(loop.device, path.join(dir, 'disk1'));
    const cleaner = ['sh', '-c', `echo start >> ${log}; sleep 30; echo done >> ${log}`];
    const { server: s, start, core } = await setUp({
      storageClassMap: { 'local-block': { hostDir: '/mnt/host/local-block', mountDir: dir, volumeMode: 'Block', blockCleanerCommand: cleaner } },
    });
    const name = directoryPVName('disk1', NODE_NAME, 'local-block');
    const bin = start();
    await bin.waitReady();
    await eventually(async () => (await pvOf(s, name))?.status?.phase === 'Available', 'the PV is Available');
    const uid = (await pvOf(s, name))!.metadata!.uid!;
    await releaseThroughClaim(s, core, name);
    await eventually(async () => readLog(log).length === 1, 'the cleaner started', 20_000);

    expect(await bin.kill('SIGTERM')).toBe(0);

    // Nothing of the cleaner is left running (its script names the log).
    await eventually(async () => !cleanerRunning(log), 'the cleaner is gone', 20_000);
    expect(readLog(log)).toEqual(['start']);
    expect(await pvOf(s, name)).toMatchObject({ metadata: { uid }, status: { phase: 'Released' } });
  });

  test('kill -9 during a cleanup leaves the PV Released; after a restart it is cleaned again from the start, deleted and offered anew', async () => {
    const dir = makeTempDir('lvp-block-');
    const log = path.join(makeTempDir(), 'cleaner.log');
    const loop = createLoopDevice(8 * MiB);
    fs.symlinkSync(loop.device, path.join(dir, 'disk1'));
    const cleaner = ['sh', '-c', `n=$(cat ${log} 2>/dev/null | grep -c start); echo "start $n" >> ${log}; echo "wiping, attempt $n"; sleep 1; echo "done $n" >> ${log}`];
    const { server: s, start, core } = await setUp({
      storageClassMap: { 'local-block': { hostDir: '/mnt/host/local-block', mountDir: dir, volumeMode: 'Block', blockCleanerCommand: cleaner } },
    });
    const name = directoryPVName('disk1', NODE_NAME, 'local-block');

    const first = start();
    await first.waitReady();
    await eventually(async () => (await pvOf(s, name))?.status?.phase === 'Available', 'the PV is Available');
    const uid = (await pvOf(s, name))!.metadata!.uid!;
    await releaseThroughClaim(s, core, name);

    await eventually(async () => readLog(log).length === 1, 'the cleaner started', 20_000);
    expect(await first.kill('SIGKILL')).toBeNull();
    // The cleaner the killed agent started dies with it: it never writes on after the agent is gone.
    await eventually(async () => !cleanerRunning(log), 'the killed agent\'s cleaner is gone', 20_000);
    expect(await pvOf(s, name)).toMatchObject({ metadata: { uid }, status: { phase: 'Released' } });
    expect(readLog(log)).toEqual(['start 0']);

    const second = start();
    await eventually(async () => readLog(log).some((l) => l.startsWith('done')), 'the cleanup ran again and finished', 20_000);
    expect(readLog(log)).toEqual(['start 0', 'start 1', 'done 1']);
    // The cleaner's output is logged line by line, naming the volume.
    await eventually(async () => second.lines.some((l) => parseJson(l)?.msg === 'wiping, attempt 1'), 'the cleaner output is logged');
    expect(parseJson(second.lines.find((l) => parseJson(l)?.msg === 'wiping, attempt 1')!)).toMatchObject({ pv: name, stream: 'stdout' });
    await eventually(async () => {
      const pv = await pvOf(s, name);
      return pv !== undefined && pv.metadata!.uid !== uid && pv.status?.phase === 'Available';
    }, 'the volume is offered again under a new UID', 20_000);
    expect(await second.kill('SIGTERM')).toBe(0);
  });
  test('kill -9 during a cleanup, then the PV deleted by an administrator while the agent is down: the volume is cleaned before it is offered again', async () => {
    const dir = makeTempDir('lvp-block-');
    const gate = path.join(makeTempDir(), 'gate');
    const waiting = `${gate}.waiting`;
    const loop = createLoopDevice(8 * MiB);
    fs.symlinkSync(loop.device, path.join(dir, 'disk1'));
    // Zeroes the disk, but only once the test opens the gate. It says it waits from inside: by then its wrappers
    // (setpriv, unshare) have armed the signal that kills it with the agent; their names match it before that.
    const cleaner = ['sh', '-c', `touch ${waiting}; while [ ! -e ${gate} ]; do sleep 0.05; done; dd if=/dev/zero of="$LOCAL_PV_BLKDEVICE" bs=65536 count=1 conv=notrunc,fsync status=none`];
    const { server: s, start, core } = await setUp({
      storageClassMap: { 'local-block': { hostDir: '/mnt/host/local-block', mountDir: dir, volumeMode: 'Block', blockCleanerCommand: cleaner } },
    });
    const name = directoryPVName('disk1', NODE_NAME, 'local-block');
    const first = start();
    await first.waitReady();
    await eventually(async () => (await pvOf(s, name))?.status?.phase === 'Available', 'the PV is Available');
    const uid = (await pvOf(s, name))!.metadata!.uid!;
    fs.writeFileSync(loop.backingFile, 'the last tenant\'s data');
    await releaseThroughClaim(s, core, name);
    await eventually(async () => fs.existsSync(waiting), 'the cleaner waits at the gate', 20_000);

    expect(await first.kill('SIGKILL')).toBeNull();
    await eventually(async () => !cleanerRunning(gate), 'the killed agent\'s cleaner is gone', 20_000);
    await core.deletePersistentVolume({ name });
    // Held by our finalizer: nobody can offer the volume again meanwhile.
    expect((await pvOf(s, name))?.metadata?.uid).toBe(uid);
    expect(fs.readFileSync(loop.backingFile, 'utf8').slice(0, 22)).toBe('the last tenant\'s data');

    fs.writeFileSync(gate, '');
    const second = start();
    await eventually(async () => {
      const pv = await pvOf(s, name);
      return pv !== undefined && pv.metadata!.uid !== uid && pv.status?.phase === 'Available';
    }, 'the volume is offered again under a new UID', 20_000);
    expect(fs.readFileSync(loop.backingFile).subarray(0, 22).every((b) => b === 0)).toBe(true);
    expect(await second.kill('SIGTERM')).toBe(0);
  });

  test('kill -9 twenty times across tenants\' cycles (bind, write, release, clean, let go, offer): no PV is ever Available over a tenant\'s files', async () => {
    const dir = makeTempDir('lvp-disks-');
    const volume = path.join(dir, 'vol1');
    makeMountPoint(volume);
    const { server: s, start, core } = await setUp({ storageClassMap: { 'local-fs': { hostDir: '/mnt/host/local-fs', mountDir: dir } } });
    const name = directoryPVName('vol1', NODE_NAME, 'local-fs');
    let tenants = 0;
    let offers = 0;
    for (let i = 0; i < 20; i++) {
      const bin = start();
      // Killed at a different moment each time after its first pass: mid-clean (thousands of files), between a clean and its
      // PV going, between the PV going and the record saying clean, at rest; every fourth time before it is even ready.
      if (i % 4 !== 3) await bin.waitReady();
      await new Promise((r) => setTimeout(r, (i * 137) % 700));
      expect(await bin.kill('SIGKILL')).toBeNull();
      const pvs = (await s.list<V1PersistentVolume>('v1', 'PersistentVolume')).filter((pv) => pv.spec?.local?.path === '/mnt/host/local-fs/vol1');
      expect(pvs.length).toBeLessThanOrEqual(1);
      const pv = pvs[0];
      if (pv?.status?.phase === 'Available' && pv.metadata?.deletionTimestamp === undefined) {
        // The invariant: what is offered is empty, whenever the agent died.
        expect([i, fs.readdirSync(volume)]).toEqual([i, []]);
        offers++;
        // The next tenant: thousands of files, so that the next clean takes a while.
        tenants++;
        for (let f = 0; f < 3000; f++) fs.writeFileSync(path.join(volume, `tenant${tenants}-${f}`), 'x');
        await releaseThroughClaim(s, core, name);
      }
    }
    // After the last kill, one agent runs to the end: the last tenant's files go before the volume is offered.
    const last = start();
    await eventually(async () => {
      const pv = await pvOf(s, name);
      return pv?.status?.phase === 'Available' && pv.metadata?.deletionTimestamp === undefined && fs.readdirSync(volume).length === 0;
    }, 'the volume is clean and offered', 60_000);
    process.stdout.write(`kill -9 ×20: ${tenants} tenants\n`);
    expect(tenants).toBeGreaterThan(1);
    expect(offers).toBe(tenants);
    expect(await last.kill('SIGTERM')).toBe(0);
  }, 300_000);

  test('two agents on one node (a rollout with maxSurge): the second waits, ready; one cleanup per volume; it takes over when the first is gone', async () => {
    const dir = makeTempDir('lvp-block-');
    const log = path.join(makeTempDir(), 'cleaner.log');
    fs.symlinkSync(createLoopDevice(8 * MiB).device, path.join(dir, 'disk1'));
    const cleaner = ['sh', '-c', `echo start >> ${log}; sleep 1; echo done >> ${log}`];
    const { server: s, start, core } = await setUp({
      storageClassMap: { 'local-block': { hostDir: '/mnt/host/local-block', mountDir: dir, volumeMode: 'Block', blockCleanerCommand: cleaner } },
    });
    const name = directoryPVName('disk1', NODE_NAME, 'local-block');
    const first = start();
    await first.waitReady();
    const second = start();
    await second.waitReady();
    await eventually(async () => /^local_volume_provisioner_waiting_for_another_agent 1$/m.test((await second.get('/metrics')).body),
      'the second agent says it waits', 20_000);
    expect((await first.get('/metrics')).body).toMatch(/^local_volume_provisioner_waiting_for_another_agent 0$/m);

    await eventually(async () => (await pvOf(s, name))?.status?.phase === 'Available', 'the PV is Available');
    const uid = (await pvOf(s, name))!.metadata!.uid!;
    await releaseThroughClaim(s, core, name);
    await eventually(async () => {
      const now = await pvOf(s, name);
      return now !== undefined && now.metadata!.uid !== uid;
    }, 'the volume is offered again', 20_000);
    expect(readLog(log)).toEqual(['start', 'done']);

    expect(await first.kill('SIGKILL')).toBeNull();
    await eventually(async () => /^local_volume_provisioner_waiting_for_another_agent 0$/m.test((await second.get('/metrics')).body),
      'the second agent takes over', 20_000);
    fs.symlinkSync(createLoopDevice(8 * MiB).device, path.join(dir, 'disk2'));
    await eventually(async () => (await pvOf(s, directoryPVName('disk2', NODE_NAME, 'local-block'))) !== undefined, 'the second agent offers a new disk', 20_000);
    expect(await second.kill('SIGTERM')).toBe(0);
  });
});

/** Binds a claim to the Block PV and deletes the claim: the PV becomes Released. */
async function releaseThroughClaim(s: Kubernetes, core: CoreV1Api, pvName: string): Promise<void> {
  await s.bindNewClaim(pvName, 'data');
  await core.deleteNamespacedPersistentVolumeClaim({ name: 'data', namespace: 'default' });
}

/** Writes the ConfigMap files as kubelet would present them, each replaced at once. */
function writeConfig(configDir: string, config: ProvisionerConfigInput): void {
  const resolved = resolveProvisionerConfig(config);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.errors));
  for (const [key, value] of Object.entries(serializeProvisionerConfig(resolved.config))) writeConfigFile(configDir, key, value);
}

function writeConfigFile(configDir: string, key: string, value: string): void {
  const temp = path.join(configDir, `.${key}.tmp`);
  fs.writeFileSync(temp, value);
  fs.renameSync(temp, path.join(configDir, key));
}

function readLog(file: string): string[] {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Whether a process of a cleaner whose script names `marker` (a file it writes or waits for) is still running. */
function cleanerRunning(marker: string): boolean {
  return spawnSync('pgrep', ['-f', marker]).status === 0;
}
