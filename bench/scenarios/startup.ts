/** How fast the bin starts: `--help`, process start to exit. */
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { bundledBin } from '../../test/support/agent-process';
import { millis, percentile, row } from '../table';

/** `--help`: process start to exit, against a bare `node -e ''` (issue 16: 5–11× it, everything loaded first). */
export function helpStartup(): void {
  const median = (args: string[]) => percentile(Array.from({ length: 5 }, () => {
    const t = performance.now();
    spawnSync(process.execPath, args, { stdio: 'ignore' });
    return performance.now() - t;
  }), 50);
  const bare = median(['-e', '']);
  const help = median([bundledBin(), '--help']);
  row('`--help`, process start to exit, median of 5', `${millis(help)} (${(help / bare).toFixed(1)}× a bare \`node -e ''\`, ${millis(bare)})`);
}
