/**
 * `local-volume-provisioner node-cleanup`: the node-cleanup controller as a
 * Deployment. Replicas campaign for a Lease; only the leader acts, so two
 * replicas never delete the same claim twice.
 */
import { NodeCleanupController } from './node-cleanup-controller';
import type { NodeCleanupOptions } from './node-cleanup-options';
import { startAgent } from '../controller/agent';
import { PassScheduler } from '../controller/pass-scheduler';
import { LeaderElector } from '../kube/leader-election';

export const NODE_CLEANUP_LEASE = 'local-volume-provisioner-node-cleanup';

export async function runNodeCleanup(options: NodeCleanupOptions): Promise<void> {
  const agent = await startAgent({ ...options, stuckAfterMs: Math.max(3 * options.stalePvDiscoveryIntervalMs, 60_000) });
  const { api, logger, metrics, health } = agent;
  const controller = new NodeCleanupController(api, metrics, logger, {
    storageClassNames: options.storageClassNames,
    pvcDeletionDelayMs: options.pvcDeletionDelayMs,
  });
  let leading = false;
  const lead = async (signal: AbortSignal): Promise<void> => {
    leading = true;
    const scheduler = new PassScheduler(async () => {
      const result = await controller.pass();
      health.markLoopAlive();
      if (result.deletedPVs.length + result.deletedClaims.length > 0) logger.info(result, 'node cleanup pass');
    }, { periodMs: options.stalePvDiscoveryIntervalMs, onError: (e) => logger.error({ err: e }, 'node cleanup pass failed') });
    scheduler.start();
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await scheduler.stop();
    leading = false;
  };

  const stop = new AbortController();
  void agent.stopped.then(() => stop.abort());
  // Ready as soon as it serves: a non-leader replica is healthy, only idle.
  health.markReady();
  // A waiting replica has no loop to get stuck; while leading, only the passes count as alive.
  const heartbeat = setInterval(() => {
    if (!leading) health.markLoopAlive();
  }, 10_000);
  if (!options.leaderElect) {
    await lead(stop.signal);
  } else {
    const elector = new LeaderElector(api, { namespace: options.namespace, name: NODE_CLEANUP_LEASE, identity: options.identity, logger });
    while (!stop.signal.aborted) {
      await elector.run({ onStartedLeading: lead }, stop.signal);
    }
  }
  clearInterval(heartbeat);
  await agent.close();
}
