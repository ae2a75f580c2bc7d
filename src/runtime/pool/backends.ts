/** The backend behind each pool class, by its `pool` setting. */
import type { PoolBackend } from './backend';
import { BtrfsPool } from './btrfs';
import type { PoolClassConfig } from './pool-decisions';

export function poolBackend(pool: PoolClassConfig): PoolBackend {
  switch (pool.pool) {
    case 'btrfs':
      return new BtrfsPool(pool.mountDir);
  }
}
