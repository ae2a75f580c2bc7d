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
import { optimizeHeapForSize, startAgent } from '../controller/agent';
import { PassScheduler } from '../controller/pass-scheduler';
import type { KubeApi } from '../kube/api-client';
import { LeaderElector } from '../kube/leader-election';
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

export async function runNodeCleanup(options: NodeCleanupOptions): Promise<void> {
  const agent = await startAgent({ ...options, stuckAfterMs: Math.max(3 * options.stalePvDiscoveryIntervalMs, 60_000) });
  const { api, logger, metrics, health } = agent;
  const { storageClassNames, leaderElect, namespace } = options;
  logger.info({ storageClassNames, pvcDeletionDelayMs: options.pvcDeletionDelayMs, leaderElect }, 'node cleanup starting');
  if (storageClassNames.length === 0) {
    logger.warn({}, 'no --storageclass-names: nothing will be deleted (only PVs and claims of the StorageClasses listed there are)');
  }
  const controller = new NodeCleanupController(api, metrics, logger, {
    storageClassNames,
    pvcDeletionDelayMs: options.pvcDeletionDelayMs,
  });
  // A waiting replica never passes: it is ready once it can take part in the election.
  const readiness = new ReadinessConditions(health, logger, [leaderElect ? 'lease' : 'pass']);
  const passForbidden = (message: string) => readiness.failed('pass', `${message}; node-cleanup needs get, list and delete on persistentvolumes, `
    + 'get and delete on persistentvolumeclaims, and list on nodes');

  let leading = false;
  const lead = async (signal: AbortSignal): Promise<void> => {
    leading = true;
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
    leading = false;
  };

  const stop = new AbortController();
  void agent.stopped.then(() => stop.abort());
  // A waiting replica has no loop to get stuck; while leading, only the passes count as alive.
  const heartbeat = setInterval(() => {
    if (!leading) health.markLoopAlive();
  }, 10_000);
  if (!leaderElect) {
    await lead(stop.signal);
  } else {
    const leaseApi = reportingLeaseAccess(api, (forbidden) => {
      if (!forbidden) {readiness.met('lease');} else {
        readiness.failed('lease', `cannot take part in leader election: ${forbidden.message}; grant get, create and update on `
          + `leases (coordination.k8s.io) in namespace ${namespace}, or run one replica with --leader-elect=false`);
      }
    });
    const elector = new LeaderElector(leaseApi, { namespace, name: NODE_CLEANUP_LEASE, identity: options.identity, logger });
    while (!stop.signal.aborted) {
      await elector.run({ onStartedLeading: lead }, stop.signal);
    }
  }
  clearInterval(heartbeat);
  await agent.close();
}
