/**
 * `local-volume-provisioner run`: the directory dialect's node agent, wired
 * together. The configuration is read first, so a broken ConfigMap is reported
 * before anything touches the cluster; then the PVs of older provisioners on
 * this node are adopted, the node's PV cache syncs, and passes run on the
 * period and on every change seen in a discovery directory, the mount table or
 * this node's PVs.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { ConfigMapData, formatIssue, ParseResult, parseProvisionerConfigToRun, POOL_PROVISIONER, ProvisionerConfig, readConfigMapDirectory } from '../../config';
import { ConcurrencyLimiter, ReclaimMode } from '../cleanup';
import { mountTableReader } from '../discovery';
import { DirectoryWatcher, MountTableWatcher } from './change-watchers';
import { boundPv, ClaimGuardCheck } from './claim-guard-check';
import { AppliedConfig, ConfigReloader } from './config-reloader';
import type { DirectoryRunOptions } from './directory-run-options';
import { NodeInfoSource } from './node-info-source';
import { PassLoop } from './pass-loop';
import { adoptUnlabelledPersistentVolumes, provisionedBy } from '../kube/adoption';
import type { KubeApi } from '../kube/api-client';
import { isForbidden } from '../kube/errors';
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import { removeNodeTaint } from '../kube/node-taint';
import { NodePvCache } from '../kube/pv-cache';
import { StorageClassCache } from '../kube/storage-class-cache';
import { Agent, packageVersion, startAgent } from '../lifecycle/agent';
import { OnDemand, stopping, together } from '../lifecycle/runners';
import { EventReasons, Logger } from '../observability';
import { ClaimBackfill } from '../pool/claim-backfill';
import { PoolClaims } from '../pool/pool-claims';
import { PoolController } from '../pool/pool-controller';
import { claimConcernsNode, discoveredClassesOf, poolClassesOf, reboundPoolVolumes } from '../pool/pool-decisions';
import { PoolRecord } from '../pool/pool-record';
import { nodeHostname, provisionerName } from '../pv';
import { claimSource } from '../snapshots/claim-source';
import { ContentWatch } from '../snapshots/content-watch';
import { Snapshotter } from '../snapshots/snapshotter';
import { StartupError } from '../startup-error';
import { reportAdoptedVolumes } from '../static/adoption-events';
import { cleanupParts } from '../static/cleanup-parts';
import { DirectoryController } from '../static/directory-controller';
import { needsPassNow } from '../static/pv-stewardship';
import { reclaimModeOf, WithoutPatch, withoutPatchWarning } from '../static/reclaim-mode';
import { claimVolumesOfEarlierNode, isOfEarlierNodeIncarnation } from '../static/recreated-node';
import { parseQuantity } from '../volume';
import { HOSTNAME_LABEL, POOL_VOLUME_ANNOTATION } from '../well-known';

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

/** Reads the first configuration; a broken one stops the agent before it touches the cluster. */
function readFirstConfig(options: DirectoryRunOptions) {
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
  return { source, parse, first: first.config };
}

/**
 * This node's older PVs (the Go provisioner's, and an earlier Node's of this name)
 * labelled as ours when the agent may patch PVs. A refusal by the server (an
 * admission webhook, RBAC changed since the access review) puts the agent in
 * the legacy mode, with its warning.
 */
async function adoptOlderVolumes(api: KubeApi, logger: Logger, nodeName: string, unlabelled: (pv: V1PersistentVolume) => boolean) {
  const reclaim = await reclaimModeOf(api, logger, WITHOUT_PATCH);
  if (reclaim.mode !== 'finalizer') return { ...reclaim, adopted: [] };
  try {
    const adoption = await adoptUnlabelledPersistentVolumes(api, { nodeName, criterion: { matches: unlabelled }, logger });
    logger.info({ examined: adoption.examined, adopted: adoption.adopted.length }, 'adoption pass done');
    return { ...reclaim, adopted: adoption.adopted };
  } catch (err) {
    if (!isForbidden(err)) throw err;
    const warning = withoutPatchWarning(`labelling this node's older PVs was refused (${(err as Error).message})`, WITHOUT_PATCH);
    logger.warn(warning);
    return { mode: 'legacy' as ReclaimMode, warning, adopted: [] };
  }
}

/** An applied configuration reported: its warnings, and the classes left out of it (a metric, a log line and an Event each). */
function reportApplied(agent: Agent, events: EventRecorder, nodeName: string, applied: AppliedConfig<ProvisionerConfig>): void {
  const { warnings, skippedClasses = [] } = applied;
  const { logger, metrics } = agent;
  metrics.recordConfigReload(true);
  for (const w of warnings) logger.warn({ key: w.path }, formatIssue(w));
  metrics.setSkippedStorageClasses(skippedClasses.map((c) => c.name));
  for (const skipped of skippedClasses) {
    const message = `storageClassMap.${skipped.name} is left out: ${skipped.errors.map(formatIssue).join('; ')}; the other classes run`;
    logger.error({ storageClass: skipped.name }, message);
    events.warning(nodeReference(nodeName), EventReasons.StorageClassSkipped.reason, message);
  }
}

/** The node's startup taint, removed after a pass once the configuration asks for it (upstream's removeNodeNotReadyTaint). */
class StartupTaint {
  private removed = false;

  constructor(private readonly api: KubeApi, private readonly nodeName: string, private readonly logger: Logger) {}

  async removeIfAsked(config: ProvisionerConfig): Promise<void> {
    const key = config.provisionerNotReadyNodeTaintKey;
    if (this.removed || !config.removeNodeNotReadyTaint || !key) return;
    const outcome = await removeNodeTaint(this.api, this.nodeName, key);
    this.removed = true;
    this.logger.info({ taint: key, outcome }, 'startup taint handled');
  }
}

export async function runDirectoryProvisioner(options: DirectoryRunOptions): Promise<void> {
  const { source, parse, first } = readFirstConfig(options);
  const agent = await startAgent({ ...options, stuckAfterMs: Math.max(3 * options.discoveryPeriodMs, 60_000) });
  const { api, logger, metrics, health, runners } = agent;

  const nodes = new NodeInfoSource(api, options.nodeName, logger);
  const node = await nodes.get();
  await runners.start('node', nodes);
  const events = new EventRecorder(agent.eventsApi, { nodeName: node.name, logger });
  // Pool classes' claims are watched once a pool class is configured: the watch costs requests, and RBAC a Helm chart lacks.
  const claims = new PoolClaims({ api, events, metrics, logger, nodeName: node.name, routing: options.claimRouting });
  const poolClassNames = () => Object.keys(poolClassesOf(reloader.current?.storageClassMap ?? {}));
  const backfill = new ClaimBackfill({ api, logger, namespace: options.namespace, identity: node.name, poolClasses: poolClassNames });
  claims.onVerdict((verdict) => backfill.routing(verdict.active));
  const claimWatch = new OnDemand(runners, 'claim watch', claims);
  // The claims made before the routing: labelled by one agent at a time, only where the routing is known, from after
  // this agent's first pass (the Lease holder lists every claim of the cluster: never in the way of its own start).
  const claimBackfill = new OnDemand(runners, 'claim backfill', backfill);
  // No pass waits for the claims' list: its cost is the apiserver's, and grows with the cluster's claims even when only
  // this node's are selected. Until it is listed, pool classes provision and resize nothing (the claims are unknown, never
  // taken for none); each claim listed starts a pass. Configured at start, it is listed beside the rest of the start.
  const watchClaims = () => claimWatch.ensure().catch((err: unknown) => {
    logger.warn({ err: (err as Error).message }, 'the claims of pool classes cannot be watched; tried again next pass');
  });
  if (Object.keys(poolClassesOf(first.storageClassMap)).length > 0) void watchClaims();
  const ourName = provisionerName(node.name, node.uid, first.useNodeNameOnly);
  const ours = provisionedBy(ourName);
  // This node's PVs that may lack our label: the Go provisioner's, and those of an earlier Node of this name.
  const unlabelled = (pv: V1PersistentVolume) => ours.matches(pv) || isOfEarlierNodeIncarnation(pv, node, ourName);
  const { mode, warning, adopted } = await adoptOlderVolumes(api, logger, node.name, unlabelled);

  // Without patch, older PVs cannot be labelled: every PV is watched and this node's kept by annotation, as upstream.
  // minResyncPeriod, upstream's informer resync, is here how long each watch of the PVs lasts before it is renewed
  // (random in [min, 2×min), as client-go spreads them); read at start, as upstream reads it.
  const minWatchSeconds = Math.max(1, Math.round(first.minResyncPeriod / 1000));
  const cache = new NodePvCache(api, { nodeName: node.name, logger, minWatchSeconds, ...(mode === 'legacy' ? { unlabelled } : {}) });
  const storageClasses = new StorageClassCache(api, { logger });
  await runners.start('PV and StorageClass caches', together(cache, storageClasses));
  health.whileUnready(() => cache.staleReason());
  // A Node recreated under this name: its earlier incarnation's PVs become ours, so none is orphaned.
  if (mode === 'finalizer') await claimVolumesOfEarlierNode(api, cache.list(), node, ourName, logger);
  reportAdoptedVolumes(events, cache, adopted, node.name);
  if (warning) events.warning(nodeReference(node.name), EventReasons.PermissionMissing.reason, warning);
  await runners.start('claim guard check', new ClaimGuardCheck({
    api, events, metrics, logger, nodeName: node.name, name: options.claimGuard, boundPv: () => boundPv(cache.list()),
  }));

  const { table, keeper, deleter, rebound } = cleanupParts(agent, {
    nodeName: node.name,
    mode,
    stateDir: options.stateDir,
    events,
    limiter: new ConcurrencyLimiter(first.maxConcurrentCleanups),
    timeoutMs: first.cleanupTimeout,
    stallTimeoutMs: first.cleanupStallTimeout,
  });
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
  // Snapshots are taken, and volumes filled from snapshots and claims, of CSI volumes only: where the node plugin is served.
  const snapshotting = options.kubeletDir !== '';
  const poolRecord = new PoolRecord(keeper.record);
  const currentPools = () => poolClassesOf(reloader.current?.storageClassMap ?? {});
  const pools = new PoolController({
    api,
    events,
    logger,
    metrics,
    namespace: options.namespace,
    // A copy that may be stale (the watch forbidden) provisions and resizes nothing.
    claims: () => (claims.usable() ? claims.list() : []),
    pvs: () => cache.list(),
    storageClass: (name) => storageClasses.get(name),
    record: poolRecord,
    projectScanPeriodMs: options.projectScanPeriodMs,
    csiVolumes: snapshotting,
    ...snapshotting ? { sourceOf: claimSource({ api, nodeName: node.name, record: poolRecord, pvs: () => cache.list(), pools: currentPools }) } : {},
  });
  const contents = new ContentWatch(api, node.name, logger);
  const snapshotter = new Snapshotter({
    api,
    events,
    logger,
    nodeName: node.name,
    contents: () => contents.list(),
    contentsKnown: () => contents.usable(),
    record: poolRecord,
    pools,
    volumeSize: (volumeId) => {
      const pv = cache.list().find((p) => p.metadata?.annotations?.[POOL_VOLUME_ANNOTATION] === volumeId);
      return parseQuantity(pv?.spec?.capacity?.storage);
    },
  });
  const reloader = new ConfigReloader(source, parse, options.configSyncPeriodMs);
  const taint = new StartupTaint(api, node.name, logger);
  const classDirectories = () => Object.values(reloader.current?.storageClassMap ?? {}).map((c) => c.mountDir);
  const passes = new PassLoop({
    periodMs: options.discoveryPeriodMs,
    table,
    health,
    logger,
    metrics,
    pass: async (underLocks) => {
      const config = reloader.current!;
      const havePools = Object.keys(poolClassesOf(config.storageClassMap)).length > 0;
      if (havePools) void watchClaims();
      await underLocks(classDirectories(), async () => {
        const info = await nodes.get();
        await controller.pass({ ...config, storageClassMap: discoveredClassesOf(config.storageClassMap) }, info);
        if (havePools) await pools.pass(config.storageClassMap, info);
        if (havePools && snapshotting) await snapshotter.pass();
        if (havePools && options.claimRouting !== '') await claimBackfill.ensure();
        rebound.report('pool', reboundPoolVolumes(cache.list(), info.name, poolClassesOf(config.storageClassMap)));
      });
      await taint.removeIfAsked(config);
    },
  });

  // What starts a pass before the period: a new configuration, a change in a class directory or the mount table,
  // a StorageClass created or changed (its volumes are offered now), a pool's storage changing (a thin pool filling up),
  // a PV bound, Released, deleted or let go after cleaning.
  const directories = new DirectoryWatcher();
  directories.onChange(() => passes.trigger());
  reloader.onApply((applied) => {
    reportApplied(agent, events, node.name, applied);
    directories.refresh(classDirectories());
    passes.trigger();
  });
  reloader.onReject((message) => {
    metrics.recordConfigReload(false);
    logger.error(message);
    events.warning(nodeReference(node.name), EventReasons.ConfigInvalid.reason, message);
  });
  storageClasses.onChange(() => passes.trigger());
  pools.onStorageChange(() => passes.trigger());
  // A claim the scheduler puts on a node is provisioned now.
  claims.onChange(({ object }) => {
    if (claimConcernsNode(object, node.name, (name) => cache.get(name) !== undefined)) passes.trigger();
  });
  cache.onChange((change) => {
    if (needsPassNow(change)) passes.trigger();
  });
  // A content to take or delete is acted on now.
  contents.onChange(() => passes.trigger());

  // The configuration is read before the first pass; the watchers stop before the passes do.
  await runners.start('configuration', reloader);
  await runners.start('passes', passes);
  if (options.kubeletDir) {
    // kubelet's node plugin for the pool classes' CSI volumes: each found by its identity in the record and its pool, as
    // the passes last read it; stopped before the passes (kubelet lets the plugin go first). Loaded only here: gRPC and
    // the protos cost an agent that serves no plugin ~6 MiB.
    const { NodePlugin } = require('../csi/node-plugin') as typeof import('../csi/node-plugin'); // eslint-disable-line @typescript-eslint/no-require-imports
    const { VolumesNotKnownYet } = require('../csi/node-service') as typeof import('../csi/node-service'); // eslint-disable-line @typescript-eslint/no-require-imports
    await runners.start('CSI node plugin', new NodePlugin({
      driverName: POOL_PROVISIONER,
      version: packageVersion(),
      kubeletDir: options.kubeletDir,
      nodeId: node.name,
      topology: { [HOSTNAME_LABEL]: nodeHostname(node) },
      ready: () => health.readiness().ok,
      // Asked before the first pass (kubelet publishes every pod's volume again as soon as the agent registers after a reboot).
      volume: async (volumeId, toMount) => {
        if (!pools.passed) throw new VolumesNotKnownYet('the agent has not read its pools yet since it started; try again');
        return pools.publishable(volumeId, toMount);
      },
      logger,
    }));
  }
  if (snapshotting) await runners.start('snapshot content watch', contents);
  await runners.start('pool storage watches', stopping(() => pools.close()));
  await runners.start('directory watches', stopping(() => directories.close()));
  const mounts = new MountTableWatcher(() => passes.trigger(), { logger });
  await runners.start('mount table watch', stopping(() => mounts.close()));
  // A class directory missing at start, or made anew, is watched once it is there; a pass then reads it.
  const rewatch = setInterval(() => {
    if (directories.refresh(classDirectories()).length > 0) passes.trigger();
  }, options.configSyncPeriodMs);
  rewatch.unref();
  await runners.start('class directory rewatch', stopping(() => clearInterval(rewatch)));

  await agent.runUntilStopped();
}
