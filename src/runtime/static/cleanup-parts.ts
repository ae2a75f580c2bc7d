/**
 * What both dialects' agents clean volumes with: the table the cleanups run in,
 * the node's record of volume states, the deleter that acts on Released PVs, and
 * what says a volume was bound to another tenant while no agent ran.
 */
import { CleanupProcessTable, ConcurrencyLimiter, ReclaimMode } from '../cleanup';
import { Deleter } from './deleter';
import { openRecordKeeper } from './open-record';
import { ReboundReporter } from './rebound-reporter';
import type { RecordKeeper } from './record-keeper';
import type { EventRecorder } from '../kube/event-recorder';
import type { Agent } from '../lifecycle/agent';

export interface CleanupPartsOptions {
  readonly nodeName: string;
  readonly mode: ReclaimMode;
  /** Where the volume record lives. */
  readonly stateDir: string;
  readonly events: EventRecorder;
  readonly limiter: ConcurrencyLimiter;
  /** A cleanup running longer is aborted and fails. 0 = no limit. */
  readonly timeoutMs: number;
  /** A device cleanup during which the device sees no I/O this long is stopped. 0 = never. */
  readonly stallTimeoutMs: number;
}

export interface CleanupParts {
  readonly table: CleanupProcessTable;
  readonly keeper: RecordKeeper;
  readonly deleter: Deleter;
  /** Where the record and the pools say that a volume was bound to another tenant than the one that used it. */
  readonly rebound: ReboundReporter;
}

export function cleanupParts(agent: Agent, options: CleanupPartsOptions): CleanupParts {
  const { api, metrics, logger } = agent;
  const { events, mode, nodeName } = options;
  const table = new CleanupProcessTable({ limiter: options.limiter, timeoutMs: options.timeoutMs });
  const rebound = new ReboundReporter({ events, metrics, logger });
  const keeper = openRecordKeeper(options.stateDir, { events, metrics, logger, nodeName, rebound });
  const deleter = new Deleter({ api, table, events, metrics, logger, mode, stallTimeoutMs: options.stallTimeoutMs, record: keeper.record });
  return { table, keeper, deleter, rebound };
}
