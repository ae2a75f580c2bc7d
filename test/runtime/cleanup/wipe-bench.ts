/**
 * Benchmark: the device wipe against `dd if=/dev/zero oflag=direct bs=1M` over
 * the same ranges of the same device, in the same run. Prints the figures and
 * the ratio (dd time / our time; at least 0.9 is the target, higher is faster).
 *
 * First the default whole-device wipe on a 4 GiB direct-I/O loop device, per GiB:
 * BLKZEROOUT (blkdiscard), the O_DIRECT write fallback (BLKZEROOUT made to fail), and
 * dd over the whole device. Then upstream's ranges (`wipe: upstream-ranges`).
 *
 * Run as root:
 *   scripts/in-private-mount-namespace.sh npx ts-node --transpile-only -P test/tsconfig.json test/runtime/cleanup/wipe-bench.ts [rounds]
 *
 * It makes its own sparse loop device (1100 GiB, so all five ranges exist: 500 MiB
 * of zeros per wipe) and detaches it at the end, and measures it twice:
 * - with the loop device in direct-I/O mode, where a write completes when it
 *   reaches the disk under the backing file, as on a real disk: the headline figure;
 * - in the default buffered mode, where the "device" is the backing file's page
 *   cache: dd's writes complete in memory, while our fsync makes the loop driver
 *   write the backing file to disk. So a dd with `conv=fsync` is shown there too.
 */
import { execFileSync } from 'node:child_process';
import { wipeDevice, wipeRanges } from '../../../src/runtime/cleanup/wipe';
import { cleanupPrivileged, createLoopDevice } from '../../support/privileged';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function ddOverRanges(device: string, sizeBytes: number, extra: string[] = []): number {
  const started = performance.now();
  for (const r of wipeRanges(sizeBytes)) {
    execFileSync('dd', [
      'if=/dev/zero', `of=${device}`, 'bs=1M', 'oflag=direct', 'status=none',
      `seek=${r.offset / MiB}`, `count=${r.length / MiB}`, ...extra,
    ]);
  }
  return performance.now() - started;
}

async function measure(device: string, sizeBytes: number, rounds: number): Promise<Record<string, number>> {
  // Warm up: the first writes allocate the sparse backing file's blocks.
  ddOverRanges(device, sizeBytes);
  await wipeDevice(device, { verify: false, extent: 'upstream-ranges' });

  const times: Record<string, number[]> = { 'dd': [], 'dd conv=fsync': [], 'wipe': [], 'wipe + verify': [] };
  for (let i = 0; i < rounds; i++) {
    times.dd.push(ddOverRanges(device, sizeBytes));
    times['dd conv=fsync'].push(ddOverRanges(device, sizeBytes, ['conv=fsync']));
    const w = await wipeDevice(device, { verify: false, extent: 'upstream-ranges' });
    if (!w.ok) throw new Error(w.reason);
    times.wipe.push(w.writeMs);
    const v = await wipeDevice(device, { extent: 'upstream-ranges' });
    if (!v.ok) throw new Error(v.reason);
    times['wipe + verify'].push(v.writeMs + v.verifyMs);
  }
  return Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, median(xs)]));
}

/** BLKZEROOUT made unavailable, so the wipe falls back to its own O_DIRECT writes. */
const NO_ZEROOUT = ['bash', '-c', 'echo "blkdiscard: BLKZEROOUT ioctl failed: Operation not supported" >&2; exit 1', 'blkdiscard'];

/** The whole-device wipe per GiB: BLKZEROOUT, the write fallback, and dd over the whole device, on a direct-I/O loop device. */
async function measureWholeDevice(sizeBytes: number, rounds: number): Promise<Record<string, number>> {
  const loop = createLoopDevice(sizeBytes);
  execFileSync('losetup', ['--direct-io=on', loop.device]);
  const dd = (): number => {
    const started = performance.now();
    execFileSync('dd', ['if=/dev/zero', `of=${loop.device}`, 'bs=1M', 'oflag=direct', 'status=none', `count=${sizeBytes / MiB}`]);
    execFileSync('sync', [loop.device]);
    return performance.now() - started;
  };
  const wipe = async (zeroOutCommand?: string[]): Promise<{ write: number; verify: number }> => {
    const w = await wipeDevice(loop.device, { zeroOutCommand });
    if (!w.ok) throw new Error(w.reason);
    if (w.method !== (zeroOutCommand ? 'writes' : 'zeroout')) throw new Error(`the wipe used ${w.method}`);
    return { write: w.writeMs, verify: w.verifyMs };
  };
  // Warm up: the first writes allocate the sparse backing file's blocks.
  dd();
  const times: Record<string, number[]> = { 'dd': [], 'zeroout': [], 'zeroout verify': [], 'writes': [], 'writes verify': [] };
  for (let i = 0; i < rounds; i++) {
    times.dd.push(dd());
    const z = await wipe();
    times.zeroout.push(z.write);
    times['zeroout verify'].push(z.verify);
    const w = await wipe(NO_ZEROOUT);
    times.writes.push(w.write);
    times['writes verify'].push(w.verify);
  }
  return Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, median(xs)]));
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
  try {
    const whole = 4 * GiB;
    const m = await measureWholeDevice(whole, rounds);
    const perGiB = (ms: number): string => `${(ms / (whole / GiB)).toFixed(1).padStart(7)} ms/GiB ${((whole / MiB) / (ms / 1000)).toFixed(0).padStart(6)} MiB/s`;
    console.log(`whole-device wipe, direct-io loop device (${whole / GiB} GiB), median of ${rounds}:`);
    console.log(`  ${'dd oflag=direct bs=1M, then sync'.padEnd(44)} ${perGiB(m.dd)}`);
    console.log(`  ${'BLKZEROOUT (blkdiscard --zeroout) + fsync'.padEnd(44)} ${perGiB(m.zeroout)}  (+ sample read-back ${m['zeroout verify'].toFixed(0)} ms)`);
    console.log(`  ${'write fallback (O_DIRECT writes) + fsync'.padEnd(44)} ${perGiB(m.writes)}  (+ sample read-back ${m['writes verify'].toFixed(0)} ms)`);
  } finally {
    cleanupPrivileged();
  }
  const sizeBytes = 1100 * GiB;
  const mb = wipeRanges(sizeBytes).reduce((n, r) => n + r.length, 0) / MiB;
  const line = (name: string, ms: number): string =>
    `  ${name.padEnd(38)} ${ms.toFixed(0).padStart(6)} ms ${(mb / (ms / 1000)).toFixed(0).padStart(6)} MiB/s`;
  try {
    for (const mode of ['direct-io', 'buffered'] as const) {
      const loop = createLoopDevice(sizeBytes);
      if (mode === 'direct-io') execFileSync('losetup', ['--direct-io=on', loop.device]);
      const m = await measure(loop.device, sizeBytes, rounds);
      console.log(`${mode} loop device ${loop.device} (sparse ${sizeBytes / GiB} GiB), ${mb} MiB per wipe, median of ${rounds}:`);
      console.log(line('dd oflag=direct bs=1M', m.dd));
      console.log(line('dd oflag=direct bs=1M conv=fsync', m['dd conv=fsync']));
      console.log(line('wipe (O_DIRECT writes + fsync)', m.wipe));
      console.log(line('wipe + read-back verification', m['wipe + verify']));
      console.log(`  ratio dd / wipe:                        ${(m.dd / m.wipe).toFixed(2)}`);
      console.log(`  ratio dd conv=fsync / wipe:             ${(m['dd conv=fsync'] / m.wipe).toFixed(2)}`);
      console.log(`  ratio dd / (wipe + verify):             ${(m.dd / m['wipe + verify']).toFixed(2)}`);
    }
  } finally {
    cleanupPrivileged();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
