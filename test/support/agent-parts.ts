/**
 * The runtime parts both dialects' agents share, wired as run-directory.ts and
 * run-devices.ts wire them, with the quick cache retries and quiet logger the
 * controller and device fixtures want.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { BackoffPolicy, CleanupProcessTable, ConcurrencyLimiter } from '../../src/runtime/cleanup';
import { Deleter } from '../../src/runtime/controller/deleter';
import { KubeApi } from '../../src/runtime/kube/api-client';
import { EventRecorder } from '../../src/runtime/kube/event-recorder';
import { NodePvCache } from '../../src/runtime/kube/pv-cache';
import { createLogger, Logger, ProvisionerMetrics } from '../../src/runtime/observability';

export interface AgentParts {
  readonly api: KubeApi;
  readonly core: CoreV1Api;
  readonly logger: Logger;
  readonly cache: NodePvCache;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly limiter: ConcurrencyLimiter;
  readonly table: CleanupProcessTable;
  readonly deleter: Deleter;
}

export interface CleanupLimits {
  readonly maxConcurrent: number;
  readonly timeoutMs: number;
  /** Backoff of failed cleanups. */
  readonly backoff: BackoffPolicy;
}

/** The parts of the agent of `nodeName` over `api`; set LVP_TEST_LOG=1 to see its log. */
export function agentParts(api: KubeApi, nodeName: string, cleanups: CleanupLimits): AgentParts {
  const logger = createLogger({ level: process.env.LVP_TEST_LOG === '1' ? 'debug' : 'fatal' });
  const cache = new NodePvCache(api, { nodeName, backoff: { initialMs: 10, maxMs: 50 }, logger });
  const events = new EventRecorder(api, { nodeName, logger });
  const metrics = new ProvisionerMetrics({ version: 'test', processMetrics: false });
  const limiter = new ConcurrencyLimiter(cleanups.maxConcurrent);
  const table = new CleanupProcessTable({ limiter, timeoutMs: cleanups.timeoutMs, backoff: cleanups.backoff });
  const deleter = new Deleter({ api, table, events, metrics, logger });
  return { api, core: api.kubeConfig.makeApiClient(CoreV1Api), logger, cache, events, metrics, limiter, table, deleter };
}
