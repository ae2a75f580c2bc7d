import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cleanVolume } from '../../../src/runtime/cleanup/clean-volume';
import type { CleanTarget } from '../../../src/runtime/cleanup/release-decision';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir, mkfsExt4 } from '../../support/privileged';

afterAll(cleanupPrivileged);

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
    expect(await cleanVolume(target(classDir, 'vol1', classMethod(['false'])))).toEqual({ ok: true, kind: 'directory', cleaner: 'filesystem' });
    expect(fs.readdirSync(path.join(classDir, 'vol1'))).toEqual([]);
  });

  test('a directory entry that is a symlink out of the class directory is refused and its target kept', async () => {
    const classDir = makeTempDir('lvp-class-');
    const outside = makeTempDir('lvp-outside-');
    fs.writeFileSync(path.join(outside, 'precious'), 'keep');
    fs.symlinkSync(outside, path.join(classDir, 'vol1'));
    const r = await cleanVolume(target(classDir, 'vol1', classMethod(['false'])));
    expect(r).toMatchObject({ ok: false, missing: false, reason: expect.stringContaining('refusing to clean through a symlink') });
    expect(fs.readFileSync(path.join(outside, 'precious'), 'utf8')).toBe('keep');
  });

  test('a block volume (a symlink to the device) gets the class command with LOCAL_PV_BLKDEVICE as named in the class directory', async () => {
    const loop = createLoopDevice(16 * MiB);
    const classDir = makeTempDir('lvp-class-');
    fs.symlinkSync(loop.device, path.join(classDir, 'disk1'));
    const lines: string[] = [];
    const r = await cleanVolume(target(classDir, 'disk1', classMethod(['bash', '-c', 'echo "$LOCAL_PV_BLKDEVICE"'])), { onOutput: (l) => lines.push(l) });
    expect(r).toEqual({ ok: true, kind: 'block-device', cleaner: 'bash' });
    expect(lines).toEqual([path.join(classDir, 'disk1')]);
  });

  test('a device-dialect volume is wiped', async () => {
    const loop = createLoopDevice(200 * MiB);
    mkfsExt4(loop.device);
    const deviceDir = makeTempDir('lvp-devices-');
    fs.symlinkSync(loop.device, path.join(deviceDir, 'pci-0000:00:1f.2-ata-1'));
    let written = 0;
    const r = await cleanVolume(target(deviceDir, 'pci-0000:00:1f.2-ata-1', { kind: 'device-wipe' }), { onWritten: (n) => (written += n) });
    expect(r).toEqual({ ok: true, kind: 'block-device', cleaner: 'wipe' });
    expect(written).toBe(100 * MiB);
    expect(spawnSync('blkid', ['-p', loop.device]).status).toBe(2);
  });

  test('a directory where the device dialect expects a device is refused', async () => {
    const deviceDir = makeTempDir('lvp-devices-');
    fs.mkdirSync(path.join(deviceDir, 'not-a-device'));
    expect(await cleanVolume(target(deviceDir, 'not-a-device', { kind: 'device-wipe' }))).toMatchObject({ ok: false, reason: expect.stringContaining('not a device') });
  });

  test('a missing volume is reported as missing', async () => {
    const classDir = makeTempDir('lvp-class-');
    expect(await cleanVolume(target(classDir, 'gone', classMethod(['true'])))).toMatchObject({ ok: false, missing: true });
  });
});
