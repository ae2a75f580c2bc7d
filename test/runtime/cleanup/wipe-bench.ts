/**
 * Benchmark: the device wipe against `dd if=/dev/zero oflag=direct bs=1M` over
 * the same ranges of the same device, in the same run. Prints the figures and
 * the ratio (dd time / our time; at least 0.9 is the target, higher is faster).
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
  await wipeDevice(device, { verify: false });

  const times: Record<string, number[]> = { 'dd': [], 'dd conv=fsync': [], 'wipe': [], 'wipe + verify': [] };
  for (let i = 0; i < rounds; i++) {
    times.dd.push(ddOverRanges(device, sizeBytes));
    times['dd conv=fsync'].push(ddOverRanges(device, sizeBytes, ['conv=fsync']));
    const w = await wipeDevice(device, { verify: false });
    if (!w.ok) throw new Error(w.reason);
    times.wipe.push(w.writeMs);
    const v = await wipeDevice(device);
    if (!v.ok) throw new Error(v.reason);
    times['wipe + verify'].push(v.writeMs + v.verifyMs);
  }
  return Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, median(xs)]));
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
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
