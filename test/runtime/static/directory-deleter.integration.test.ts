/**
 * Upstream's deleter cases and our safety rules, end to end through the
 * DirectoryController: claims bound and deleted in a real control plane (its PV
 * controller makes the PV Released), real mount points and loop devices cleaned
 * in this process.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PatchStrategy, setHeaderOptions, V1PersistentVolume } from '@kubernetes/client-node';
import { ControllerFixture, eventually, FixtureOptions, NODE_HOSTNAME, NODE_NAME } from './fixture';
import { NODE_LABEL, PROVISIONED_BY_ANNOTATION } from '../../../src/runtime/well-known';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount, unmount } from '../../support/privileged';

const MiB = 1024 * 1024;
const SCRIPTS = path.resolve(__dirname, '../../../image/scripts');

/** What a user leaves behind: a file, a read-only file, a nested tree with a read-only directory. */
function fillVolume(dir: string): void {
  fs.writeFileSync(path.join(dir, 'data.bin'), 'user data');
  fs.writeFileSync(path.join(dir, 'readonly.txt'), 'keep out');
  fs.chmodSync(path.join(dir, 'readonly.txt'), 0o444);
  fs.mkdirSync(path.join(dir, 'nested', 'deeper'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'nested', 'deeper', 'file'), 'x');
  fs.chmodSync(path.join(dir, 'nested', 'deeper'), 0o555);
}

function isMountPoint(dir: string): boolean {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === dir);
}

/**
 * A shell cleaner that logs `start`/`done` lines with an id of its own run to `log`, and fails with 10 the
 * first `failures` times. (Not its pid: a cleaner runs as the first process of a PID namespace of its own.)
 */
function loggingCleaner(log: string, options: { failures?: number; sleepSeconds?: number } = {}): string[] {
  const script = [
    'id=$(cat /proc/sys/kernel/random/uuid)',
    `echo "start $id $LOCAL_PV_BLKDEVICE" >> ${log}`,
    `n=$(grep -c '^start' ${log})`,
    options.sleepSeconds ? `sleep ${options.sleepSeconds}` : ':',
    `if [ "$n" -le ${options.failures ?? 0} ]; then echo "fail $id" >> ${log}; exit 10; fi`,
    `echo "done $id" >> ${log}`,
  ].join('\n');
  return ['sh', '-c', script];
}

function logLines(log: string): string[] {
  return fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : [];
}

// Both ways of holding PVs: with our finalizer (the construct's RBAC) and without (the Go provisioner's).
describe.each(['finalizer', 'legacy'] as const)('%s mode', (mode) => describePrivileged('the deleter through the controller', () => {
  const start = (options: FixtureOptions = {}) => ControllerFixture.start({ ...options, mode });
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);
  // Real cleaners on loop devices, on a busy machine.

  /** Makes `entry` a mount point in the class's directory and gives it a PV; returns the PV. */
  async function provision(className: string, entry: string): Promise<{ pv: V1PersistentVolume; dir: string }> {
    const dir = path.join(fx!.dirs[className], entry);
    makeMountPoint(dir);
    await fx!.pass();
    return { pv: await fx!.waitForPv(fx!.pvName(className, entry), { phase: 'Available' }), dir };
  }

  /** A symlink to a new loop device in the class's directory, with a PV. */
  async function provisionDevice(className: string, entry: string, sizeBytes = 8 * MiB) {
    const loop = createLoopDevice(sizeBytes);
    fs.symlinkSync(loop.device, path.join(fx!.dirs[className], entry));
    await fx!.pass();
    return { pv: await fx!.waitForPv(fx!.pvName(className, entry), { phase: 'Available' }), loop };
  }

  test('a volume offered again after its cleanup is measured afresh: its filesystem grew while it was bound', async () => {
    fx = await start();
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    const resize = (size: string) => execFileSync('mount', ['-o', `remount,size=${size}`, dir]);
    mount('tmpfs', dir, { type: 'tmpfs' });
    resize('16m');
    const name = fx.pvName('local-fs', 'vol1');
    await fx.pass();
    const pv = await fx.waitForPv(name, { phase: 'Available' });
    expect(pv.spec!.capacity!.storage).toBe('16Mi');
    resize('32m');
    await fx.pass();
    await fx.release(name);

    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    expect((await fx.pass()).created).toEqual([name]);
    expect((await fx.waitForPv(name, { phase: 'Available' })).spec!.capacity!.storage).toBe('32Mi');
  });

  /** A filled volume of local-fs whose PV is released, cleaned and gone. */
  async function releasedAndCleaned(): Promise<{ f: ControllerFixture; pv: V1PersistentVolume; dir: string; name: string }> {
    const f = fx = await start();
    const { pv, dir } = await provision('local-fs', 'vol1');
    const name = pv.metadata!.name!;
    fillVolume(dir);
    await f.release(name);
    await f.pass();
    await f.settle();
    await f.waitForPvGone(name, pv.metadata!.uid);
    return { f, pv, dir, name };
  }

  test('a Released PV with reclaim policy Delete is emptied, deleted, and offered again with a new UID and an empty volume', async () => {
    const { f, pv, dir, name } = await releasedAndCleaned();
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(isMountPoint(dir)).toBe(true);

    expect((await f.pass()).created).toEqual([name]);
    const again = await f.waitForPv(name, { phase: 'Available' });
    expect(again.metadata!.uid).not.toBe(pv.metadata!.uid);
    expect(fs.readdirSync(dir)).toEqual([]);
    const [started] = await f.recordedEvents('CleanupStarted');
    expect(started).toMatchObject({ type: 'Normal', involvedObject: { name, uid: pv.metadata!.uid } });
    const metrics = await f.metrics.exposition();
    expect(metrics).toMatch(/local_volume_provisioner_persistentvolume_delete_total\{mode="Filesystem",type="process"\} 1/);
    // Upstream's label: the class's blockCleanerCommand[0], though a directory is emptied in this process.
    expect(metrics).toMatch(/^local_volume_provisioner_persistentvolume_delete_duration_seconds_count\{mode="Filesystem",type="process",capacity="\d+G",cleanup_command="\/scripts\/quick_reset\.sh"\} 1$/m);
    expect(metrics).toMatch(/^local_volume_provisioner_proctable_succeeded 1$/m);
  });

  test('a finished cleanup is said on its PV: CleanupSucceeded names the path, the cleaner and the time it took', async () => {
    const { f, pv, name } = await releasedAndCleaned();
    const [succeeded] = await f.recordedEvents('CleanupSucceeded');
    expect(succeeded).toMatchObject({ type: 'Normal', involvedObject: { kind: 'PersistentVolume', name, uid: pv.metadata!.uid } });
    expect(succeeded.message).toMatch(/^cleaned "\/.+\/vol1" by emptying it in the agent in \d+\.\ds; PV (deleted|released to be deleted)$/);
  });

  test('the root the administrator prepared (mode, owner, ACL) is what each clean gives back, whatever the tenant did to it', async () => {
    fx = await start();
    const loop = createLoopDevice(32 * MiB);
    mkfsExt4(loop.device);
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    mount(loop.device, dir);
    fs.chmodSync(dir, 0o1777);
    fs.chownSync(dir, 1000, 1000);
    execFileSync('setfacl', ['-m', 'u:2000:rwx', dir]);
    const acl = () => execFileSync('getfacl', ['-cp', dir], { encoding: 'utf8' });
    const prepared = acl();
    const name = fx.pvName('local-fs', 'vol1');
    await fx.pass();
    const pv = await fx.waitForPv(name, { phase: 'Available' });

    fillVolume(dir);
    fs.chmodSync(dir, 0o700);
    fs.chownSync(dir, 3000, 3000);
    execFileSync('setfacl', ['-b', dir]);
    execFileSync('setfattr', ['-n', 'user.tenant', '-v', 'was-here', dir]);
    await fx.release(name);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);

    const st = fs.statSync(dir);
    expect([st.mode % 0o10000, st.uid, st.gid]).toEqual([0o1777, 1000, 1000]);
    expect(acl()).toBe(prepared);
    expect(execFileSync('getfattr', ['-d', '-m', '^user\\.', dir], { encoding: 'utf8' })).toBe('');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('a block device in a Filesystem class is cleaned by the class\'s command and counted with mode Block, as upstream labels what is at the path', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({ classes: { 'local-fs': { blockCleanerCommand: loggingCleaner(log) } } });
    const { pv } = await provisionDevice('local-fs', 'disk1');
    expect(pv.spec!.volumeMode).toBe('Filesystem');
    await fx.release(pv.metadata!.name!);

    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(pv.metadata!.name!, pv.metadata!.uid);
    expect(logLines(log).map((l) => l.split(' ')[0])).toEqual(['start', 'done']);
    // The next pass reports it.
    await fx.pass();
    const metrics = await fx.metrics.exposition();
    expect(metrics).toMatch(/^local_volume_provisioner_persistentvolume_delete_total\{mode="Block",type="process"\} 1$/m);
    expect(metrics).not.toMatch(/persistentvolume_delete_total\{mode="Filesystem"/);
  });

  test('a pass right after a cleanup, while the cache still lists the deleted PV, neither cleans it again nor counts a failure', async () => {
    fx = await start();
    const { pv } = await provision('local-fs', 'vol1');
    const name = pv.metadata!.name!;
    await fx.release(name);
    // As run-directory.ts does: the Node comes from a cache, so nothing delays the next pass.
    const node = await fx.node();
    await fx.pass();
    await fx.table.idle();

    await fx.controller.pass(fx.config, node);
    await fx.table.idle();
    await fx.controller.pass(fx.config, node);
    await fx.settle();

    expect((await fx.recordedEvents('CleanupStarted')).map((e) => e.count)).toEqual([1]);
    expect(await fx.recordedEvents('CleanupFailed')).toEqual([]);
    expect(await fx.metrics.exposition()).not.toMatch(/persistentvolume_delete_failed_total\{[^}]*\} [1-9]/);
  });

  test('10 volumes through 4 rounds of churn: each round every volume comes back under a new UID, empty, and exactly once', async () => {
    fx = await start();
    const entries = Array.from({ length: 10 }, (_, i) => `vol${i}`);
    for (const e of entries) makeMountPoint(path.join(fx.dirs['local-fs'], e));
    await fx.pass();
    const names = entries.map((e) => fx!.pvName('local-fs', e));
    await fx.waitForCache((pvs) => pvs.filter((p) => p.status?.phase === 'Available').length === 10, 'ten Available PVs');

    for (let round = 1; round <= 4; round++) {
      const before = new Map(names.map((n) => [n, fx!.cache.get(n)!.metadata!.uid!]));
      const claims = await Promise.all(names.map((n) => fx!.bind(n, `claim-${n}-${round}`)));
      for (const e of entries) fs.writeFileSync(path.join(fx.dirs['local-fs'], e, `round-${round}`), 'user data');
      await fx.waitForCache((pvs) => pvs.filter((p) => p.status?.phase === 'Bound').length === 10, 'all bound');
      for (const claim of claims) await fx.core.deleteNamespacedPersistentVolumeClaim({ name: claim, namespace: 'default' });

      // The bound is on a hang, not on speed: on two busy cores a round has taken over 15 s.
      await eventually(async () => {
        await fx!.pass();
        await fx!.settle();
        return names.every((n) => {
          const pv = fx!.cache.get(n);
          return pv !== undefined && pv.metadata!.uid !== before.get(n) && pv.status?.phase === 'Available';
        });
      }, `round ${round}: every volume is offered again under a new UID`, 60_000);

      expect(await fx.serverPvNames()).toEqual([...names].sort());
      for (const e of entries) expect(fs.readdirSync(path.join(fx.dirs['local-fs'], e))).toEqual([]);
    }
    expect(await fx.recordedEvents('CleanupFailed')).toEqual([]);
  }, 300_000);

  test('Available and Bound PVs, and Released ones with reclaim policy Retain, are untouched', async () => {
    fx = await start({
      classes: { 'local-fs': {}, 'local-retain': { storageClass: { reclaimPolicy: 'Retain' } } },
    });
    const available = await provision('local-fs', 'available');
    const bound = await provision('local-fs', 'bound');
    const retained = await provision('local-retain', 'kept');
    for (const v of [available, bound, retained]) fillVolume(v.dir);
    await fx.bind(bound.pv.metadata!.name!);
    await fx.waitForPv(bound.pv.metadata!.name!, { phase: 'Bound' });
    await fx.release(retained.pv.metadata!.name!);

    await fx.pass();
    await fx.settle();
    await fx.pass();
    await fx.settle();

    for (const v of [available, bound, retained]) {
      expect((await fx.serverPv(v.pv.metadata!.name!))!.metadata!.uid).toBe(v.pv.metadata!.uid);
      expect(fs.readdirSync(v.dir).sort()).toEqual(['data.bin', 'nested', 'readonly.txt']);
    }
    expect(await fx.recordedEvents('CleanupStarted')).toEqual([]);
  });

  test('a Released PV that is already being deleted is untouched', async () => {
    fx = await start();
    const { pv, dir } = await provision('local-fs', 'vol1');
    const name = pv.metadata!.name!;
    fillVolume(dir);
    await fx.release(name, async () => {
      // Something else holds it in deletion.
      await fx!.core.patchPersistentVolume({ name, body: { metadata: { finalizers: ['example.com/hold', 'kubernetes.io/pv-protection'] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    });
    await fx.core.deletePersistentVolume({ name });
    await fx.waitForCache(() => fx!.cache.get(name)?.metadata?.deletionTimestamp !== undefined, 'the PV is being deleted');

    await fx.pass();
    await fx.settle();

    expect(fs.readdirSync(dir)).toHaveLength(3);
    expect(await fx.recordedEvents('CleanupStarted')).toEqual([]);
  });

  test('a Released PV with reclaim policy Recycle gets a Warning and keeps its data', async () => {
    fx = await start();
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(dir);
    fillVolume(dir);
    const name = fx.pvName('local-fs', 'vol1');
    // Made by hand (a StorageClass cannot say Recycle for us), Released by a claim that is gone. The PV
    // controller would go on to recycle it, find no recycler for a local volume and mark it Failed: paused,
    // it leaves the PV Released, as our agent may see it in that window.
    await fx.server.plane.pauseControllers();
    const created = await fx.server.create(releasedPv(name, '/mnt/host/local-fs/vol1', await fx.provisionerName(), 'Recycle'));
    await fx.core.replacePersistentVolumeStatus({ name, body: { ...created, status: { phase: 'Released' } } });
    await fx.waitForPv(name, { phase: 'Released' });

    await fx.pass();
    await fx.settle();

    expect(fs.readdirSync(dir)).toHaveLength(3);
    // Upstream's reason.
    const [warning] = await fx.recordedEvents('VolumeUnsupportedReclaimPolicy');
    expect(warning).toMatchObject({ type: 'Warning', involvedObject: { kind: 'PersistentVolume', name } });
    expect(warning.message).toContain('Recycle');
  });

  test('a Released PV of another provisioner at our path is not touched', async () => {
    fx = await start();
    const dir = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(dir);
    fillVolume(dir);
    await fx.server.create(releasedPv('someone-elses', '/mnt/host/local-fs/vol1', 'local-volume-provisioner-other-node-uid', 'Delete'));
    await fx.waitForPv('someone-elses', { phase: 'Released' });

    await fx.pass();
    await fx.settle();

    expect(await fx.serverPv('someone-elses')).toBeDefined();
    expect(fs.readdirSync(dir)).toHaveLength(3);
  });

  test('a failing block cleanup (exit 10) is reported and retried after the backoff, then the PV is deleted', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log, { failures: 1 }) } },
      backoff: { initialMs: 1000, maxMs: 1000 },
    });
    const { pv } = await provisionDevice('local-block', 'disk1');
    const name = pv.metadata!.name!;
    await fx.release(name);

    await fx.pass();
    await fx.settle();
    expect(logLines(log).map((l) => l.split(' ')[0])).toEqual(['start', 'fail']);
    // The cleaner gets a path that names the checked device while it runs, not the link.
    expect(logLines(log)[0]).toMatch(/^start [0-9a-f-]+ \/proc\/\d+\/fd\/\d+$/);

    // Reports the failure; inside the backoff nothing starts again.
    await fx.pass();
    await fx.settle();
    expect(logLines(log)).toHaveLength(2);
    expect((await fx.serverPv(name))!.metadata!.uid).toBe(pv.metadata!.uid);
    const [failed] = await fx.recordedEvents('CleanupFailed');
    expect(failed).toMatchObject({ type: 'Warning', involvedObject: { name } });
    expect(failed.message).toMatch(/10/);

    await fx.waitForRetry(pv.metadata!.uid!);
    await fx.pass();
    await fx.settle();
    expect(logLines(log).map((l) => l.split(' ')[0])).toEqual(['start', 'fail', 'start', 'done']);
    await fx.waitForPvGone(name, pv.metadata!.uid);
    await fx.pass();
    const metrics = await fx.metrics.exposition();
    expect(metrics).toMatch(/^local_volume_provisioner_proctable_failed 1$/m);
    expect(metrics).toMatch(/^local_volume_provisioner_proctable_succeeded 1$/m);
  });

  test('passes during a running cleanup do not start it twice; the process table and delete metrics follow it', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log, { sleepSeconds: 0.5 }) } },
    });
    const { pv } = await provisionDevice('local-block', 'disk1');
    await fx.release(pv.metadata!.name!);

    for (let i = 0; i < 4; i++) await fx.pass();
    expect(await fx.metrics.exposition()).toMatch(/^local_volume_provisioner_proctable_running 1$/m);
    await fx.settle();
    await fx.pass();

    expect(logLines(log).map((l) => l.split(' ')[0])).toEqual(['start', 'done']);
    const metrics = await fx.metrics.exposition();
    expect(metrics).toMatch(/^local_volume_provisioner_proctable_running 0$/m);
    // Upstream's counts since start, not what the table still holds.
    expect(metrics).toMatch(/^local_volume_provisioner_proctable_succeeded 1$/m);
    expect(metrics).toMatch(/^local_volume_provisioner_proctable_failed 0$/m);
    expect(metrics).toMatch(/^local_volume_provisioner_persistentvolume_delete_total\{mode="Block",type="process"\} 1$/m);
    expect(metrics).toMatch(/^local_volume_provisioner_persistentvolume_delete_duration_seconds_count\{mode="Block",type="process",capacity="500G",cleanup_command="sh"\} 1$/m);
  });

  test('a cleanup running past cleanupTimeout is killed with its process group, reported as CleanupTimedOut, and the PV kept', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log, { sleepSeconds: 120 }) } },
      config: { cleanupTimeout: 5000 },
      backoff: { initialMs: 60_000 },
    });
    const { pv } = await provisionDevice('local-block', 'disk1');
    const name = pv.metadata!.name!;
    await fx.release(name);

    await fx.pass();
    await fx.settle();
    await fx.pass();

    const [started] = logLines(log);
    expect(logLines(log)).toEqual([started]);
    // Nothing of the cleaner is left running (its script names the log).
    expect(await eventually(async () => spawnSync('pgrep', ['-f', log]).status === 1, 'the cleaner is gone').then(() => true)).toBe(true);
    expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
    const [timedOut] = await fx.recordedEvents('CleanupTimedOut');
    expect(timedOut).toMatchObject({ type: 'Warning', involvedObject: { name } });
    expect(timedOut.message).toContain('timed out after 5000 ms');
  });

  test('no more cleanups run at once than maxConcurrentCleanups', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log, { sleepSeconds: 0.3 }) } },
      config: { maxConcurrentCleanups: 1 },
    });
    const one = await provisionDevice('local-block', 'disk1');
    const two = await provisionDevice('local-block', 'disk2');
    await fx.release(one.pv.metadata!.name!);
    await fx.release(two.pv.metadata!.name!);

    await fx.pass();
    await fx.settle();

    const events = logLines(log).map((l) => l.split(' ').slice(0, 2).join(' '));
    expect(events).toHaveLength(4);
    // Each cleaner finishes before the next one starts.
    expect(events[1]).toBe(`done ${events[0].split(' ')[1]}`);
    expect(events[3]).toBe(`done ${events[2].split(' ')[1]}`);
  });

  test('a Block volume on a loop device is cleaned by dd_zero.sh: zeros read back and blkid finds no signature', async () => {
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: [path.join(SCRIPTS, 'dd_zero.sh')] } },
    });
    const { pv, loop } = await provisionDevice('local-block', 'disk1', 8 * MiB);
    mkfsExt4(loop.device);
    expect(execFileSync('blkid', ['-p', '-o', 'value', '-s', 'TYPE', loop.device], { encoding: 'utf8' }).trim()).toBe('ext4');
    await fx.release(pv.metadata!.name!);

    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(pv.metadata!.name!, pv.metadata!.uid);

    const bytes = fs.readFileSync(loop.backingFile);
    expect(bytes.length).toBe(8 * MiB);
    expect(bytes.every((b) => b === 0)).toBe(true);
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).toThrow();
    expect((await fx.pass()).created).toEqual([pv.metadata!.name!]);
  });

  // With our finalizer the PV cannot go (nor be replaced under its name) before its volume is clean:
  // the replacement this guards against exists only in legacy mode.
  if (mode === 'legacy') {
    test('the re-check before cleaning stops a cleanup when the PV was replaced (same name, new UID) after the decision', async () => {
      fx = await start({ config: { maxConcurrentCleanups: 1 } });
      const { pv, dir } = await provision('local-fs', 'vol1');
      const name = pv.metadata!.name!;
      fillVolume(dir);
      // Another cleanup holds the only slot, so this one waits between the decision and the clean.
      let freeSlot!: () => void;
      const holder = fx.limiter.run(() => new Promise<void>((r) => {
        freeSlot = r;
      }));
      await fx.release(name);
      await fx.pass();
      expect(fx.deleter.isCleaning(name)).toBe(true);

      // Meanwhile the PV is deleted and a new one made under the same name.
      await fx.core.deletePersistentVolume({ name });
      await eventually(async () => await fx!.serverPv(name) === undefined, 'the old PV is gone');
      const replacement = await fx.server.create(freshCopy(pv));
      expect(replacement.metadata!.uid).not.toBe(pv.metadata!.uid);
      freeSlot();
      await holder;
      await fx.settle();

      expect(fs.readdirSync(dir)).toHaveLength(3);
      expect((await fx.serverPv(name))!.metadata!.uid).toBe(replacement.metadata!.uid);
      // The replacement offers a volume the node's record knows a tenant used: it is withdrawn, and the volume cleaned.
      await eventually(async () => {
        await fx!.pass();
        await fx!.settle();
        return (await fx!.serverPv(name))?.metadata?.uid !== replacement.metadata!.uid && fs.readdirSync(dir).length === 0;
      }, 'the replacement is withdrawn and the volume cleaned');
      expect(await fx.recordedEvents('VolumeWithdrawn')).not.toHaveLength(0);
    });
  }

  test('an entry turned into a symlink out of the class directory is never cleaned through', async () => {
    fx = await start();
    const { pv, dir } = await provision('local-fs', 'vol1');
    const name = pv.metadata!.name!;
    const elsewhere = makeTempDir('lvp-precious-');
    fs.writeFileSync(path.join(elsewhere, 'precious'), 'not a volume');
    await fx.release(name, () => {
      unmount(dir);
      fs.rmdirSync(dir);
      fs.symlinkSync(elsewhere, dir);
    });

    await fx.pass();
    await fx.settle();
    await fx.pass();

    expect(fs.readdirSync(elsewhere)).toEqual(['precious']);
    expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
    const [refused] = await fx.recordedEvents('CleanupRefused');
    expect(refused.message).toContain('symlink');
  });

  test('a block device that is mounted elsewhere is not wiped, and its PV is kept', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log) } },
    });
    const { pv, loop } = await provisionDevice('local-block', 'disk1', 16 * MiB);
    const name = pv.metadata!.name!;
    mkfsExt4(loop.device);
    const mounted = makeTempDir('lvp-inuse-');
    mount(loop.device, mounted);
    fs.writeFileSync(path.join(mounted, 'in-use'), 'data');
    await fx.release(name);

    await fx.pass();
    await fx.settle();
    await fx.pass();

    expect(logLines(log)).toEqual([]);
    expect(fs.readFileSync(path.join(mounted, 'in-use'), 'utf8')).toBe('data');
    expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
    expect(await fx.recordedEvents('VolumeInUse')).toHaveLength(1);
  });

  test('a new PV under the name of one cleaned before is cleaned again before it is deleted (status by UID, not name)', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log) } },
    });
    const { pv: first } = await provisionDevice('local-block', 'disk1');
    const name = first.metadata!.name!;
    await fx.release(name);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, first.metadata!.uid);
    expect(logLines(log).filter((l) => l.startsWith('done'))).toHaveLength(1);

    // The old success is still unreported when the volume comes back under the same name.
    await fx.pass();
    const second = await fx.waitForPv(name, { notUid: first.metadata!.uid, phase: 'Available' });
    await fx.release(name);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, second.metadata!.uid);

    expect(logLines(log).filter((l) => l.startsWith('done'))).toHaveLength(2);
  });

  test('a cleaned PV that cannot be let go (delete, or finalizer removal, keeps failing) stays, and is cleaned again before it goes', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log) } },
      backoff: { initialMs: 1000, maxMs: 1000 },
    });
    const { pv } = await provisionDevice('local-block', 'disk1');
    const name = pv.metadata!.name!;
    // A pass while it is Bound holds it with our finalizer (finalizer mode).
    await fx.release(name, () => fx!.pass().then(() => undefined));
    fx.server.faults.failNext({ verb: mode === 'legacy' ? 'delete' : 'patch', resource: 'persistentvolumes', code: 500, count: 20 });

    await fx.pass();
    await fx.settle();
    expect(await fx.serverPv(name)).toMatchObject({ metadata: { uid: pv.metadata!.uid }, status: { phase: 'Released' } });
    await fx.pass();
    // Without the finalizer the PV delete comes after the cleanup: upstream's reason says it failed.
    expect((await fx.recordedEvents(mode === 'legacy' ? 'VolumeFailedDelete' : 'CleanupFailed')).map((e) => e.involvedObject.name)).toEqual([name]);

    fx.server.faults.clear();
    await fx.waitForRetry(pv.metadata!.uid!);
    await fx.pass();
    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    expect(logLines(log).filter((l) => l.startsWith('done'))).toHaveLength(2);
  });

  test('a volume whose cleanup is still running is not offered again, even when its PV is gone', async () => {
    const log = path.join(makeTempDir(), 'cleaner.log');
    fx = await start({
      classes: { 'local-block': { volumeMode: 'Block', blockCleanerCommand: loggingCleaner(log, { sleepSeconds: 1 }) } },
    });
    const { pv } = await provisionDevice('local-block', 'disk1');
    const name = pv.metadata!.name!;
    await fx.release(name);
    await fx.pass();
    await eventually(async () => logLines(log).length > 0, 'the cleaner started');

    // Someone deletes the PV while it is being cleaned (with our finalizer it stays until the cleanup ends).
    await fx.core.deletePersistentVolume({ name });
    if (mode === 'legacy') await fx.waitForPvGone(name);
    expect((await fx.pass()).created).toEqual([]);

    await fx.settle();
    await fx.waitForPvGone(name, pv.metadata!.uid);
    expect((await fx.pass()).created).toEqual([name]);
  });
}));

/** A PV of ours as if made earlier, Released because its claim is gone. */
function releasedPv(name: string, localPath: string, provisioner: string, policy: string): V1PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, labels: { [NODE_LABEL]: NODE_NAME }, annotations: { [PROVISIONED_BY_ANNOTATION]: provisioner } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: policy,
      storageClassName: 'local-fs',
      volumeMode: 'Filesystem',
      local: { path: localPath },
      claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'default', name: 'gone', uid: '00000000-0000-0000-0000-000000000001' },
      nodeAffinity: {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_HOSTNAME] }] }] },
      },
    },
  };
}

/** The same PV as a new object: no UID, version, claim or status. */
function freshCopy(pv: V1PersistentVolume): V1PersistentVolume {
  const { claimRef: _claimRef, ...spec } = pv.spec!;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pv.metadata!.name, labels: pv.metadata!.labels, annotations: pv.metadata!.annotations },
    spec,
  };
}
