/** The backend behind each pool class, by its `pool` setting. */
import type { PoolBackend } from './backend';
import { BtrfsPool } from './btrfs';
import { LvmThinPool } from './lvm-thin';
import type { NodeLvmProbe } from './node-lvm-confinement';
import type { PoolClassConfig } from './pool-decisions';
import type { Logger } from '../observability';
import { ProjectQuotaPool } from './project-quota';

/** What a backend may ask of the node record and the node. */
export interface BackendContext {
  /** The identities of the class's volumes in the node record. */
  readonly recorded: () => readonly string[];
  /** The storage the record holds for the class, once claimed. */
  readonly claimed?: () => string | undefined;
  /** The node's one probe of its LVM. */
  readonly nodeLvm?: NodeLvmProbe;
  /** For what a backend does on its own (a walk of its volumes). */
  readonly logger?: Logger;
  /** How often an xfs or ext4 pool's volumes are walked (project-scan.ts). */
  readonly projectScanPeriodMs?: number;
}

export function poolBackend(pool: PoolClassConfig, context: BackendContext): PoolBackend {
  switch (pool.pool) {
    case 'btrfs':
      return new BtrfsPool(pool.mountDir, context.recorded);
    case 'xfs':
    case 'ext4':
      return new ProjectQuotaPool(pool.mountDir, pool.pool, context.recorded, pool.projectQuotaTenants ?? 'user-namespaced', context.logger,
        context.projectScanPeriodMs);
    case 'lvm-thin':
      return new LvmThinPool({
        volumeGroup: pool.hostDir.slice('/dev/'.length),
        thinPool: pool.thinPool ?? '',
        fsType: pool.fsType,
        overcommit: pool.overcommit,
        claimed: context.claimed,
        nodeLvm: context.nodeLvm,
      });
  }
}
