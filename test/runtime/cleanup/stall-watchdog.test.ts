/**
 * The stall watchdog (cleanup/stall-watchdog.ts) through cleanVolume, on real loop
 * devices: a cleaner may run for as long as its device keeps doing I/O, and one
 * that sends the device nothing for the stall timeout is stopped with everything
 * it started. The device's own counters are the progress reported.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cleanVolume } from '../../../src/runtime/cleanup/clean-volume';
import type { CleanTarget } from '../../../src/runtime/cleanup/release-decision';
import { ioProgressed, sampleIntervalMs } from '../../../src/runtime/cleanup/stall-watchdog';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir } from '../../support/privileged';

afterAll(cleanupPrivileged);

const MiB = 1024 * 1024;

function blockTarget(command: string[]): CleanTarget {
  const loop = createLoopDevice(8 * MiB);
  const classDir = makeTempDir('lvp-class-');
  fs.symlinkSync(loop.device, path.join(classDir, 'disk1'));
  return {
    pvName: 'local-pv-5a11ed00',
    pvUid: 'uid-stall',
    storageClassName: 'local-block',
    volumeMode: 'Block',
    hostPath: '/mnt/disks/disk1',
    path: path.join(classDir, 'disk1'),
    classDir,
    hostDir: '/mnt/disks',
    method: { kind: 'class', className: 'local-block', blockCleanerCommand: command },
  };
}

/** Pids of live processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  return fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  }).map(Number);
}

describe('when a device counts as progressing', () => {
  const idle = { readBytes: 4096, writtenBytes: 8192, discardedBytes: 0, busyMs: 10 };

  test('unchanged counters are no progress', () => {
    expect(ioProgressed(idle, { ...idle })).toBe(false);
  });

  test('bytes read, written or discarded, or time busy with a request in flight, are progress', () => {
    expect(ioProgressed(idle, { ...idle, readBytes: 8192 })).toBe(true);
    expect(ioProgressed(idle, { ...idle, writtenBytes: 12288 })).toBe(true);
    expect(ioProgressed(idle, { ...idle, discardedBytes: 1_048_576 })).toBe(true);
    expect(ioProgressed(idle, { ...idle, busyMs: 11 })).toBe(true);
  });

  test('the device is sampled ten times per stall period, between 100 ms and 5 s apart', () => {
    expect(sampleIntervalMs(10 * 60_000)).toBe(5_000);
    expect(sampleIntervalMs(20_000)).toBe(2_000);
    expect(sampleIntervalMs(500)).toBe(100);
    expect(sampleIntervalMs(0)).toBe(5_000);
  });
});

describePrivileged('a device cleaner under the stall watchdog', () => {
  test('a cleaner that sends its device nothing for the stall timeout is stopped, with what it started, and the cleanup fails saying why', async () => {
    const marker = `lvp-stalled-${process.pid}-${Date.now()}`;
    // A child in the background and one in the foreground, both idle.
    const r = await cleanVolume(blockTarget(['bash', '-c', `(exec -a ${marker} sleep 600) & exec -a ${marker} sleep 600`]), { stallTimeoutMs: 500 });

    expect(r).toMatchObject({ ok: false, kind: 'failed' });
    expect(r.ok || r.reason).toMatch(/^cleanup of PV "local-pv-5a11ed00" on ".*disk1" was stopped: no I\/O reached the device for \d+ s \(cleanupStallTimeout 1 s\)$/);
    expect(processesWith(marker)).toEqual([]);
  });

  test('a cleaner that keeps writing runs past the stall timeout to the end, and every byte it wrote is reported', async () => {
    let written = 0;
    // 30 direct 4 KiB writes 100 ms apart: three times the stall timeout, never idle for a tenth of it.
    const script = 'for i in $(seq 0 29); do dd if=/dev/zero of="$LOCAL_PV_BLKDEVICE" bs=4k count=1 seek=$i oflag=direct status=none || exit 1; sleep 0.1; done';
    const r = await cleanVolume(blockTarget(['bash', '-c', script]), { stallTimeoutMs: 1_500, onWritten: (n) => (written += n) });

    expect(r).toMatchObject({ ok: true, kind: 'block-device', cleaner: 'bash' });
    expect(written).toBe(30 * 4096);
  });

  test('with no stall timeout an idle cleaner is left to finish', async () => {
    const r = await cleanVolume(blockTarget(['bash', '-c', 'sleep 1']), { stallTimeoutMs: 0 });
    expect(r).toMatchObject({ ok: true, kind: 'block-device', cleaner: 'bash' });
  });
});
