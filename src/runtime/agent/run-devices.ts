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
import { ConcurrencyLimiter } from '../cleanup';
import { DirectoryWatcher, MountTableWatcher } from './change-watchers';
import { boundPv, ClaimGuardCheck } from './claim-guard-check';
import type { DeviceRunOptions } from './device-run-options';
import { NodeInfoSource } from './node-info-source';
import { PassLoop } from './pass-loop';
import { adoptUnlabelledPersistentVolumes, upstreamDeviceNode } from '../kube/adoption';
import type { KubeApi } from '../kube/api-client';
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import { NodePvCache } from '../kube/pv-cache';
import { Reflector } from '../kube/reflector';
import { fromWire } from '../kube/wire';
import { startAgent } from '../lifecycle/agent';
import { stopping, together } from '../lifecycle/runners';
import { EventReasons, Logger } from '../observability';
import { reportAdoptedVolumes } from '../static/adoption-events';
import { cleanupParts } from '../static/cleanup-parts';
import { DeviceController } from '../static/device-controller';
import { needsPassNow } from '../static/pv-stewardship';
import { reclaimModeOf } from '../static/reclaim-mode';
import { DEVICE_DIALECT_NODE_LABELS } from '../well-known';

/** Upstream's PVs on this node, labelled as ours; they carry its node label in one spelling or the other (older releases: .com). */
async function adoptUpstreamVolumes(api: KubeApi, logger: Logger, nodeName: string): Promise<string[]> {
  const adopted: string[] = [];
  for (const label of DEVICE_DIALECT_NODE_LABELS) {
    const criterion = upstreamDeviceNode(nodeName, label);
    const adoption = await adoptUnlabelledPersistentVolumes(api, { nodeName, criterion, logger });
    logger.info({ label, examined: adoption.examined, adopted: adoption.adopted.length }, 'adoption pass done');
    adopted.push(...adoption.adopted);
  }
  return adopted;
}

/** The namespace's ConfigMaps, where the PV spec lives. */
function configMapsOf(api: KubeApi, namespace: string, logger: Logger): Reflector<V1ConfigMap> {
  return new Reflector<V1ConfigMap>(api, {
    resource: 'configmaps',
    watchPath: `/api/v1/namespaces/${namespace}/configmaps`,
    list: (page, callOptions) => api.listConfigMaps(namespace, page, callOptions),
    fromWire: (raw) => fromWire<V1ConfigMap>(raw, 'V1ConfigMap'),
    logger,
  });
}

/** This one Node, watched for the annotation naming the spec, which may be set or changed at any time. */
function thisNode(api: KubeApi, nodeName: string, logger: Logger): Reflector<V1Node> {
  return new Reflector<V1Node>(api, {
    resource: 'nodes',
    watchPath: `/api/v1/nodes?fieldSelector=${encodeURIComponent(`metadata.name=${nodeName}`)}`,
    list: async () => {
      const node = await api.getNode(nodeName);
      return { items: node ? [node] : [], metadata: { resourceVersion: node?.metadata?.resourceVersion } };
    },
    fromWire: (raw) => fromWire<V1Node>(raw, 'V1Node'),
    logger,
  });
}

export async function runDeviceProvisioner(options: DeviceRunOptions): Promise<void> {
  const agent = await startAgent({ ...options, stuckAfterMs: Math.max(3 * options.pollingIntervalMs, 60_000) });
  const { api, logger, metrics, health, runners } = agent;
  const { nodeName, namespace } = options;
  // The device gauges exist from the start, so a dashboard never sees them absent.
  metrics.setDevices(nodeName, { available: 0, error: 0, held: 0 });

  // Waits for the Node to exist; the pass re-reads it for its annotation.
  await new NodeInfoSource(api, nodeName, logger).get();
  const { mode, warning } = await reclaimModeOf(api, logger);
  const adopted = await adoptUpstreamVolumes(api, logger, nodeName);

  const cache = new NodePvCache(api, { nodeName, logger });
  const configMaps = configMapsOf(api, namespace, logger);
  const nodes = thisNode(api, nodeName, logger);
  await runners.start('PV, ConfigMap and Node caches', together(cache, configMaps, nodes));
  health.whileUnready(() => cache.staleReason());

  const events = new EventRecorder(agent.eventsApi, { nodeName, logger });
  reportAdoptedVolumes(events, cache, adopted, nodeName);
  if (warning) events.warning(nodeReference(nodeName), EventReasons.PermissionMissing.reason, warning);
  await runners.start('claim guard check', new ClaimGuardCheck({
    api, events, metrics, logger, nodeName, name: options.claimGuard, boundPv: () => boundPv(cache.list()),
  }));
  const limiter = new ConcurrencyLimiter(PROVISIONER_DEFAULTS.maxConcurrentCleanups);
  const { table, keeper, deleter } = cleanupParts(agent, {
    nodeName,
    mode,
    stateDir: options.stateDir,
    events,
    limiter,
    timeoutMs: PROVISIONER_DEFAULTS.cleanupTimeout,
    stallTimeoutMs: PROVISIONER_DEFAULTS.cleanupStallTimeout,
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
    namespace,
    defaultPvSpecConfigMap: options.defaultPvSpecConfigMap,
    configMap: (name) => configMaps.get(`${namespace}/${name}`),
  });
  const devices = new DirectoryWatcher();
  const passes = new PassLoop({
    periodMs: options.pollingIntervalMs,
    table,
    health,
    logger,
    metrics,
    pass: async (underLocks) => {
      // The annotation may change at any time: read the Node on every pass.
      const node = await api.getNode(nodeName);
      if (!node) throw new Error(`Node "${nodeName}" no longer exists`);
      await underLocks(controller.directories(node), async () => {
        const result = await controller.pass(node);
        if (result.state === 'provisioned') devices.refresh(await directoriesUnder(result.spec.deviceDir));
      });
    },
  });

  // What starts a pass before the period: a new device link or mount, a ConfigMap edit (the spec applies at once;
  // upstream waits for its 5-minute poll), a new or changed spec annotation, a PV bound, Released or deleted.
  devices.onChange(() => passes.trigger());
  configMaps.onChange(() => passes.trigger());
  const specAnnotation = (node?: V1Node) => node?.metadata?.annotations?.[PV_SPEC_CONFIGMAP_ANNOTATION];
  nodes.onChange(({ object, previous }) => {
    if (specAnnotation(object) !== specAnnotation(previous)) passes.trigger();
  });
  cache.onChange((change) => {
    if (needsPassNow(change)) passes.trigger();
  });

  await runners.start('passes', passes);
  await runners.start('device directory watches', stopping(() => devices.close()));
  const mounts = new MountTableWatcher(() => passes.trigger());
  await runners.start('mount table watch', stopping(() => mounts.close()));

  await agent.runUntilStopped();
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
