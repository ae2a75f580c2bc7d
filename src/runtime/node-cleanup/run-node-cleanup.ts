/**
 * `local-volume-provisioner node-cleanup` (or upstream's node-cleanup
 * Deployment, started without a subcommand): the node-cleanup controller as a
 * Deployment. With leader election, replicas campaign for a Lease and only the
 * leader acts, so two replicas never delete the same claim twice; without it
 * (upstream has none, and its RBAC grants no Lease), the one replica acts.
 *
 * Ready means able to do its job: after a pass the API server did not refuse,
 * or, for a waiting replica, once the Lease can be read. A request refused for
 * lack of a permission (403) withdraws readiness, and the log and `/readyz` say
 * which permission, until a later request succeeds.
 */
import { isForbidden, NodeCleanupController } from './node-cleanup-controller';
import type { NodeCleanupOptions } from './node-cleanup-options';
import { NODE_CLEANUP_LEASE } from '../../config';
import type { KubeApi } from '../kube/api-client';
import { EventRecorder } from '../kube/event-recorder';
import { LeaderElector } from '../kube/leader-election';
import { startAgent } from '../lifecycle/agent';
import { optimizeHeapForSize } from '../lifecycle/heap';
import { PassScheduler } from '../lifecycle/pass-scheduler';
import { Runner, stopping } from '../lifecycle/runners';
import type { Health, Logger } from '../observability';


/** What must hold for readiness: each named condition met at least once, and none failing now. */
class ReadinessConditions {
  private readonly pending: Set<string>;
  private readonly failing = new Map<string, string>();

  constructor(private readonly health: Health, private readonly logger: Logger, conditions: string[]) {
    this.pending = new Set(conditions);
  }

  met(name: string): void {
    this.pending.delete(name);
    if (this.failing.delete(name)) this.logger.info({ condition: name }, 'permission restored; ready again');
    this.update();
  }

  failed(name: string, reason: string): void {
    if (this.failing.get(name) !== reason) this.logger.error({ condition: name, reason }, 'not ready: a request is forbidden');
    this.failing.set(name, reason);
    this.update();
  }

  private update(): void {
    if (this.failing.size > 0) this.health.markBlocked([...this.failing.values()].join('; '));
    else if (this.pending.size === 0) this.health.markReady();
  }
}

/**
 * The API as the leader elector sees it, reporting whether its Lease requests are
 * allowed: a 403 means the ServiceAccount lacks the Lease rules, a success that it has them.
 */
function reportingLeaseAccess(api: KubeApi, report: (forbidden: Error | undefined) => void): KubeApi {
  const observed = <A extends unknown[], R>(call: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    try {
      const result = await call(...args);
      report(undefined);
      return result;
    } catch (e) {
      if (isForbidden(e)) report(e as Error);
      throw e;
    }
  };
  return Object.assign(Object.create(api) as KubeApi, {
    getLease: observed(api.getLease.bind(api)),
    createLease: observed(api.createLease.bind(api)),
    replaceLease: observed(api.replaceLease.bind(api)),
  });
}

/**
 * Runs `lead` for each term this replica leads, until stopped: with an elector,
 * for as long as it holds the Lease; without one, from start to stop.
 */
class Leadership implements Runner {
  private readonly stopped = new AbortController();
  private running: Promise<void> | undefined;
  private leadingNow = false;

  constructor(
    private readonly elector: LeaderElector | undefined,
    private readonly lead: (signal: AbortSignal) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  /** Whether a term is running now. */
  get leading(): boolean {
    return this.leadingNow;
  }

  start(): void {
    this.running = this.campaign().catch((err: unknown) => this.logger.error({ err }, 'leadership loop failed'));
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    await this.running;
  }

  private async campaign(): Promise<void> {
    const { elector } = this;
    if (!elector) return this.term(this.stopped.signal);
    while (!this.stopped.signal.aborted) {
      await elector.run({ onStartedLeading: (signal) => this.term(signal) }, this.stopped.signal);
    }
  }

  private async term(signal: AbortSignal): Promise<void> {
    this.leadingNow = true;
    try {
      await this.lead(signal);
    } finally {
      this.leadingNow = false;
    }
  }
}

export async function runNodeCleanup(options: NodeCleanupOptions): Promise<void> {
  const agent = await startAgent({ ...options, stuckAfterMs: Math.max(3 * options.stalePvDiscoveryIntervalMs, 60_000) });
  const { api, logger, metrics, health, runners } = agent;
  const { storageClassNames, leaderElect, namespace } = options;
  logger.info({ storageClassNames, pvcDeletionDelayMs: options.pvcDeletionDelayMs, leaderElect }, 'node cleanup starting');
  if (storageClassNames.length === 0) {
    logger.warn({}, 'no --storageclass-names: nothing will be deleted (only PVs and claims of the StorageClasses listed there are)');
  }
  // Upstream's Events come from source `cleanup-controller`; a Deployment names no host.
  const events = new EventRecorder(agent.eventsApi, { component: 'cleanup-controller', logger });
  const controller = new NodeCleanupController(api, metrics, logger, events, {
    storageClassNames,
    pvcDeletionDelayMs: options.pvcDeletionDelayMs,
  });
  // A waiting replica never passes: it is ready once it can take part in the election.
  const readiness = new ReadinessConditions(health, logger, [leaderElect ? 'lease' : 'pass']);
  const passForbidden = (message: string) => readiness.failed('pass', `${message}; node-cleanup needs get, list and delete on persistentvolumes, `
    + 'get and delete on persistentvolumeclaims, and list on nodes');

  // One term of leadership: passes on the period until the term ends.
  const lead = async (signal: AbortSignal): Promise<void> => {
    const scheduler = new PassScheduler(async () => {
      try {
        const result = await controller.pass();
        optimizeHeapForSize();
        health.markLoopAlive();
        if (result.denied.length > 0) passForbidden(result.denied[0]);
        else readiness.met('pass');
        if (result.deletedPVs.length + result.deletedClaims.length > 0) logger.info(result, 'node cleanup pass');
      } catch (e) {
        if (isForbidden(e)) passForbidden((e as Error).message);
        throw e;
      }
    }, { periodMs: options.stalePvDiscoveryIntervalMs, onError: (e) => logger.error({ err: e }, 'node cleanup pass failed') });
    scheduler.start();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await scheduler.stop();
  };

  const leaseApi = reportingLeaseAccess(api, (forbidden) => {
    if (!forbidden) {readiness.met('lease');} else {
      readiness.failed('lease', `cannot take part in leader election: ${forbidden.message}; grant get, create and update on `
        + `leases (coordination.k8s.io) in namespace ${namespace}, or run one replica with --leader-elect=false`);
    }
  });
  const elector = leaderElect ? new LeaderElector(leaseApi, { namespace, name: NODE_CLEANUP_LEASE, identity: options.identity, logger }) : undefined;
  const leadership = new Leadership(elector, lead, logger);
  // A waiting replica has no loop to get stuck; while leading, only the passes count as alive.
  const heartbeat = setInterval(() => {
    if (!leadership.leading) health.markLoopAlive();
  }, 10_000);
  await runners.start('heartbeat', stopping(() => clearInterval(heartbeat)));
  await runners.start('leadership', leadership);

  await agent.runUntilStopped();
}
