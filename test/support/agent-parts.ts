/**
 * The runtime parts both dialects' agents share, wired as run-directory.ts and
 * run-devices.ts wire them, with the quick cache retries and quiet logger the
 * controller and device fixtures want. Both fixtures extend it.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { makeTempDir } from './privileged';
import { BackoffPolicy, CleanupProcessTable, ConcurrencyLimiter, ReclaimMode } from '../../src/runtime/cleanup';
import { KubeApi } from '../../src/runtime/kube/api-client';
import { EventRecorder } from '../../src/runtime/kube/event-recorder';
import { NodePvCache } from '../../src/runtime/kube/pv-cache';
import { createLogger, Logger, ProvisionerMetrics } from '../../src/runtime/observability';
import { VolumeRecord } from '../../src/runtime/record';
import { Deleter } from '../../src/runtime/static/deleter';
import { ReboundReporter } from '../../src/runtime/static/rebound-reporter';
import { RecordKeeper } from '../../src/runtime/static/record-keeper';
import { coreApiOf, eventually } from '../runtime/kube/fixtures';

export interface CleanupLimits {
  readonly maxConcurrent: number;
  readonly timeoutMs: number;
  /** No I/O to a device being cleaned for this long stops its cleaner. @default 0 (never) */
  readonly stallTimeoutMs?: number;
  /** Backoff of failed cleanups. */
  readonly backoff: BackoffPolicy;
  /** How PVs are held. @default 'finalizer' (the agent's mode under the construct's RBAC) */
  readonly mode?: ReclaimMode;
  /** The state directory of the node's volume record. @default a new temporary directory */
  readonly stateDir?: string;
}

export abstract class AgentParts {
  readonly core: CoreV1Api;
  readonly cache: NodePvCache;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly limiter: ConcurrencyLimiter;
  readonly table: CleanupProcessTable;
  readonly deleter: Deleter;
  /** The node's volume record, in `stateDir`. */
  readonly keeper: RecordKeeper;
  readonly stateDir: string;
  readonly mode: ReclaimMode;
  /** Quiet unless LVP_TEST_LOG=1. */
  protected readonly logger: Logger;

  /** The parts of the agent of `nodeName` over `api`. */
  constructor(readonly api: KubeApi, nodeName: string, cleanups: CleanupLimits) {
    this.core = coreApiOf(api);
    this.logger = createLogger({ level: process.env.LVP_TEST_LOG === '1' ? 'debug' : 'fatal' });
    this.cache = new NodePvCache(api, { nodeName, backoff: { initialMs: 10, maxMs: 50 }, logger: this.logger });
    this.events = new EventRecorder(api, { nodeName, logger: this.logger });
    this.metrics = new ProvisionerMetrics({ version: 'test', processMetrics: false });
    this.limiter = new ConcurrencyLimiter(cleanups.maxConcurrent);
    this.table = new CleanupProcessTable({ limiter: this.limiter, timeoutMs: cleanups.timeoutMs, backoff: cleanups.backoff });
    this.mode = cleanups.mode ?? 'finalizer';
    this.stateDir = cleanups.stateDir ?? makeTempDir('lvp-state-');
    const record = VolumeRecord.open(this.stateDir).record;
    const reporting = { events: this.events, metrics: this.metrics, logger: this.logger };
    this.keeper = new RecordKeeper({ record, ...reporting, nodeName, rebound: new ReboundReporter(reporting) });
    this.deleter = new Deleter({
      record: this.keeper.record,
      api,
      table: this.table,
      events: this.events,
      metrics: this.metrics,
      logger: this.logger,
      mode: this.mode,
      stallTimeoutMs: cleanups.stallTimeoutMs ?? 0,
    });
  }

  /** One controller pass of the fixture's dialect; its result's `created`, when it has one, names the PVs it made. */
  abstract pass(): Promise<object>;

  /**
   * Passes (each followed by its cleanups) until one creates this PV: a volume whose PV went
   * without the agent proving no tenant wrote to it is cleaned first, and offered by the pass after.
   */
  async passUntilCreated(name: string): Promise<void> {
    await eventually(async () => {
      const result = await this.pass();
      await this.settle();
      return 'created' in result && (result.created as readonly string[]).includes(name);
    }, `a pass creates PV ${name}`);
  }

  /** The value of one metric series (labels matched exactly as written), or undefined. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    const text = await this.metrics.exposition();
    const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      const labelText = line.slice(name.length).match(/^\{(.*)\}/)?.[1] ?? '';
      const have = labelText === '' ? [] : labelText.split(/,(?=[a-z_]+=")/);
      if (want.length === have.length && want.every((w) => have.includes(w))) return Number(line.split(' ').pop());
    }
    return undefined;
  }

  /** Waits for every cleanup started so far and every Event recorded so far. */
  async settle(): Promise<void> {
    await this.table.idle();
    await this.events.flush();
  }

  /** Aborts the cleanups, waits for them and the Events, and stops the cache. */
  protected async stopParts(): Promise<void> {
    this.table.abortAll();
    await this.settle();
    await this.cache.stop();
  }
}
