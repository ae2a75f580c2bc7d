/** The device wipes against dd over the same direct-I/O loop device. */
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { wipeDevice, wipeRanges } from '../../src/runtime/cleanup/wipe';
import { createLoopDevice } from '../../test/support/privileged';
import { GiB, MiB, percentile, row } from '../table';

/**
 * The default whole-device wipe per GiB against dd over the whole of the same direct-I/O
 * loop device: BLKZEROOUT, and the O_DIRECT write fallback (BLKZEROOUT made to fail).
 */
export async function wholeWipeVersusDd(rounds: number): Promise<void> {
  const sizeBytes = 4 * GiB;
  const loop = createLoopDevice(sizeBytes);
  execFileSync('losetup', ['--direct-io=on', loop.device]);
  const dd = () => {
    const t0 = performance.now();
    execFileSync('dd', ['if=/dev/zero', `of=${loop.device}`, 'bs=1M', 'oflag=direct', 'status=none', `count=${sizeBytes / MiB}`]);
    execFileSync('sync', [loop.device]);
    return performance.now() - t0;
  };
  const noZeroOut = ['bash', '-c', 'echo "blkdiscard: BLKZEROOUT ioctl failed: Operation not supported" >&2; exit 1', 'blkdiscard'];
  const wipe = async (zeroOutCommand?: string[]) => {
    const w = await wipeDevice(loop.device, { zeroOutCommand });
    if (!w.ok) throw new Error(w.reason);
    return w.writeMs + w.verifyMs;
  };
  dd();
  const times: Record<'dd' | 'zeroout' | 'writes', number[]> = { dd: [], zeroout: [], writes: [] };
  for (let i = 0; i < rounds; i++) {
    times.dd.push(dd());
    times.zeroout.push(await wipe());
    times.writes.push(await wipe(noZeroOut));
  }
  const perGiB = (xs: number[]) => `${(percentile(xs, 50) / (sizeBytes / GiB)).toFixed(1)} ms/GiB`;
  row(`Whole-device wipe (the default), 4 GiB loop device with --direct-io=on, per GiB with its fsync and sample read-back, median of ${rounds}: BLKZEROOUT; O_DIRECT write fallback; dd oflag=direct then sync`,
    `${perGiB(times.zeroout)}; ${perGiB(times.writes)}; ${perGiB(times.dd)}`);
}

/** The device dialect's upstream-ranges wipe against dd over the same ranges of the same direct-I/O loop device. */
export async function wipeVersusDd(rounds: number): Promise<void> {
  const sizeBytes = 1100 * GiB;
  const loop = createLoopDevice(sizeBytes);
  execFileSync('losetup', ['--direct-io=on', loop.device]);
  const ranges = wipeRanges(sizeBytes);
  const total = ranges.reduce((n, r) => n + r.length, 0);
  const dd = () => {
    const t0 = performance.now();
    for (const r of ranges) {
      execFileSync('dd', ['if=/dev/zero', `of=${loop.device}`, 'bs=1M', 'oflag=direct', 'status=none', `seek=${r.offset / MiB}`, `count=${r.length / MiB}`]);
    }
    // The wipe's time includes its fsync (the disk's own write cache flushed, so the zeros last): dd's flush too.
    execFileSync('sync', [loop.device]);
    return performance.now() - t0;
  };
  const wipe = async () => {
    const w = await wipeDevice(loop.device, { verify: false, extent: 'upstream-ranges' });
    if (!w.ok) throw new Error(w.reason);
    return w.writeMs;
  };
  // The first writes allocate the sparse backing file's blocks; not measured.
  dd();
  await wipe();
  const ddTimes: number[] = [];
  const wipeTimes: number[] = [];
  for (let i = 0; i < rounds; i++) {
    ddTimes.push(dd());
    wipeTimes.push(await wipe());
  }
  const ratio = percentile(ddTimes, 50) / percentile(wipeTimes, 50);
  const speed = (ms: number) => `${(total / MiB / (ms / 1000)).toFixed(0)} MiB/s`;
  row(`upstream-ranges wipe speed ÷ dd oflag=direct speed (then sync), ${total / MiB} MiB in ${ranges.length} ranges, loop device with --direct-io=on, median of ${rounds}`,
    `${ratio.toFixed(2)} (wipe ${speed(percentile(wipeTimes, 50))}, dd ${speed(percentile(ddTimes, 50))})`, '≥ 0.9 (issue 6)', ratio >= 0.9);
}
