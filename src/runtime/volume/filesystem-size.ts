/**
 * Total size of the filesystem mounted at a path: blocks × block size from
 * statfs, as the Go provisioner computes a Filesystem volume's capacity.
 */
import * as fs from 'node:fs';

/** Synchronous, as inspectEntry: statfs of a local filesystem reads counters held in memory. */
export function filesystemSize(mountPath: string): number {
  const stats = fs.statfsSync(mountPath, { bigint: true });
  return Number(stats.blocks * stats.bsize);
}
