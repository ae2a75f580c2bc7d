/**
 * Benchmark: what capturing and restoring a volume root's metadata costs (each a few
 * getfattr/setfattr processes), on the root of a fresh ext4 loop device mounted as the
 * volume, recorded with a label xattr and a default ACL:
 * - capture: one getfattr;
 * - restore of an unchanged root: two getfattr (read, verify);
 * - restore after a tenant added two xattrs and both ACLs, chmod 3777 and chown:
 *   getfattr, a setfattr per removal, getfattr again.
 *
 * Run as root:
 *   scripts/in-private-mount-namespace.sh npx ts-node --transpile-only -P test/tsconfig.json test/runtime/volume/root-metadata-bench.ts [rounds]
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { captureRootMetadata, openDirectory, restoreRootMetadata } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timed(op: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await op();
  return performance.now() - start;
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 50);
  const loop = createLoopDevice(32 * 1024 * 1024);
  mkfsExt4(loop.device);
  const root = path.join(makeTempDir('lvp-rootmeta-bench-'), 'vol');
  mount(loop.device, root, { type: 'ext4' });
  execFileSync('setfattr', ['-n', 'user.offered-by', '-v', 'admin', root]);
  execFileSync('setfacl', ['-d', '-m', 'g:3000:rwx', root]);
  const h = openDirectory(root);
  try {
    const recorded = await captureRootMetadata(h);
    const capture: number[] = [];
    const unchanged: number[] = [];
    const changed: number[] = [];
    for (let i = 0; i < rounds; i++) {
      capture.push(await timed(() => captureRootMetadata(h)));
      unchanged.push(await timed(() => restoreRootMetadata(h, recorded)));
      execFileSync('setfattr', ['-n', 'user.tenant', '-v', 'x', root]);
      execFileSync('setfattr', ['-n', 'trusted.tenant', '-v', 'x', root]);
      execFileSync('setfacl', ['-m', 'u:1000:rwx', '-d', '-m', 'u:1000:rwx', root]);
      fs.chownSync(root, 1000, 1000);
      fs.chmodSync(root, 0o3777);
      changed.push(await timed(async () => {
        const r = await restoreRootMetadata(h, recorded);
        if (!r.ok) throw new Error(r.reason);
      }));
    }
    const ms = (xs: number[]) => `${median(xs).toFixed(1)} ms median, ${Math.max(...xs).toFixed(1)} ms max`;
    console.log(`${rounds} rounds on ext4, node ${process.version}`);
    console.log(`capture:                  ${ms(capture)}`);
    console.log(`restore, root unchanged:  ${ms(unchanged)}`);
    console.log(`restore, tenant's changes: ${ms(changed)}`);
  } finally {
    fs.closeSync(h.fd);
    cleanupPrivileged();
  }
}

void main();
