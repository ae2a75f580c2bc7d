/** A used Filesystem volume given back: its claim deleted to its PV offered again, clean. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createLoopDevice, makeTempDir, mkfsExt4, mount } from '../../test/support/privileged';
import { BenchCluster, pvName, until } from '../cluster';
import { MiB, millis, percentile, row } from '../table';

/** A Filesystem volume holding 10 000 small files: claim deleted to new PV Available. */
export async function releasedToAvailable(trials: number): Promise<void> {
  const cluster = await BenchCluster.start();
  const dir = makeTempDir('lvp-bench-rel-');
  const loop = createLoopDevice(512 * MiB);
  mkfsExt4(loop.device);
  mount(loop.device, path.join(dir, 'vol'));
  const name = pvName('vol');
  const agent = await cluster.startAgent(dir);
  try {
    await agent.waitReady();
    const times: number[] = [];
    for (let t = 0; t < trials; t++) {
      await until(() => cluster.available(name), 'the PV is Available');
      const uid = cluster.pv(name)!.metadata!.uid!;
      const claim = await cluster.k.bindNewClaim(name, `claim-${t}`);
      await until(() => cluster.pv(name)?.status?.phase === 'Bound', 'the PV is Bound');
      for (let d = 0; d < 100; d++) {
        const sub = path.join(dir, 'vol', `d${d}`);
        fs.mkdirSync(sub);
        for (let f = 0; f < 100; f++) fs.writeFileSync(path.join(sub, `f${f}`), 'small file\n');
      }
      execFileSync('sync');
      const t0 = performance.now();
      await cluster.k.delete('v1', 'PersistentVolumeClaim', claim, 'default');
      await until(() => cluster.available(name, uid), 'the PV is offered again', 60_000);
      times.push(performance.now() - t0);
      if (fs.readdirSync(path.join(dir, 'vol')).length !== 0) throw new Error('the volume was not emptied');
    }
    const median = percentile(times, 50);
    row(`Released to new PV Available, Filesystem volume with 10 000 files (ext4), median of ${trials}`, millis(median), '≤ 2 s (issue 5)', median <= 2000);
  } finally {
    await agent.stop();
    await cluster.stop();
  }
}
