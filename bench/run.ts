/**
 * `npm run bench`: the figures the issues set, measured on this machine, printed as
 * a table and written to docs/benchmarks.md with the machine they were taken on.
 *
 * Run as root in a private mount namespace (the bind mounts and loop devices it
 * makes vanish with it):
 *   scripts/in-private-mount-namespace.sh ts-node --transpile-only -P test/tsconfig.json bench/run.ts [section...]
 * With sections named (see SECTIONS), only those run and docs/benchmarks.md is left alone.
 *
 * One file per scenario (bench/scenarios/), the cluster and agent they share (cluster.ts),
 * the tables (table.ts) and the notes printed under them (notes.md).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { claimGuardCost } from './scenarios/claim-guard';
import { claimScale } from './scenarios/claim-scale';
import { connectionsPerAgent } from './scenarios/connections';
import { controlPlane } from './scenarios/control-plane';
import { discoveryAndFootprint, startToPvs } from './scenarios/footprint';
import { imageSize } from './scenarios/image';
import { memoryWithOtherNodes } from './scenarios/memory';
import { newDeviceToAvailable, newVolumeToAvailable } from './scenarios/new-volume';
import { poolBackends } from './scenarios/pool-backends';
import { poolClaims, poolIdle } from './scenarios/pools';
import { projectScan } from './scenarios/project-scan';
import { releasedToAvailable } from './scenarios/released';
import { snapshots } from './scenarios/snapshots';
import { helpStartup } from './scenarios/startup';
import { synthesis } from './scenarios/synthesis';
import { wholeWipeVersusDd, wipeVersusDd } from './scenarios/wipe';
import { markdown } from './table';
import { bundledBin, REPO } from '../test/support/agent-process';
import { cleanupPrivileged } from '../test/support/privileged';

const INTRO = [
  'Written by `npm run bench` (bench/run.ts); do not edit by hand. The agent is the',
  'real bin, bundled into one file by esbuild as the image runs it, against a real',
  'kube-apiserver (the tests\' control plane, with its controller manager and scheduler)',
  'over HTTPS through a proxy that counts its requests, on bind mounts and loop devices in',
  'a private mount namespace. Where a row compares, both sides were measured in the same',
  'run; absolute times vary between machines and runs.',
].join('\n');

/** The bench's parts, in the order they run; `bench/run.ts <name>...` runs only those named. */
const SECTIONS: ReadonlyArray<readonly [string, () => Promise<void> | void]> = [
  ['footprint', discoveryAndFootprint],
  ['start', startToPvs],
  ['new-volume', async () => {
    await newVolumeToAvailable(20);
    cleanupPrivileged();
    await newDeviceToAvailable(20);
  }],
  ['released', () => releasedToAvailable(3)],
  ['wipe', async () => {
    await wipeVersusDd(3);
    cleanupPrivileged();
    await wholeWipeVersusDd(3);
  }],
  ['memory', memoryWithOtherNodes],
  ['pools', async () => {
    await poolClaims();
    cleanupPrivileged();
    await poolIdle();
  }],
  ['pool-backends', poolBackends],
  ['snapshots', snapshots],
  ['project-scan', projectScan],
  ['claim-guard', () => claimGuardCost()],
  ['claim-scale', claimScale],
  ['connections', connectionsPerAgent],
  ['help', helpStartup],
  ['control-plane', controlPlane],
  ['synthesis', synthesis],
  ['image', imageSize],
];

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((w) => !SECTIONS.some(([name]) => name === w));
  if (unknown.length > 0) throw new Error(`unknown section(s) ${unknown.join(', ')}; the sections are ${SECTIONS.map(([name]) => name).join(', ')}`);
  console.log('bundling the bin (esbuild)...');
  bundledBin();
  try {
    for (const [name, run] of SECTIONS) {
      if (wanted.length > 0 && !wanted.includes(name)) continue;
      console.log(name);
      await run();
      cleanupPrivileged();
    }
  } finally {
    cleanupPrivileged();
  }
  const md = markdown(INTRO, fs.readFileSync(path.join(__dirname, 'notes.md'), 'utf8'));
  if (wanted.length === 0) fs.writeFileSync(path.join(REPO, 'docs/benchmarks.md'), md);
  console.log(`\n${md}`);
}

// Interrupted, it still detaches its loop devices (they outlive the mount namespace).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    cleanupPrivileged();
    process.exit(130);
  });
}

main().catch((e) => {
  cleanupPrivileged();
  console.error(e);
  process.exit(1);
});
