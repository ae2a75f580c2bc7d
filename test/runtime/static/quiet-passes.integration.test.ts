/**
 * Quiet passes (static/quiet-passes.ts) through the DirectoryController: a pass
 * over the inputs of the last one, which left nothing behind, is skipped; any change
 * a pass must act on, on disk or in the API, makes the next pass a full one.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ControllerFixture, eventually } from './fixture';
import { directoryStamp } from '../../../src/runtime/discovery';
import type { DirectoryPassResult } from '../../../src/runtime/static/directory-controller';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount, replaceLoopDisk, unmount } from '../../support/privileged';

const MiB = 1024 * 1024;

describePrivileged('quiet passes through the controller', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.stop();
    fx = undefined;
  });
  afterAll(cleanupPrivileged);
  // Waits for a directory's stamp to be trusted (two seconds after its last change), on a busy machine.

  /** Passes until one is skipped: the last full pass left nothing behind, and the discovery directories' stamps are trusted. */
  async function untilQuiet(): Promise<void> {
    await eventually(async () => (await fx!.pass()).skipped, 'a pass is skipped', 60_000);
  }

  /** Waits until the class's directory has a stamp, then runs one full pass over it. */
  async function fullPassOverStampedDirectory(className: string): Promise<void> {
    await eventually(async () => directoryStamp(fx!.dirs[className]) !== undefined, `the directory of ${className} has a stamp`, 60_000);
    await fx!.pass();
  }

  /** A symlink outside the discovery directory, made or moved by rename (as udev keeps /dev/disk/by-id). */
  function pointAt(link: string, target: string): void {
    fs.symlinkSync(target, `${link}.new`);
    fs.renameSync(`${link}.new`, link);
  }

  test('a pass over what the last one read, which left nothing behind, is skipped and sends no request', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(fx.dirs['local-fs'], 'vol1'));
    await fx.pass();
    await fx.waitForPv(fx.pvName('local-fs', 'vol1'), { phase: 'Available' });
    const node = await fx.node();
    // Other suites mount and unmount meanwhile (one mount table for all): a changed table makes a full pass.
    let skipped: { result: DirectoryPassResult; requests: number } | undefined;
    await eventually(async () => {
      const requests = fx!.server.counters.total().requests;
      const result = await fx!.controller.pass(fx!.config, node);
      if (result.skipped) skipped = { result, requests: fx!.server.counters.total().requests - requests };
      return skipped !== undefined;
    }, 'a pass is skipped', 30_000);

    expect(skipped!.result.created).toEqual([]);
    expect(skipped!.result.classes[0].volumes.map((v) => v.entryName)).toEqual(['vol1']);
    expect(skipped!.requests).toBe(0);
  });

  test('a mount point made in a quiet directory is offered on the next pass', async () => {
    fx = await ControllerFixture.start();
    makeMountPoint(path.join(fx.dirs['local-fs'], 'vol1'));
    await fx.pass();
    await untilQuiet();

    makeMountPoint(path.join(fx.dirs['local-fs'], 'vol2'));

    expect(await fx.pass()).toMatchObject({ skipped: false, created: [fx.pvName('local-fs', 'vol2')] });
  });

  test('an entry made in a quiet directory that the mount table does not show (a link to a device) is offered on the next pass', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-fs': { fsType: 'ext4' } } });
    makeMountPoint(path.join(fx.dirs['local-fs'], 'vol1'));
    await fx.pass();
    await untilQuiet();

    fs.symlinkSync(createLoopDevice(8 * MiB).device, path.join(fx.dirs['local-fs'], 'disk1'));

    expect(await fx.pass()).toMatchObject({ skipped: false, created: [fx.pvName('local-fs', 'disk1')] });
  });

  test('a rejected symlink is looked at on every pass: the directory it led to replaced by a device is offered on the next', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-block': { volumeMode: 'Block' } } });
    const target = path.join(makeTempDir('lvp-elsewhere-'), 'disk-a');
    fs.mkdirSync(target);
    fs.symlinkSync(target, path.join(fx.dirs['local-block'], 'disk1'));
    await fullPassOverStampedDirectory('local-block');
    await fx.pass();

    fs.rmdirSync(target);
    fs.symlinkSync(createLoopDevice(8 * MiB).device, target);

    expect(await fx.pass()).toMatchObject({ skipped: false, created: [fx.pvName('local-block', 'disk1')] });
  });

  test('another filesystem mounted at a quiet PV\'s entry, which leaves the directory as it was, is seen on the next pass', async () => {
    fx = await ControllerFixture.start();
    const entry = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(entry);
    await fx.pass();
    await untilQuiet();

    unmount(entry);
    mount('tmpfs', entry, { type: 'tmpfs' });

    expect((await fx.pass()).skipped).toBe(false);
    expect(await fx.recordedEvents('VolumeIdentityMismatch')).toHaveLength(1);
  });

  /** The mount table's line for the mount at `mountPoint`. */
  function mountInfoLine(mountPoint: string): string | undefined {
    return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[4] === mountPoint);
  }

  test('another disk under a quiet PV\'s mount point, the mount table\'s line as it was (a reused mount id and loop number), is seen on the next pass', async () => {
    fx = await ControllerFixture.start();
    // The kernel reuses the lowest free mount id and loop number, which a concurrent test may take first: try again on a new entry.
    let reproduced = false;
    let swaps = 0;
    for (let attempt = 1; attempt <= 10 && !reproduced; attempt++) {
      const entry = path.join(fx.dirs['local-fs'], `vol${attempt}`);
      const disk = createLoopDevice(16 * MiB);
      mkfsExt4(disk.device);
      mount(disk.device, entry, { type: 'ext4' });
      await fx.pass();
      await untilQuiet();
      const before = mountInfoLine(entry);

      // Unmounted at once (not lazily), so the loop device is free to detach.
      execFileSync('umount', [entry]);
      const other = replaceLoopDisk(disk);
      if (other === undefined) continue;
      mount(other.device, entry, { type: 'ext4' });
      reproduced = mountInfoLine(entry) === before;
      swaps++;

      expect((await fx.pass()).skipped).toBe(false);
      expect(await fx.recordedEvents('VolumeIdentityMismatch')).toHaveLength(swaps);
    }
    expect(reproduced).toBe(true);
  });

  test('a Released PV of a quiet node is cleaned on the next pass', async () => {
    fx = await ControllerFixture.start();
    const entry = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(entry);
    await fx.pass();
    const pv = await fx.waitForPv(fx.pvName('local-fs', 'vol1'), { phase: 'Available' });
    await untilQuiet();
    await fx.release(pv.metadata!.name!, () => fs.writeFileSync(path.join(entry, 'data'), 'tenant data'));

    expect((await fx.pass()).skipped).toBe(false);
    await fx.settle();
    await fx.waitForPvGone(pv.metadata!.name!, pv.metadata!.uid);
    expect(fs.readdirSync(entry)).toEqual([]);
  });

  test('a cleanup refused while a process works in the volume is retried on a later pass, though no input of the pass changed', async () => {
    // A backoff long enough for a full pass over stamped directories to run first, on a busy machine.
    fx = await ControllerFixture.start({ backoff: { initialMs: 15_000, maxMs: 15_000 } });
    const entry = path.join(fx.dirs['local-fs'], 'vol1');
    makeMountPoint(entry);
    await fx.pass();
    const pv = await fx.waitForPv(fx.pvName('local-fs', 'vol1'), { phase: 'Available' });
    const worker = spawn('sleep', ['600'], { cwd: entry, stdio: 'ignore' });
    const exited = new Promise((r) => worker.once('exit', r));
    try {
      await fx.release(pv.metadata!.name!, () => fs.writeFileSync(path.join(entry, 'data'), 'tenant data'));
      await fx.pass();
      await fx.settle();
      // The refusal is reported by the next pass.
      await fx.pass();
      expect(await fx.recordedEvents('VolumeInUse')).toHaveLength(1);
    } finally {
      worker.kill('SIGKILL');
    }
    await exited;
    // Nothing the pass reads changes from here on: only the deleter's waiting cleanup keeps passes full.
    await fullPassOverStampedDirectory('local-fs');
    await fx.waitForRetry(pv.metadata!.uid!);

    expect((await fx.pass()).skipped).toBe(false);
    await fx.settle();
    await fx.waitForPvGone(pv.metadata!.name!, pv.metadata!.uid);
    expect(fs.readdirSync(entry)).toEqual([]);
  });

  test('a block-device entry is examined on every pass: its symlink led to another device outside the directory is seen on the next', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-block': { volumeMode: 'Block' } } });
    const [first, second] = [createLoopDevice(8 * MiB), createLoopDevice(8 * MiB)];
    const byId = path.join(makeTempDir('lvp-by-id-'), 'disk-a');
    pointAt(byId, first.device);
    fs.symlinkSync(byId, path.join(fx.dirs['local-block'], 'disk1'));
    await fx.pass();
    await fx.waitForPv(fx.pvName('local-block', 'disk1'), { phase: 'Available' });
    await fullPassOverStampedDirectory('local-block');

    pointAt(byId, second.device);

    expect((await fx.pass()).skipped).toBe(false);
    expect(await fx.recordedEvents('VolumeIdentityMismatch')).toHaveLength(1);
  });

  test('a symlink to nothing is looked at on every pass: the device it comes to lead to is offered on the next', async () => {
    fx = await ControllerFixture.start({ classes: { 'local-block': { volumeMode: 'Block' } } });
    const byId = path.join(makeTempDir('lvp-by-id-'), 'disk-a');
    fs.symlinkSync(byId, path.join(fx.dirs['local-block'], 'disk1'));
    await fullPassOverStampedDirectory('local-block');

    pointAt(byId, createLoopDevice(8 * MiB).device);

    expect(await fx.pass()).toMatchObject({ skipped: false, created: [fx.pvName('local-block', 'disk1')] });
  });
});
