import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cleanVolume } from '../../../src/runtime/cleanup/clean-volume';
import type { CleanTarget } from '../../../src/runtime/cleanup/release-decision';
import { captureRootMetadata, openDirectory } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

afterAll(cleanupPrivileged);
// Loop devices, ext4 and processes: generous on a busy machine.

async function eventuallyTrue(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setTimeout(r, 20));
}

const MiB = 1024 * 1024;

function target(classDir: string, entry: string, method: CleanTarget['method']): CleanTarget {
  return {
    pvName: 'local-pv-1a2b3c4d',
    pvUid: 'uid-1',
    storageClassName: 'fast-disks',
    volumeMode: 'Filesystem',
    hostPath: `/mnt/disks/${entry}`,
    path: path.join(classDir, entry),
    classDir,
    hostDir: '/mnt/disks',
    method,
  };
}

const classMethod = (command: string[]): CleanTarget['method'] => ({ kind: 'class', className: 'fast-disks', blockCleanerCommand: command });

describePrivileged('cleaning a Released volume in-process', () => {
  test('a directory volume is emptied', async () => {
    const classDir = makeTempDir('lvp-class-');
    makeMountPoint(path.join(classDir, 'vol1'));
    fs.writeFileSync(path.join(classDir, 'vol1', 'data'), 'x');
    // A bind mount of a directory of the root filesystem: known by that filesystem and the directory's place in it.
    expect(await cleanVolume(target(classDir, 'vol1', classMethod(['false']))))
      .toEqual({ ok: true, kind: 'directory', cleaner: 'filesystem', identity: expect.stringContaining(path.join(classDir, 'vol1')) });
    expect(fs.readdirSync(path.join(classDir, 'vol1'))).toEqual([]);
  });

  test('a directory volume cleaned with its recorded root metadata gets its root back as recorded', async () => {
    const classDir = makeTempDir('lvp-class-');
    const loop = createLoopDevice(32 * MiB);
    mkfsExt4(loop.device);
    const root = path.join(classDir, 'vol1');
    mount(loop.device, root, { type: 'ext4' });
    fs.chmodSync(root, 0o755);
    const h = openDirectory(root);
    try {
      const recorded = await captureRootMetadata(h);
      fs.writeFileSync(path.join(root, 'data'), 'x');
      fs.chmodSync(root, 0o777);
      execFileSync('setfattr', ['-n', 'user.tenant', '-v', 'x', root]);
      expect(await cleanVolume(target(classDir, 'vol1', classMethod(['false'])), { rootMetadata: recorded }))
        .toEqual({ ok: true, kind: 'directory', cleaner: 'filesystem', identity: `fs:/@loop:${loop.backingFile}@0` });
      expect(fs.readdirSync(root)).toEqual([]);
      expect(await captureRootMetadata(h)).toEqual(recorded);
    } finally {
      fs.closeSync(h.fd);
    }
  });

  test('a directory entry that is a symlink out of the class directory is refused and its target kept', async () => {
    const classDir = makeTempDir('lvp-class-');
    const outside = makeTempDir('lvp-outside-');
    fs.writeFileSync(path.join(outside, 'precious'), 'keep');
    fs.symlinkSync(outside, path.join(classDir, 'vol1'));
    const r = await cleanVolume(target(classDir, 'vol1', classMethod(['false'])));
    expect(r).toMatchObject({ ok: false, kind: 'refused', reason: expect.stringContaining('refusing to clean through a symlink') });
    expect(fs.readFileSync(path.join(outside, 'precious'), 'utf8')).toBe('keep');
  });

  test('a block volume gets the class command with LOCAL_PV_BLKDEVICE naming the checked, held device, not the link', async () => {
    const loop = createLoopDevice(16 * MiB);
    const classDir = makeTempDir('lvp-class-');
    fs.symlinkSync(loop.device, path.join(classDir, 'disk1'));
    const lines: string[] = [];
    const command = ['bash', '-c', 'echo "$LOCAL_PV_BLKDEVICE"; stat -L -c %t:%T "$LOCAL_PV_BLKDEVICE"'];
    const r = await cleanVolume(target(classDir, 'disk1', classMethod(command)), { onOutput: (l) => lines.push(l) });
    expect(r).toEqual({ ok: true, kind: 'block-device', cleaner: 'bash', identity: `loop:${loop.backingFile}@0` });
    expect(lines[0]).toMatch(new RegExp(`^/proc/${process.pid}/fd/\\d+$`));
    const rdev = fs.statSync(loop.device).rdev;
    // eslint-disable-next-line no-bitwise -- major and minor out of st_rdev
    expect(lines[1]).toBe(`${(rdev >> 8).toString(16)}:${(rdev & 0xff).toString(16)}`);
  });

  test('the command keeps the device it was given even when the link is moved to another disk while it runs', async () => {
    const mine = createLoopDevice(16 * MiB);
    const tenant = createLoopDevice(16 * MiB);
    fs.writeFileSync(tenant.backingFile, 'another tenant\'s data');
    const classDir = makeTempDir('lvp-class-');
    const link = path.join(classDir, 'disk1');
    fs.symlinkSync(mine.device, link);
    const moved = path.join(classDir, 'moved');
    // The command moves the link to the other disk (a re-plug mid-cleanup), then zeroes what it was given.
    const command = ['bash', '-c', `ln -sfn ${tenant.device} ${moved} && mv -T ${moved} ${link} && dd if=/dev/zero of="$LOCAL_PV_BLKDEVICE" bs=4096 count=1 conv=notrunc,fsync status=none`];
    expect(await cleanVolume(target(classDir, 'disk1', classMethod(command)))).toMatchObject({ ok: true });
    expect(fs.readlinkSync(link)).toBe(tenant.device);
    expect(fs.readFileSync(tenant.backingFile, 'utf8').slice(0, 22)).toBe('another tenant\'s data');
  });

  test('a block volume whose name now leads to another disk than the PV recorded is refused, and nothing is run', async () => {
    const recorded = createLoopDevice(16 * MiB);
    const other = createLoopDevice(16 * MiB);
    const classDir = makeTempDir('lvp-class-');
    fs.symlinkSync(other.device, path.join(classDir, 'disk1'));
    const marker = path.join(makeTempDir(), 'ran');
    const r = await cleanVolume({ ...target(classDir, 'disk1', classMethod(['touch', marker])), identity: `loop:${recorded.backingFile}@0` });
    expect(r).toEqual({ ok: false, kind: 'identity-mismatch', reason: expect.stringContaining(`it recorded loop:${recorded.backingFile}@0, the path now holds loop:${other.backingFile}@0`) });
    expect(fs.existsSync(marker)).toBe(false);
  });

  test('a filesystem volume whose mount point now shows another filesystem than the PV recorded is refused, and kept', async () => {
    const classDir = makeTempDir('lvp-class-');
    const loop = createLoopDevice(32 * MiB);
    mkfsExt4(loop.device);
    mount(loop.device, path.join(classDir, 'vol1'));
    fs.writeFileSync(path.join(classDir, 'vol1', 'data'), 'someone else\'s disk');
    const r = await cleanVolume({ ...target(classDir, 'vol1', classMethod(['false'])), identity: 'fs:/@wwid:the-disk-the-pv-was-made-for' });
    expect(r).toMatchObject({ ok: false, kind: 'identity-mismatch' });
    expect(fs.readFileSync(path.join(classDir, 'vol1', 'data'), 'utf8')).toBe('someone else\'s disk');
  });

  test('a mounted device is refused as in use and the command never runs', async () => {
    const loop = createLoopDevice(32 * MiB);
    mkfsExt4(loop.device);
    mount(loop.device, path.join(makeTempDir(), 'mnt'));
    const classDir = makeTempDir('lvp-class-');
    fs.symlinkSync(loop.device, path.join(classDir, 'disk1'));
    const marker = path.join(makeTempDir(), 'ran');
    const r = await cleanVolume(target(classDir, 'disk1', classMethod(['touch', marker])));
    expect(r).toMatchObject({ ok: false, kind: 'in-use', reason: expect.stringContaining('in use') });
    expect(fs.existsSync(marker)).toBe(false);
  });

  test('a filesystem volume still mounted elsewhere (a pod that did not go) is refused as in use, and kept', async () => {
    const classDir = makeTempDir('lvp-class-');
    const vol = path.join(classDir, 'vol1');
    makeMountPoint(vol);
    fs.writeFileSync(path.join(vol, 'data'), 'still written');
    mount(vol, path.join(makeTempDir('lvp-pod-'), 'volume'), { bind: true });
    const r = await cleanVolume(target(classDir, 'vol1', classMethod(['false'])));
    expect(r).toMatchObject({ ok: false, kind: 'in-use', reason: expect.stringMatching(/still in use: mounted at .*lvp-pod-/) });
    expect(fs.readFileSync(path.join(vol, 'data'), 'utf8')).toBe('still written');
  });

  test('a filesystem volume a process works in or holds a file of is refused as in use, and kept', async () => {
    const classDir = makeTempDir('lvp-class-');
    const vol = path.join(classDir, 'vol1');
    makeMountPoint(vol);
    const writer = spawn('bash', ['-c', 'exec 3>>data; while :; do echo x >&3; sleep 0.05; done'], { cwd: vol, stdio: 'ignore' });
    try {
      await eventuallyTrue(() => fs.existsSync(path.join(vol, 'data')));
      const r = await cleanVolume(target(classDir, 'vol1', classMethod(['false'])));
      expect(r).toMatchObject({ ok: false, kind: 'in-use', reason: expect.stringContaining(`pid ${writer.pid} (bash)`) });
      expect(fs.existsSync(path.join(vol, 'data'))).toBe(true);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  test('a device-dialect volume is zeroed whole, and the bytes that reached the device are reported', async () => {
    const loop = createLoopDevice(200 * MiB);
    mkfsExt4(loop.device);
    const deviceDir = makeTempDir('lvp-devices-');
    fs.symlinkSync(loop.device, path.join(deviceDir, 'pci-0000:00:1f.2-ata-1'));
    let written = 0;
    const r = await cleanVolume(target(deviceDir, 'pci-0000:00:1f.2-ata-1', { kind: 'device-wipe' }), { onWritten: (n) => (written += n) });
    expect(r).toEqual({ ok: true, kind: 'block-device', cleaner: 'wipe', identity: `loop:${loop.backingFile}@0` });
    // What reached the device, by its own counters: BLKZEROOUT counts as writes, over every byte.
    expect(written).toBe(200 * MiB);
    expect(spawnSync('blkid', ['-p', loop.device]).status).toBe(2);
    expect(allZero(loop.backingFile)).toBe(true);
  });

  test('a method that carries wipe: upstream-ranges zeroes only upstream\'s ranges', async () => {
    const loop = createLoopDevice(200 * MiB);
    const marker = Buffer.alloc(4096, 0xab);
    const fd = fs.openSync(loop.backingFile, 'r+');
    fs.writeSync(fd, marker, 0, marker.length, 0);
    fs.writeSync(fd, marker, 0, marker.length, 150 * MiB);
    fs.closeSync(fd);
    const deviceDir = makeTempDir('lvp-devices-');
    fs.symlinkSync(loop.device, path.join(deviceDir, 'pci-0000:00:1f.2-ata-1'));
    let written = 0;
    // The shape release-decision.ts and device-controller.ts are to give the method, from the node's spec.
    const method = { kind: 'device-wipe', wipe: 'upstream-ranges' } as CleanTarget['method'];
    expect(await cleanVolume(target(deviceDir, 'pci-0000:00:1f.2-ata-1', method), { onWritten: (n) => (written += n) }))
      .toEqual({ ok: true, kind: 'block-device', cleaner: 'wipe', identity: `loop:${loop.backingFile}@0` });
    expect(written).toBe(100 * MiB);
    const check = fs.openSync(loop.backingFile, 'r');
    const at = (offset: number) => {
      const b = Buffer.alloc(4096);
      fs.readSync(check, b, 0, b.length, offset);
      return b;
    };
    expect(at(0).equals(Buffer.alloc(4096))).toBe(true);
    expect(at(150 * MiB)).toEqual(marker);
    fs.closeSync(check);
  });

  test('a directory where the device dialect expects a device is refused', async () => {
    const deviceDir = makeTempDir('lvp-devices-');
    fs.mkdirSync(path.join(deviceDir, 'not-a-device'));
    expect(await cleanVolume(target(deviceDir, 'not-a-device', { kind: 'device-wipe' }))).toMatchObject({ ok: false, reason: expect.stringContaining('not a device') });
  });

  test('a missing volume is reported as missing', async () => {
    const classDir = makeTempDir('lvp-class-');
    expect(await cleanVolume(target(classDir, 'gone', classMethod(['true'])))).toMatchObject({ ok: false, kind: 'missing' });
  });
});

/** Whether every byte of `file` reads zero. */
function allZero(file: string): boolean {
  const buffer = Buffer.alloc(8 * MiB);
  const zeros = Buffer.alloc(buffer.length);
  const fd = fs.openSync(file, 'r');
  try {
    for (let n; (n = fs.readSync(fd, buffer, 0, buffer.length, null)) > 0;) {
      if (!buffer.subarray(0, n).equals(zeros.subarray(0, n))) return false;
    }
    return true;
  } finally {
    fs.closeSync(fd);
  }
}
