/**
 * `local-volume-provisioner devices` (or the bin `local-pv-provisioner`): the
 * device dialect's node agent, wired together. It adopts the PVs the
 * device-selecting provisioner made on this node, watches the namespace's
 * ConfigMaps so a spec edit applies at once (upstream waits for its 5-minute
 * poll), watches this Node so a new or changed spec annotation applies at
 * once too, and passes on the polling interval, on new devices (the device
 * directory and the mount table are watched) and on PV changes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { V1ConfigMap, V1Node } from '@kubernetes/client-node';
import { PROVISIONER_DEFAULTS, PV_SPEC_CONFIGMAP_ANNOTATION } from '../../config';
import { CleanupProcessTable, ConcurrencyLimiter } from '../cleanup';
import { reportAdoptedVolumes } from './adoption-events';
import { optimizeHeapForSize, startAgent } from './agent';
import { DirectoryWatcher, MountTableWatcher } from './change-watchers';
import { Deleter } from './deleter';
import { DeviceController } from './device-controller';
import type { DeviceRunOptions } from './device-run-options';
import { NodeInfoSource } from './node-info-source';
import { openRecordKeeper } from './open-record';
import { PassScheduler } from './pass-scheduler';
import { needsPassNow } from './pv-stewardship';
import { reclaimModeOf } from './reclaim-mode';
import { VolumeLocks } from './volume-locks';
import { adoptUnlabelledPersistentVolumes, upstreamDeviceNode } from '../kube/adoption';
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import { NodePvCache } from '../kube/pv-cache';
import { Reflector } from '../kube/reflector';
import { fromWire } from '../kube/wire';
import { EventReasons } from '../observability';
import { DEVICE_DIALECT_NODE_LABELS } from '../well-known';

export async function runDeviceProvisioner(options: DeviceRunOptions): Promise<void> {
  const agent = await startAgent({ ...options, stuckAfterMs: Math.max(3 * options.pollingIntervalMs, 60_000) });
  const { api, logger, metrics, health } = agent;
  // The device gauges exist from the start, so a dashboard never sees them absent.
  metrics.setDevices(options.nodeName, { available: 0, error: 0, held: 0 });

  // Waits for the Node to exist; the pass re-reads it for its annotation.
  await new NodeInfoSource(api, options.nodeName, logger).get();
  const { mode, warning: modeWarning } = await reclaimModeOf(api, logger);
  // Upstream's PVs carry its node label in one spelling or the other (older releases: .com).
  const adopted: string[] = [];
  for (const label of DEVICE_DIALECT_NODE_LABELS) {
    const criterion = upstreamDeviceNode(options.nodeName, label);
    const adoption = await adoptUnlabelledPersistentVolumes(api, { nodeName: options.nodeName, criterion, logger });
    logger.info({ label, examined: adoption.examined, adopted: adoption.adopted.length }, 'adoption pass done');
    adopted.push(...adoption.adopted);
  }

  const cache = new NodePvCache(api, { nodeName: options.nodeName, logger });
  const configMaps = new Reflector<V1ConfigMap>(api, {
    resource: 'configmaps',
    watchPath: `/api/v1/namespaces/${options.namespace}/configmaps`,
    list: (page, callOptions) => api.listConfigMaps(options.namespace, page, callOptions),
    fromWire: (raw) => fromWire<V1ConfigMap>(raw, 'V1ConfigMap'),
    logger,
  });
  // The annotation naming the spec may be set or changed at any time; watch this one Node for it.
  const nodes = new Reflector<V1Node>(api, {
    resource: 'nodes',
    watchPath: `/api/v1/nodes?fieldSelector=${encodeURIComponent(`metadata.name=${options.nodeName}`)}`,
    list: async () => {
      const node = await api.getNode(options.nodeName);
      return { items: node ? [node] : [], metadata: { resourceVersion: node?.metadata?.resourceVersion } };
    },
    fromWire: (raw) => fromWire<V1Node>(raw, 'V1Node'),
    logger,
  });
  await Promise.all([cache.start(), configMaps.start(), nodes.start()]);
  health.whileUnready(() => cache.staleReason());

  const events = new EventRecorder(agent.eventsApi, { nodeName: options.nodeName, logger });
  reportAdoptedVolumes(events, cache, adopted, options.nodeName);
  if (modeWarning) events.warning(nodeReference(options.nodeName), EventReasons.PermissionMissing.reason, modeWarning);
  const limiter = new ConcurrencyLimiter(PROVISIONER_DEFAULTS.maxConcurrentCleanups);
  const table = new CleanupProcessTable({ limiter, timeoutMs: PROVISIONER_DEFAULTS.cleanupTimeout });
  const keeper = openRecordKeeper(options.stateDir, { events, metrics, logger, nodeName: options.nodeName });
  const deleter = new Deleter({
    api, table, events, metrics, logger, mode, stallTimeoutMs: PROVISIONER_DEFAULTS.cleanupStallTimeout, record: keeper.record,
  });
  const controller = new DeviceController({
    api,
    mode,
    cache,
    events,
    metrics,
    logger,
    deleter,
    keeper,
    limiter,
    stallTimeoutMs: PROVISIONER_DEFAULTS.cleanupStallTimeout,
    namespace: options.namespace,
    defaultPvSpecConfigMap: options.defaultPvSpecConfigMap,
    configMap: (name) => configMaps.get(name),
  });

  const devices = new DirectoryWatcher(() => scheduler.trigger());
  const locks = new VolumeLocks({ logger, metrics, retry: () => scheduler.trigger() });
  const scheduler = new PassScheduler(async () => {
    // The annotation may change at any time: read the Node on every pass.
    const node = await api.getNode(options.nodeName);
    if (!node) throw new Error(`Node "${options.nodeName}" no longer exists`);
    await locks.run(controller.directories(node), async () => {
      const result = await controller.pass(node);
      if (result.state === 'provisioned') devices.refresh(await directoriesUnder(result.spec.deviceDir));
    });
    optimizeHeapForSize();
    health.markLoopAlive();
    // Ready while another agent acts, so a rollout goes on and that agent stops.
    health.markReady();
  }, { periodMs: options.pollingIntervalMs, onError: (e) => logger.error({ err: e }, 'pass failed; retried on the next trigger or period') });
  const mounts = new MountTableWatcher(() => scheduler.trigger());
  configMaps.onChange(() => scheduler.trigger());
  const specAnnotation = (node?: V1Node) => node?.metadata?.annotations?.[PV_SPEC_CONFIGMAP_ANNOTATION];
  nodes.onChange(({ object, previous }) => {
    if (specAnnotation(object) !== specAnnotation(previous)) scheduler.trigger();
  });
  cache.onChange((change) => {
    if (needsPassNow(change)) scheduler.trigger();
  });
  scheduler.start();

  const signal = await agent.stopped;
  logger.info({ signal }, 'stopping');
  devices.close();
  mounts.close();
  table.abortAll();
  await scheduler.stop();
  await table.idle();
  locks.releaseAll();
  await Promise.all([cache.stop(), configMaps.stop(), nodes.stop()]);
  await agent.close();
}

/**
 * `dir` and every directory below it (symlinks not followed, unreadable ones
 * skipped): discovery walks deviceDir recursively, so a device link may appear
 * at any depth, and the watcher sees only each directory's first level.
 */
async function directoriesUnder(dir: string): Promise<string[]> {
  const entries = await fs.promises.readdir(dir, { withFileTypes: true }).catch(() => []);
  const below = await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => directoriesUnder(path.join(dir, e.name))));
  return [dir, ...below.flat()];
}
