/** The backend behind each pool class, by its `pool` setting. */
import type { PoolBackend } from './backend';
import { BtrfsPool } from './btrfs';
import { LvmThinPool } from './lvm-thin';
import type { PoolClassConfig } from './pool-decisions';
import { ProjectQuotaPool } from './project-quota';

/** @param recorded the identities of the class's volumes in the node record */
export function poolBackend(pool: PoolClassConfig, recorded: () => readonly string[]): PoolBackend {
  switch (pool.pool) {
    case 'btrfs':
      return new BtrfsPool(pool.mountDir, recorded);
    case 'xfs':
    case 'ext4':
      return new ProjectQuotaPool(pool.mountDir, pool.pool, recorded);
    case 'lvm-thin':
      return new LvmThinPool({ volumeGroup: pool.hostDir.slice('/dev/'.length), thinPool: pool.thinPool ?? '', fsType: pool.fsType, overcommit: pool.overcommit });
  }
}
