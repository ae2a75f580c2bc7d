/**
 * Total size of the filesystem mounted at a path: blocks × block size from
 * statfs, as the Go provisioner computes a Filesystem volume's capacity.
 */
import * as fs from 'node:fs';

export async function filesystemSize(mountPath: string): Promise<number> {
  const stats = await fs.promises.statfs(mountPath, { bigint: true });
  return Number(stats.blocks * stats.bsize);
}
