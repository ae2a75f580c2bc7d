/**
 * `local-volume-provisioner run`: the directory dialect's node agent, wired
 * together. The configuration is read first, so a broken ConfigMap is reported
 * before anything touches the cluster; then the PVs of older provisioners on
 * this node are adopted, the node's PV cache syncs, and passes run on the
 * period and on every change seen in a discovery directory, the mount table or
 * this node's PVs.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { ConfigMapData, formatIssue, ParseResult, parseProvisionerConfigToRun, ProvisionerConfig, readConfigMapDirectory } from '../../config';
import { CleanupProcessTable, ConcurrencyLimiter } from '../cleanup';
import { mountTableReader } from '../discovery';
import { reportAdoptedVolumes } from './adoption-events';
import { adoptUnlabelledPersistentVolumes, provisionedBy } from '../kube/adoption';
import { isForbidden } from '../kube/errors';
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import { removeNodeTaint } from '../kube/node-taint';
import { NodePvCache } from '../kube/pv-cache';
import { StorageClassCache } from '../kube/storage-class-cache';
import { EventReasons } from '../observability';
import { provisionerName } from '../pv';
import { StartupError } from '../startup-error';
import { optimizeHeapForSize, startAgent } from './agent';
import { DirectoryWatcher, MountTableWatcher } from './change-watchers';
import { ConfigReloader } from './config-reloader';
import { Deleter } from './deleter';
import { DirectoryController } from './directory-controller';
import type { DirectoryRunOptions } from './directory-run-options';
import { NodeInfoSource } from './node-info-source';
import { openRecordKeeper } from './open-record';
import { PassScheduler } from './pass-scheduler';
import { needsPassNow } from './pv-stewardship';
import { reclaimModeOf, WithoutPatch, withoutPatchWarning } from './reclaim-mode';
import { claimVolumesOfEarlierNode, isOfEarlierNodeIncarnation } from './recreated-node';
import { VolumeLocks } from './volume-locks';

/** What the directory agent does, beyond the finalizer, where it may not patch PVs. */
const WITHOUT_PATCH: WithoutPatch = {
  instead: 'this node\'s PVs are found as the Go provisioner finds them, by watching every PV in the cluster and keeping those '
    + 'with its provisioned-by annotation (its PVs cannot be given the node label a node-scoped watch selects on), '
    + 'and PVs of an earlier Node with this name are left alone as it leaves them',
  gains: 'a watch of this node\'s PVs only, and the PVs of an earlier Node with this name recycled as its own',
};

/** A configuration that asks for cleanup Jobs needs their image (JOB_CONTAINER_IMAGE), at start and on every edit. */
export function requireJobImage(result: ParseResult<ProvisionerConfig>, jobContainerImage: string): ParseResult<ProvisionerConfig> {
  if (!result.ok || !result.config.useJobForCleaning || jobContainerImage) return result;
  return {
    ok: false,
    warnings: result.warnings,
    errors: [{ path: 'useJobForCleaning', message: 'is on, so cleanup Jobs need an image: set JOB_CONTAINER_IMAGE (or --job-container-image) on the agent' }],
  };
}

export async function runDirectoryProvisioner(options: DirectoryRunOptions): Promise<void> {
  const source = { describe: `provisioner ConfigMap in ${options.configDir}`, read: () => readConfigMapDirectory(options.configDir) };
  let data;
  try {
    data = source.read();
  } catch (e) {
    throw new StartupError(`${source.describe} cannot be read (${(e as Error).message}); mount the provisioner ConfigMap there or pass --config-dir`);
  }
  // What this agent can run, checked for the first configuration and every edit alike.
  const parse = (d: ConfigMapData) => requireJobImage(parseProvisionerConfigToRun(d), options.jobContainerImage);
  const first = parse(data);
  if (!first.ok) {
    throw new StartupError(`${source.describe} is invalid:\n  ${first.errors.map(formatIssue).join('\n  ')}`);
  }

  const agent = await startAgent({ ...options, stuckAfterMs: Math.max(3 * options.discoveryPeriodMs, 60_000) });
  const { api, logger, metrics, health } = agent;

  const nodes = new NodeInfoSource(api, options.nodeName, logger);
  const node = await nodes.get();
  await nodes.start();
  const reclaim = await reclaimModeOf(api, logger, WITHOUT_PATCH);
  let { mode } = reclaim;
  let modeWarning = reclaim.warning;
  const ourName = provisionerName(node.name, node.uid, first.config.useNodeNameOnly);
  const ours = provisionedBy(ourName);
  // This node's PVs that may lack our label: the Go provisioner's, and those of an earlier Node of this name.
  const unlabelled = (pv: V1PersistentVolume) => ours.matches(pv) || isOfEarlierNodeIncarnation(pv, node, ourName);
  let adopted: string[] = [];
  if (mode === 'finalizer') {
    try {
      const adoption = await adoptUnlabelledPersistentVolumes(api, { nodeName: node.name, criterion: { matches: unlabelled }, logger });
      logger.info({ examined: adoption.examined, adopted: adoption.adopted.length }, 'adoption pass done');
      adopted = adoption.adopted;
    } catch (err) {
      // Allowed by the access review, refused by the server (an admission webhook, RBAC changed since).
      if (!isForbidden(err)) throw err;
      mode = 'legacy';
      modeWarning = withoutPatchWarning(`labelling this node's older PVs was refused (${(err as Error).message})`, WITHOUT_PATCH);
      logger.warn(modeWarning);
    }
  }

  // Without patch, older PVs cannot be labelled: every PV is watched and this node's kept by annotation, as upstream.
  // minResyncPeriod, upstream's informer resync, is here how long each watch of the PVs lasts before it is renewed
  // (random in [min, 2×min), as client-go spreads them); read at start, as upstream reads it.
  const minWatchSeconds = Math.max(1, Math.round(first.config.minResyncPeriod / 1000));
  const cache = new NodePvCache(api, { nodeName: node.name, logger, minWatchSeconds, ...(mode === 'legacy' ? { unlabelled } : {}) });
  const storageClasses = new StorageClassCache(api, { logger });
  await Promise.all([cache.start(), storageClasses.start()]);
  health.whileUnready(() => cache.staleReason());
  // A Node recreated under this name: its earlier incarnation's PVs become ours, so none is orphaned.
  if (mode === 'finalizer') await claimVolumesOfEarlierNode(api, cache.list(), node, ourName, logger);
  const events = new EventRecorder(agent.eventsApi, { nodeName: node.name, logger });
  reportAdoptedVolumes(events, cache, adopted, node.name);
  if (modeWarning) events.warning(nodeReference(node.name), EventReasons.PermissionMissing.reason, modeWarning);
  const table = new CleanupProcessTable({
    limiter: new ConcurrencyLimiter(first.config.maxConcurrentCleanups),
    timeoutMs: first.config.cleanupTimeout,
  });
  const keeper = openRecordKeeper(options.stateDir, { events, metrics, logger, nodeName: node.name });
  const deleter = new Deleter({ api, table, events, metrics, logger, mode, stallTimeoutMs: first.config.cleanupStallTimeout, record: keeper.record });
  const controller = new DirectoryController({
    api,
    mode,
    cache,
    storageClasses,
    events,
    metrics,
    logger,
    deleter,
    keeper,
    readMountTable: mountTableReader(),
    namespace: options.namespace,
    jobContainerImage: options.jobContainerImage,
  });

  let taintRemoved = false;
  const reloader: ConfigReloader<ProvisionerConfig> = new ConfigReloader(source, parse, {
    onApply: ({ config, warnings, skippedClasses = [] }) => {
      metrics.recordConfigReload(true);
      for (const w of warnings) logger.warn({ key: w.path }, formatIssue(w));
      metrics.setSkippedStorageClasses(skippedClasses.map((c) => c.name));
      for (const skipped of skippedClasses) {
        const message = `storageClassMap.${skipped.name} is left out: ${skipped.errors.map(formatIssue).join('; ')}; the other classes run`;
        logger.error({ storageClass: skipped.name }, message);
        events.warning(nodeReference(node.name), EventReasons.StorageClassSkipped.reason, message);
      }
      directories.refresh(Object.values(config.storageClassMap).map((c) => c.mountDir));
      scheduler.trigger();
    },
    onReject: (message) => {
      metrics.recordConfigReload(false);
      logger.error(message);
      events.warning(nodeReference(node.name), EventReasons.ConfigInvalid.reason, message);
    },
  });
  const locks = new VolumeLocks({ logger, metrics, retry: () => scheduler.trigger() });
  const scheduler = new PassScheduler(async () => {
    const config = reloader.current!;
    const classDirs = Object.values(config.storageClassMap).map((c) => c.mountDir);
    await locks.run(classDirs, async () => {
      await controller.pass(config, await nodes.get());
    });
    optimizeHeapForSize();
    health.markLoopAlive();
    // Ready while another agent acts, so a rollout goes on and that agent stops.
    health.markReady();
    if (config.removeNodeNotReadyTaint && config.provisionerNotReadyNodeTaintKey && !taintRemoved) {
      const outcome = await removeNodeTaint(api, node.name, config.provisionerNotReadyNodeTaintKey);
      taintRemoved = true;
      logger.info({ taint: config.provisionerNotReadyNodeTaintKey, outcome }, 'startup taint handled');
    }
  }, { periodMs: options.discoveryPeriodMs, onError: (e) => logger.error({ err: e }, 'pass failed; retried on the next trigger or period') });

  const directories = new DirectoryWatcher(() => scheduler.trigger());
  const mounts = new MountTableWatcher(() => scheduler.trigger(), { logger });
  // A StorageClass created or changed: its volumes are offered now, not on the next period.
  storageClasses.onChange(() => scheduler.trigger());
  // A discovery directory missing at start, or made anew, is watched once it is there; a pass then reads it.
  const rewatch = setInterval(() => {
    const dirs = Object.values(reloader.current?.storageClassMap ?? {}).map((c) => c.mountDir);
    if (directories.refresh(dirs).length > 0) scheduler.trigger();
  }, options.configSyncPeriodMs);
  rewatch.unref();
  // A PV bound, Released or deleted is acted on now, and one let go after cleaning is offered again now.
  cache.onChange((change) => {
    if (needsPassNow(change)) scheduler.trigger();
  });
  reloader.reload();
  reloader.start(options.configSyncPeriodMs);
  scheduler.start();

  const signal = await agent.stopped;
  logger.info({ signal }, 'stopping');
  reloader.stop();
  clearInterval(rewatch);
  directories.close();
  mounts.close();
  table.abortAll();
  await scheduler.stop();
  await table.idle();
  locks.releaseAll();
  await Promise.all([cache.stop(), storageClasses.stop(), nodes.stop()]);
  await agent.close();
}
