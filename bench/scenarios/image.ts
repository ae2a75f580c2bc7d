/** The container image's size. */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { DEFAULT_IMAGE } from '../../src/constructs';
import { REPO } from '../../test/support/agent-process';
import { row } from '../table';

/** The construct's default image, built (or found up to date) by scripts/image.sh: its size as podman stores it. */
export function imageSize(): void {
  execFileSync(path.join(REPO, 'scripts/image.sh'), { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'] });
  const bytes = Number(execFileSync(path.join(REPO, 'scripts/podman.sh'), ['image', 'inspect', '--format={{.Size}}', DEFAULT_IMAGE], { encoding: 'utf8' }));
  const limit = 410e6 / 2;
  row('Container image (image/Dockerfile), uncompressed', `${(bytes / 1e6).toFixed(0)} MB`,
    `≤ ${(limit / 1e6).toFixed(0)} MB (issue 15: half of the first image's 410 MB)`, bytes <= limit);
}
