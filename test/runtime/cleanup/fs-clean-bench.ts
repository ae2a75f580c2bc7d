/**
 * Benchmark: the filesystem cleaner on a volume of 10 000 small files (100
 * directories of 100 files, on a fresh ext4 loop device mounted as the volume),
 * against Node's `fs.rm` of each child and `find -delete`, in the same run.
 *
 * Run as root:
 *   scripts/in-private-mount-namespace.sh npx ts-node --transpile-only -P test/tsconfig.json test/runtime/cleanup/fs-clean-bench.ts [rounds]
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cleanFilesystemVolume } from '../../../src/runtime/cleanup/filesystem-cleaner';
import { cleanupPrivileged, createLoopDevice, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function fill(root: string): void {
  for (let d = 0; d < 100; d++) {
    const dir = path.join(root, `dir-${d}`);
    fs.mkdirSync(dir);
    for (let f = 0; f < 100; f++) fs.writeFileSync(path.join(dir, `file-${f}`), 'small file\n');
  }
  // Settle the fresh inodes so every candidate starts from the same state.
  execFileSync('sync');
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 5);
  const loop = createLoopDevice(1024 * 1024 * 1024);
  mkfsExt4(loop.device);
  const root = path.join(makeTempDir('lvp-fsbench-'), 'vol');
  mount(loop.device, root);
  try {
    const candidates: Record<string, () => Promise<void>> = {
      'cleanFilesystemVolume': async () => {
        const r = await cleanFilesystemVolume(root);
        if (!r.ok) throw new Error(r.reason);
      },
      'fs.rm of each child (reference)': async () => {
        for (const name of fs.readdirSync(root)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
      },
      'find -delete (reference)': async () => {
        execFileSync('find', [root, '-xdev', '-mindepth', '1', '-delete']);
      },
    };
    const times: Record<string, number[]> = {};
    for (let i = 0; i < rounds; i++) {
      for (const [name, run] of Object.entries(candidates)) {
        fill(root);
        const started = performance.now();
        await run();
        (times[name] ??= []).push(performance.now() - started);
        if (fs.readdirSync(root).filter((n) => n !== 'lost+found').length > 0) throw new Error(`${name} left entries behind`);
      }
    }
    console.log(`10 000 small files in 100 directories on ext4 (${loop.device}), median of ${rounds}:`);
    for (const [name, xs] of Object.entries(times)) console.log(`  ${name.padEnd(34)} ${median(xs).toFixed(0).padStart(6)} ms`);
  } finally {
    cleanupPrivileged();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
