/**
 * One pass over this node's pool classes (run by the directory agent's pass loop,
 * under the locks of the pool directories):
 * 1. each pool directory is made ready (btrfs, quotas on) or reported unusable;
 * 2. each claim the scheduler put on this node gets its volume, limited to its size,
 *    and a PV bound to it; one that no longer fits is given back to the scheduler;
 * 3. each pool PV whose claim is gone (policy Delete), or that is being deleted, has
 *    its volume destroyed (or, for Retain, kept) before the PV goes;
 * 4. each bound pool volume whose claim asks for more is resized (its limit raised,
 *    then the PV's and the claim's capacity), or refused when the pool cannot hold it;
 * 5. each class's capacity object says what the pool can still give.
 * Every step is repeatable: a pass interrupted anywhere is finished by the next.
 */
import type { V1CSIStorageCapacity, V1ObjectReference, V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import type { PoolBackend, PoolState, PublishableVolume } from './backend';
import { poolBackend } from './backends';
import { NodeLvmProbe } from './node-lvm-confinement';
import {
  ClaimDataSource, ClaimDecision, decideClaims, decideExpansions, decideRelease, Expansion, PoolClassConfig, poolClassesOf, poolVolumeHostPath,
  poolVolumeOf,
  SELECTED_NODE_ANNOTATION, SourceVerdict, strayKeeping, volumesWithoutPv,
} from './pool-decisions';
import { PoolRecord } from './pool-record';
import { availableBytes, buildStorageCapacity, wholeMiB } from './storage-capacity';
import type { ClassConfig } from '../../config';
import { ConcurrencyLimiter } from '../cleanup/limiter';
import type { KubeApi } from '../kube/api-client';
import { isAlreadyExists, isConflict, isForbidden } from '../kube/errors';
import { EventRecorder, nodeReference, persistentVolumeClaimReference, persistentVolumeReference } from '../kube/event-recorder';
import { deletePersistentVolumeIfUnchanged, ensurePersistentVolume, removeCleanupFinalizer } from '../kube/pv-writes';
import { EventReasons, Logger, PoolOperation, ProvisionerMetrics } from '../observability';
import { buildPoolPV, type NodeInfo, storageClassFields } from '../pv';
import { formatBinaryQuantity, parseQuantity } from '../volume';
import { NODE_LABEL, POOL_VOLUME_ANNOTATION } from '../well-known';

const MiB = 1024 * 1024;
/**
 * Claims provisioned at once in a pass: enough to keep a pool's one volume being made busy while
 * the volumes before it are recorded and get their PVs, few enough that the record's lock is not
 * queued for by hundreds.
 */
const PROVISIONS_AT_ONCE = 4;


/** The claim conditions of a resize in progress or failed (core/v1 PersistentVolumeClaimConditionType), none left once it is done. */
const RESIZE_CONDITIONS: ReadonlySet<string> = new Set(['Resizing', 'FileSystemResizePending', 'ControllerResizeError', 'NodeResizeError']);

export interface PoolControllerDeps {
  readonly api: KubeApi;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly metrics: ProvisionerMetrics;
  /** Where the capacity objects live (the agent's namespace). */
  readonly namespace: string;
  /** The claims the scheduler put on this node (pool-claims.ts); none while they cannot be read. */
  readonly claims: () => readonly V1PersistentVolumeClaim[];
  readonly pvs: () => readonly V1PersistentVolume[];
  readonly storageClass: (name: string) => Promise<V1StorageClass | undefined>;
  /** The pools' lines in the node's volume record. */
  readonly record: PoolRecord;
  /** How often the volumes of xfs and ext4 pool classes are walked (project-scan.ts). @default SCAN_PERIOD_MS */
  readonly projectScanPeriodMs?: number;
  /** New volumes get CSI PVs of the agent's node plugin (it serves kubelet), not local PVs. @default false */
  readonly csiVolumes?: boolean;
  /**
   * Reads a claim's data source (a snapshot or claim to fill its volume from); undefined where
   * volumes are not filled from one (no node plugin: a snapshot is taken only of a CSI volume).
   */
  readonly sourceOf?: (claim: V1PersistentVolumeClaim, source: ClaimDataSource) => Promise<SourceVerdict>;
}

/** A usable pool, as the snapshotter works on it. */
export interface UsablePool {
  readonly backend: PoolBackend;
  readonly pool: PoolClassConfig;
}

/** A pool class's storage as this pass found it. */
interface PoolRun {
  readonly className: string;
  readonly pool: PoolClassConfig;
  readonly backend: PoolBackend;
  /** Its state when it can give volumes whose limits hold; undefined while it cannot (said once, on the Node). */
  readonly state?: PoolState;
  /** What a new volume may still have; taken down as this pass promises space. */
  available: number;
  /** The pool's backend makes one volume at a time (a backend's create is never called while another of the same pool runs). */
  readonly making: ConcurrencyLimiter;
}

export class PoolController {
  /** Capacity objects this agent published, by name, as last written. */
  private readonly published = new Map<string, V1CSIStorageCapacity>();
  /** Whether the capacity objects an earlier run left have been read (once, at the first publish). */
  private adopted = false;
  /** Resizes refused, by claim UID, with the message, so each refusal is said once. */
  private readonly refusedResizes = new Map<string, string>();
  /** Stray volumes kept, said once each. */
  private readonly keptStrays = new Set<string>();
  /** How many stray volumes each class keeps, as the last pass that could tell found them. */
  private readonly straysKept = new Map<string, number>();
  /** The pools as the last pass found them; undefined before the first pass. */
  private lastRuns?: ReadonlyMap<string, PoolRun>;
  /** Pools reported unusable, with the message, so each problem is said once. */
  private readonly unusable = new Map<string, string>();
  /** Each class's backend, for as long as its directory and backend stay the same. */
  private readonly backends = new Map<string, { readonly key: string; readonly backend: PoolBackend }>();
  /** Each usable class's watch of its storage (PoolBackend.watch), with the backend it watches. */
  private readonly watches = new Map<string, { readonly backend: PoolBackend; readonly handle: { close(): void } }>();
  /** Told when a pool's storage changes in a way a pass must see now (a thin pool filling up). */
  private readonly storageListeners: Array<() => void> = [];
  /** The node's one probe of its LVM, shared by its lvm-thin classes. */
  private readonly nodeLvm = new NodeLvmProbe();
  /** Classes whose Block claims are refused, with the reason said once on the Node. */
  private readonly blockRefusals = new Map<string, string>();
  /** Claims waiting for their data source, with the reason, so each wait is said once. */
  private readonly waiting = new Map<string, string>();

  constructor(private readonly deps: PoolControllerDeps) {}

  async pass(storageClassMap: Readonly<Record<string, ClassConfig>>, node: NodeInfo): Promise<void> {
    const pools = poolClassesOf(storageClassMap);
    const runs = new Map<string, PoolRun>();
    const configured = new Set(Object.keys(pools));
    for (const [className, pool] of Object.entries(pools)) runs.set(className, await this.open(className, pool, node, configured));
    const pvs = this.deps.pvs();
    // Each volume's line says what its PV says of its data now, before anything is done to it.
    await this.deps.record.follow(pvs.flatMap((pv) => {
      const volume = poolVolumeOf(pv, node.name, pools);
      return volume ? [{ volumeId: volume.volumeId, className: volume.className, hostPath: poolVolumeHostPath(volume.pool, volume.name), pv }] : [];
    }));
    await this.deps.record.releaseStorage(new Set(Object.keys(pools)));
    this.reportEscapes(runs, pvs);
    // Each volume on its own: one that cannot be destroyed or resized never stops the others, nor new claims.
    for (const pv of pvs) await this.release(pv, node, pools, runs);
    for (const pv of pvs) await this.restoreLimit(pv, node, pools, runs);
    const claims = this.deps.claims();
    const byKey = new Map(claims.map((c) => [`${c.metadata?.namespace}/${c.metadata?.name}`, c]));
    for (const expansion of decideExpansions(pvs, (namespace, name) => byKey.get(`${namespace}/${name}`), node.name, pools)) {
      await this.expand(expansion, runs);
    }
    const pvNames = new Set(pvs.map((pv) => pv.metadata?.name ?? ''));
    for (const run of runs.values()) this.straysKept.set(run.className, await this.removeStrays(run, pvNames, node));
    // Claims side by side, so that one volume's record lines and PV are written while the next is made; each pool still
    // makes one volume at a time (PoolRun.making), and the space each is promised is taken before any await.
    const provisions = new ConcurrencyLimiter(PROVISIONS_AT_ONCE);
    await Promise.all(decideClaims(claims, pvNames, node.name, pools).map((decision) => provisions.run(() => this.provision(decision, runs, node))));
    await this.publish(node, runs);
    this.report(runs);
    this.watch(runs);
    this.lastRuns = runs;
  }

  /** Whether a pass has read the pools since the agent started. */
  get passed(): boolean {
    return this.lastRuns !== undefined;
  }

  /**
   * The volume of that identity, for the node service: named by its line in the record, with
   * its use as the last pass read it. To be mounted (`toMount`), only while its class's pool has
   * it under that name (its identity read there now); only read of (its use, once a minute per
   * volume), the last pass's look at the pool finding it by identity is enough, and no command
   * runs.
   */
  async publishable(volumeId: string, toMount: boolean): Promise<PublishableVolume | undefined> {
    const line = this.deps.record.line(volumeId);
    const run = line?.pvName ? this.lastRuns?.get(line.storageClass) : undefined;
    if (!line?.pvName || !run?.state) return undefined;
    const seen = run.state.volumes.get(volumeId);
    if ((toMount || !seen) && await run.backend.identityAt(line.pvName) !== volumeId) return undefined;
    const { fsType, mountOptions } = run.backend;
    // Made since that pass read the pool: read now (a directory volume's size is its limit, never its filesystem's).
    const usage = seen ?? (await run.backend.inspect()).volumes.get(volumeId);
    return { ...run.backend.pathOf(line.pvName), fsType, mountOptions, usage };
  }

  /**
   * Runs `work` on the class's pool as the last pass found it usable, as one of the pool's
   * operations (one at a time: PoolRun.making); undefined when the pool is not usable. Called
   * between passes' pool work (the passes' locks are held by the caller).
   */
  async withPool<T>(className: string, work: (pool: UsablePool) => Promise<T>): Promise<T | undefined> {
    const run = this.lastRuns?.get(className);
    if (!run?.state) return undefined;
    return run.making.run(() => work({ backend: run.backend, pool: run.pool }));
  }

  onStorageChange(listener: () => void): void {
    this.storageListeners.push(listener);
  }

  /** Stops watching every class's storage. */
  close(): void {
    for (const { handle } of this.watches.values()) handle.close();
    this.watches.clear();
  }

  /** Each usable class's storage watched (a class gone, unusable or with a new backend, no longer). */
  private watch(runs: ReadonlyMap<string, PoolRun>): void {
    for (const [className, watched] of this.watches) {
      if (runs.get(className)?.state && runs.get(className)?.backend === watched.backend) continue;
      watched.handle.close();
      this.watches.delete(className);
    }
    for (const run of runs.values()) {
      if (!run.state || this.watches.has(run.className)) continue;
      const handle = run.backend.watch?.(() => {
        this.deps.logger.info({ storageClass: run.className }, 'pool storage changed: passing now');
        for (const listener of this.storageListeners) listener();
      });
      if (handle) this.watches.set(run.className, { backend: run.backend, handle });
    }
  }

  /** The pools' metrics: whether each can be used and what it can still give, and each of its volumes' use and limit. */
  private report(runs: ReadonlyMap<string, PoolRun>): void {
    const pvOf = new Map(this.deps.pvs().map((pv) => [pv.metadata?.annotations?.[POOL_VOLUME_ANNOTATION] ?? '', pv]));
    const volumes = [...runs.values()].flatMap((run) => [...run.state?.volumes ?? []].flatMap(([identity, u]) => {
      const pv = pvOf.get(identity);
      return pv?.spec?.storageClassName === run.className
        ? [{ persistentVolume: pv.metadata!.name!, storageClass: run.className, usedBytes: u.usedBytes, limitBytes: u.limitBytes }]
        : [];
    }));
    const pools = [...runs.values()].map((r) => ({
      storageClass: r.className,
      availableBytes: r.state ? r.available : undefined,
      fill: r.state?.fill,
      strayVolumesKept: this.straysKept.get(r.className),
      blockVolumesRefused: r.state && r.backend.fsType !== undefined ? r.state.blockRefused !== undefined : undefined,
    }));
    this.deps.metrics.setPools(pools, volumes);
  }

  /** The pool ready for use, with what it can still give; without a state (said once) when it cannot be used. */
  private async open(className: string, pool: PoolClassConfig, node: NodeInfo, configured: ReadonlySet<string>): Promise<PoolRun> {
    const backend = this.backendOf(className, pool);
    try {
      // Claimed before the backend changes anything on it (quotas turned on); given up again if it cannot be used.
      const claimed = await this.deps.record.claimStorage(className, await backend.storage(), pool.hostDir, configured);
      if (!claimed.ok) throw new Error(claimed.reason);
      const state = await backend.open().catch(async (err: unknown) => {
        await this.deps.record.releaseUnusedStorage(className);
        throw err;
      });
      if (this.unusable.delete(className)) this.deps.logger.info({ storageClass: className }, 'pool usable again');
      this.reportBlockRefusal(className, pool, state, node);
      // Every volume on the storage counts: pools on one filesystem share its free space.
      const available = availableBytes(state.freeBytes, state.volumes, (id) => this.pvSizes().get(id));
      return { className, pool, backend, state, available, making: new ConcurrencyLimiter(1) };
    } catch (err) {
      const message = `pool ${pool.mountDir} of class "${className}": ${(err as Error).message}`;
      if (this.unusable.get(className) !== message) {
        this.deps.logger.error({ storageClass: className }, message);
        this.deps.events.warning(nodeReference(node.name), EventReasons.PoolUnusable.reason, message);
      }
      this.unusable.set(className, message);
      return { className, pool, backend, available: 0, making: new ConcurrencyLimiter(1) };
    }
  }

  /** Each pool PV's size, by its volume's identity: what its volume was promised. */
  private pvSizes(): Map<string, number> {
    return new Map(this.deps.pvs().flatMap((pv) => {
      const identity = pv.metadata?.annotations?.[POOL_VOLUME_ANNOTATION];
      const size = parseQuantity(pv.spec?.capacity?.storage);
      return identity && size !== undefined ? [[identity, Math.ceil(size)] as const] : [];
    }));
  }

  /** A class that stops giving Block volumes says why on the Node, once; one that gives them again says so in its log. */
  private reportBlockRefusal(className: string, pool: PoolClassConfig, state: PoolState, node: NodeInfo): void {
    const reason = state.blockRefused;
    if (reason === undefined) {
      if (this.blockRefusals.delete(className)) this.deps.logger.info({ storageClass: className }, 'pool gives Block volumes again');
      return;
    }
    if (this.blockRefusals.get(className) === reason) return;
    this.blockRefusals.set(className, reason);
    const message = `pool ${pool.hostDir} of class "${className}" gives no Block volume on this node: ${reason}`;
    this.deps.logger.warn({ storageClass: className }, message);
    this.deps.events.warning(nodeReference(node.name), EventReasons.PoolBlockVolumesRefused.reason, message);
  }

  private backendOf(className: string, pool: PoolClassConfig): PoolBackend {
    const key = `${pool.pool}\u0000${pool.mountDir}`;
    const known = this.backends.get(className);
    if (known?.key === key) return known.backend;
    const backend = poolBackend(pool, {
      recorded: () => this.deps.record.volumeIds(className),
      claimed: () => this.deps.record.storageOf(className),
      nodeLvm: this.nodeLvm,
      logger: this.deps.logger.child({ storageClass: className }),
      projectScanPeriodMs: this.deps.projectScanPeriodMs,
    });
    this.backends.set(className, { key, backend });
    return backend;
  }

  /** Each limit escape the backends undid, said on its volume's PV and counted. */
  private reportEscapes(runs: ReadonlyMap<string, PoolRun>, pvs: readonly V1PersistentVolume[]): void {
    for (const run of runs.values()) {
      for (const escape of run.state?.escapes ?? []) {
        this.deps.metrics.recordPoolLimitEscape(run.className);
        const pv = pvs.find((p) => p.metadata?.annotations?.[POOL_VOLUME_ANNOTATION] === escape.volume);
        this.deps.logger.warn({ storageClass: run.className, pv: pv?.metadata?.name, volume: escape.volume }, escape.what);
        if (pv) this.deps.events.warning(persistentVolumeReference(pv), EventReasons.PoolVolumeLimitEscaped.reason, escape.what);
      }
    }
  }

  /**
   * Runs one volume's operation; a failure is said on its claim or PV, counted, and tried
   * again next pass, and the pass goes on with the other volumes.
   */
  private async attempt(run: PoolRun, operation: PoolOperation, subject: V1ObjectReference, what: string, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (err) {
      const message = `${what}: ${(err as Error).message}; tried again next pass`;
      this.deps.metrics.recordPoolFailure(run.className, operation);
      this.deps.logger.error({ storageClass: run.className, operation }, message);
      this.deps.events.warning(subject, EventReasons.PoolVolumeFailed.reason, message);
    }
  }

  private async provision(decision: ClaimDecision, runs: Map<string, PoolRun>, node: NodeInfo): Promise<void> {
    const { claim } = decision;
    const ref = persistentVolumeClaimReference(claim);
    if (decision.action === 'refuse') {
      this.deps.events.warning(ref, EventReasons.PoolClaimRefused.reason, decision.reason);
      return;
    }
    const run = runs.get(decision.className);
    if (!run?.state) return; // unusable here: said on the Node
    if (decision.volumeMode === 'Block' && run.state.blockRefused) {
      this.deps.events.warning(ref, EventReasons.PoolClaimRefused.reason, `no Block volume is given on node "${node.name}": ${run.state.blockRefused}`);
      return;
    }
    const fields = storageClassFields(decision.className, await this.deps.storageClass(decision.className));
    if (!fields.ok) {
      this.deps.events.warning(ref, EventReasons.PoolClaimRefused.reason, fields.message);
      return;
    }
    if (decision.sizeBytes > run.available) {
      await this.giveBack(claim, `pool ${run.pool.mountDir} of class "${decision.className}" on node "${node.name}" has `
        + `${formatBinaryQuantity(wholeMiB(run.available))} left, the claim asks ${claim.spec?.resources?.requests?.storage}; given back to the scheduler`);
      return;
    }
    const from = decision.source && await this.sourceFor(decision, run);
    if (from === null) return;
    const hostPath = poolVolumeHostPath(run.pool, decision.name);
    // The space is promised before the volume is made: a failure part way leaves it promised until the next pass reads the pool again.
    run.available -= decision.sizeBytes;
    await this.attempt(run, 'create', ref, `making ${hostPath} for the claim`, async () => {
      const log = this.deps.logger.child({ claim: `${claim.metadata?.namespace}/${claim.metadata?.name}`, pv: decision.name });
      // Recorded first, naming the claim: killed at any step from here, the volume is found by it (removeStrays).
      await this.deps.record.making({
        className: decision.className, name: decision.name, hostPath, claim: `${claim.metadata?.namespace}/${claim.metadata?.name}`, claimUid: claim.metadata?.uid ?? '',
      });
      const volumeId = await run.making.run(() => run.backend.create(decision.name, decision.sizeBytes, decision.volumeMode, from?.from));
      await this.deps.record.made({
        volumeId,
        className: decision.className,
        hostPath,
        pvName: decision.name,
        claim: `${claim.metadata?.namespace}/${claim.metadata?.name}`,
        claimUid: claim.metadata?.uid ?? '',
        reclaimPolicy: fields.reclaimPolicy,
        volumeMode: decision.volumeMode,
      });
      const pv = buildPoolPV({
        name: decision.name,
        volumeId,
        claim,
        className: decision.className,
        hostPath,
        selector: run.pool.selector,
        node,
        // A device's filesystem is mounted with the backend's options (discard) unless the StorageClass names its own.
        storageClass: fields.mountOptions.length > 0 || decision.volumeMode === 'Block' ? fields : { ...fields, mountOptions: run.backend.mountOptions ?? [] },
        volumeMode: decision.volumeMode,
        fsType: run.backend.fsType,
        csi: this.deps.csiVolumes,
      });
      // Ours already (a create whose answer was lost, or made before a restart as the other kind of PV): the same volume, same claim.
      const pools = { [decision.className]: run.pool };
      await ensurePersistentVolume(this.deps.api, pv, (existing, wanted) => poolVolumeOf(existing, node.name, pools)?.volumeId === volumeId
        && existing.spec?.claimRef?.uid === wanted.spec?.claimRef?.uid);
      log.info({ path: hostPath, volumeId, limitBytes: decision.sizeBytes }, 'pool volume made for the claim');
      this.deps.events.normal(ref, EventReasons.PoolVolumeProvisioned.reason,
        `made ${hostPath} (limit ${claim.spec?.resources?.requests?.storage})${from ? ` from ${from.what}` : ''} on node "${node.name}"; PV ${decision.name}`);
    });
  }

  /**
   * The snapshot or volume a claim's volume is made from, when it can be here now; null
   * when it cannot (the claim refused, waiting, or given back to the scheduler: its data
   * is on another node, said with that node's name). Only a volume of the claim's own
   * class, as large as its source at least, of the source's volume mode (a Block volume's
   * bytes are never mounted as a filesystem, nor the reverse); a device volume (LVM) made
   * from one has its source's size (it is grown by expanding its claim afterwards).
   */
  private async sourceFor(decision: Extract<ClaimDecision, { action: 'provision' }>, run: PoolRun)
    : Promise<Extract<SourceVerdict, { verdict: 'ready' }> | null> {
    const { claim } = decision;
    const ref = persistentVolumeClaimReference(claim);
    const uid = claim.metadata?.uid ?? '';
    const refuse = (reason: string) => {
      this.deps.events.warning(ref, EventReasons.PoolClaimRefused.reason, reason);
      return null;
    };
    if (!this.deps.sourceOf) return refuse('a pool class fills a volume from a snapshot or claim only where the agent serves its CSI node plugin (poolVolumesAsCsi)');
    const refused = run.backend.snapshotsRefused();
    if (refused) return refuse(refused);
    const source = await this.deps.sourceOf(claim, decision.source!);
    if (source.verdict === 'wait') {
      if (this.waiting.get(uid) !== source.reason) this.deps.events.normal(ref, EventReasons.PoolClaimWaiting.reason, source.reason);
      this.waiting.set(uid, source.reason);
      return null;
    }
    this.waiting.delete(uid);
    if (source.verdict === 'refuse') return refuse(source.reason);
    if (source.verdict === 'elsewhere') {
      await this.giveBack(claim, `${source.reason}; given back to the scheduler: pin the pod to node "${source.node}"`, EventReasons.PoolClaimSourceElsewhere.reason);
      return null;
    }
    if (source.className !== decision.className) return refuse(`${source.what} is of class "${source.className}"; a volume is made from it only in its own class`);
    if (source.volumeMode !== decision.volumeMode) return refuse(`${source.what} is a ${source.volumeMode} volume's; the claim asks ${decision.volumeMode}`);
    if (decision.sizeBytes < source.sizeBytes) {
      return refuse(`${source.what} holds ${formatBinaryQuantity(source.sizeBytes)}; the claim asks ${claim.spec?.resources?.requests?.storage}`);
    }
    if (run.backend.fsType !== undefined && decision.sizeBytes !== source.sizeBytes) {
      return refuse(`a volume of class "${decision.className}" made from ${source.what} has its size, ${formatBinaryQuantity(source.sizeBytes)}: ask that, `
        + 'and expand the claim once it is bound');
    }
    return source;
  }

  /**
   * A resize, in the order a crash can repeat: the limit raised first (what the tenant
   * can write), then the PV's capacity, then the claim's status as a resizer writes it.
   * A directory's quota needs nothing more: capacity and allocatedResources the new
   * size, no resize condition left. A device's filesystem is grown by kubelet where it is
   * mounted (the local volume plugin's node expansion): the claim is marked for it
   * (NodeResizePending, FileSystemResizePending), and kubelet sets its capacity once the
   * filesystem has grown. Growth the pool cannot hold is refused.
   */
  private async expand(e: Expansion, runs: Map<string, PoolRun>): Promise<void> {
    const run = runs.get(e.className);
    if (!run?.state) return;
    const ref = persistentVolumeClaimReference(e.claim);
    const growth = e.bytes - e.fromBytes;
    if (growth > run.available) {
      const message = `pool ${run.pool.mountDir} of class "${e.className}" has ${formatBinaryQuantity(wholeMiB(run.available))} left; `
        + `growing ${e.pv.metadata?.name} from ${e.pv.spec?.capacity?.storage} to ${e.quantity} needs ${formatBinaryQuantity(Math.ceil(growth / MiB) * MiB)}`;
      if (this.refusedResizes.get(e.claim.metadata?.uid ?? '') !== message) this.deps.events.warning(ref, EventReasons.PoolExpansionRefused.reason, message);
      this.refusedResizes.set(e.claim.metadata?.uid ?? '', message);
      return;
    }
    this.refusedResizes.delete(e.claim.metadata?.uid ?? '');
    run.available -= growth;
    const pvName = e.pv.metadata!.name!;
    await this.attempt(run, 'resize', ref, `growing ${pvName} to ${e.quantity}`, async () => {
      if (!await run.backend.resize(e.volumeId, e.bytes)) return;
      try {
        await this.deps.api.patchPersistentVolumeCapacity(pvName, e.pv.metadata!.resourceVersion!, e.quantity);
        // A merge patch replaces the whole list: the others' conditions (e.g. the controller manager's Unused) are
        // written back as read, under the resourceVersion precondition, without the resize ones.
        const conditions = e.claim.status?.conditions ?? [];
        const kept = conditions.filter((c) => !RESIZE_CONDITIONS.has(c.type));
        const { namespace, name, resourceVersion } = e.claim.metadata!;
        const onNode = run.backend.fsType !== undefined && e.pv.spec?.volumeMode !== 'Block';
        await this.deps.api.patchPersistentVolumeClaimStatus(namespace!, name!, resourceVersion!, onNode ? {
          allocatedResources: { storage: e.quantity },
          allocatedResourceStatuses: { storage: 'NodeResizePending' },
          conditions: [...kept, {
            type: 'FileSystemResizePending',
            status: 'True',
            lastTransitionTime: new Date(),
            message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.',
          }],
        } : {
          capacity: { storage: e.quantity },
          allocatedResources: { storage: e.quantity },
          allocatedResourceStatuses: null,
          ...(kept.length < conditions.length ? { conditions: kept } : {}),
        });
      } catch (err) {
        // Changed meanwhile: the next pass reads both again and finishes the resize.
        if (isConflict(err)) return;
        throw err;
      }
      this.deps.logger.info({ pv: pvName, from: e.pv.spec?.capacity?.storage, to: e.quantity }, 'pool volume resized');
      this.deps.events.normal(ref, EventReasons.PoolVolumeExpanded.reason, `${pvName} grown from ${e.pv.spec?.capacity?.storage} to ${e.quantity}`);
    });
  }

  /**
   * A volume that holds a tenant's data and has no limit, or less than its PV says (its
   * pool's quotas turned off and on again, an administrator's change), gets its PV's
   * size back as its limit. A limit above it (a resize between its two steps) stays.
   */
  private async restoreLimit(pv: V1PersistentVolume, node: NodeInfo, pools: Readonly<Record<string, PoolClassConfig>>,
    runs: Map<string, PoolRun>): Promise<void> {
    const volume = poolVolumeOf(pv, node.name, pools);
    const run = volume && runs.get(volume.className);
    const usage = run?.state?.volumes.get(volume!.volumeId);
    const size = Math.ceil(parseQuantity(pv.spec?.capacity?.storage) ?? 0);
    if (!run?.state || !usage || pv.metadata?.deletionTimestamp || size <= 0 || (usage.limitBytes ?? 0) >= size) return;
    const at = poolVolumeHostPath(run.pool, volume!.name);
    await this.attempt(run, 'resize', persistentVolumeReference(pv), `limiting ${at} to its PV's ${pv.spec?.capacity?.storage} again`, async () => {
      await run.backend.resize(volume!.volumeId, size);
      this.deps.logger.warn({ pv: pv.metadata?.name, path: at, was: usage.limitBytes ?? 'none', limitBytes: size }, 'pool volume limited to its PV\'s size again');
      // This pass reports the limit it gave, not the one it read before.
      const volumes = new Map(run.state!.volumes).set(volume!.volumeId, { ...usage, limitBytes: size });
      runs.set(run.className, { ...run, state: { ...run.state!, volumes } });
    });
  }

  /**
   * Volumes with no PV. Each is a stray only once the server says the claim its record
   * line names is gone (a GET: 404, or a claim of another UID under that name), never
   * because a copy of the claims lacks it; while the claim is there, its volume is being
   * made, and the next provisioning finishes it. A volume no line names a claim of (an
   * administrator's, or left by an agent older than the line written before a volume is
   * made) is kept and said: whose it is cannot be shown. A stray made under its making
   * line only (its claim gone before its own line and its PV) follows its class's policy:
   * Delete destroys it, by identity, its space given back. One with its own line is never
   * destroyed on the line's word alone: its PV may have gone while no agent could act on it
   * (deleted with its finalizer stripped, after an administrator set Retain the record
   * never saw), so it is kept, and said, until an administrator's `volumes reclaim`.
   * Returns how many this class keeps.
   */
  private async removeStrays(run: PoolRun, pvNames: ReadonlySet<string>, node: NodeInfo): Promise<number> {
    if (!run.state) return 0;
    const names = await run.backend.names();
    await this.dropUnmade(run, names);
    const candidates = volumesWithoutPv(names, pvNames);
    if (candidates.length === 0) return 0;
    const fields = storageClassFields(run.className, await this.deps.storageClass(run.className));
    let kept = 0;
    for (const name of candidates) {
      const at = poolVolumeHostPath(run.pool, name);
      await this.attempt(run, 'destroy', nodeReference(node.name), `destroying stray ${at}`, async () => {
        const volumeId = await run.backend.identityAt(name);
        if (volumeId === undefined) return;
        const line = this.deps.record.line(volumeId);
        const making = this.deps.record.makingLine(run.className, name);
        const madeFor = line ?? making;
        if (!madeFor?.claim || madeFor.claimUid === undefined) {
          kept++;
          this.keptOnce(node, at, EventReasons.PoolVolumeStrayKept.reason, `${at} has no PV, and no record names the claim it was made for (made by hand, or left `
            + 'by an older agent killed while making it), so whose it is cannot be shown; it is kept: remove it by hand once you know its data is not wanted');
          return;
        }
        if (await this.claimAlive(madeFor.claim, madeFor.claimUid)) return; // its claim is there: being made, not a stray
        const keep = strayKeeping(line, fields.ok ? fields.reclaimPolicy : undefined);
        if (keep) {
          kept++;
          const whose = keep === 'pv-gone-unseen'
            ? `its PV ${line?.pvName ?? ''} went while no agent could act on it (deleted with its finalizer stripped), so its data is held, not destroyed on the record's word`
            : keep === 'retained' ? `its PV's reclaim policy was ${line?.reclaimPolicy}`
              : `StorageClass "${run.className}" keeps volumes (${fields.ok ? fields.reclaimPolicy : fields.message})`;
          this.keptOnce(node, at, keep === 'pv-gone-unseen' ? EventReasons.PoolVolumeHeld.reason : EventReasons.PoolVolumeStrayKept.reason,
            `${at} has no PV and its claim ${madeFor.claim} is gone, and ${whose}; it stays until "local-volume-provisioner volumes reclaim ${at}" (in the agent's pod)`);
          return;
        }
        if (await this.inUse(run, name, at, nodeReference(node.name))) return;
        await run.backend.destroy(volumeId);
        await this.deps.record.destroyed(volumeId);
        await this.deps.record.notMaking(run.className, name);
        this.keptStrays.delete(at);
        this.deps.logger.info({ path: at, volumeId }, 'stray pool volume destroyed');
        this.deps.events.normal(nodeReference(node.name), EventReasons.PoolVolumeStrayDestroyed.reason,
          `${at} had no PV and its claim ${madeFor.claim} is gone; destroyed ${line?.admin === 'reclaim' ? 'as an administrator said' : 'under the policy Delete'}, `
          + 'its space given back');
      });
    }
    return kept;
  }

  /** A kept stray said on the Node, once. */
  private keptOnce(node: NodeInfo, at: string, reason: string, message: string): void {
    if (this.keptStrays.has(at)) return;
    this.deps.events.warning(nodeReference(node.name), reason, message);
    this.keptStrays.add(at);
  }

  /** Lines of volumes that were about to be made and never were: dropped once their claim is gone (while it is there, it gets its volume). */
  private async dropUnmade(run: PoolRun, names: readonly string[]): Promise<void> {
    for (const line of this.deps.record.makingLines(run.className)) {
      const name = line.pvName ?? '';
      if (names.includes(name) || !line.claim || line.claimUid === undefined) continue;
      if (!await this.claimAlive(line.claim, line.claimUid).catch(() => true)) await this.deps.record.notMaking(run.className, name);
    }
  }

  /**
   * Whether the claim (`namespace/name`) of this UID still exists, asked of the server; a
   * read that fails throws (the volume is decided on a later pass, never on a guess).
   */
  private async claimAlive(claim: string, uid: string): Promise<boolean> {
    const [namespace, name] = claim.split('/');
    return (await this.deps.api.getPersistentVolumeClaim(namespace, name))?.metadata?.uid === uid;
  }

  /** Whether something still uses the volume (said, once per pass, on `subject`): it is destroyed once nothing does. */
  private async inUse(run: PoolRun, name: string, at: string, subject: V1ObjectReference): Promise<boolean> {
    const users = await run.backend.users(name);
    if (users.length === 0) return false;
    this.deps.events.warning(subject, EventReasons.VolumeInUse.reason, `"${at}" is still in use: ${users.join('; ')}; it is destroyed once nothing uses it`);
    return true;
  }

  /**
   * The scheduler's choice undone, as external provisioners undo it: without the
   * selected-node annotation the scheduler chooses again, with fresher capacity. Only
   * the claim as judged is changed (its resourceVersion is the precondition).
   */
  private async giveBack(claim: V1PersistentVolumeClaim, message: string, reason: string = EventReasons.PoolClaimRescheduled.reason): Promise<void> {
    const { namespace, name, resourceVersion } = claim.metadata!;
    try {
      await this.deps.api.patchPersistentVolumeClaimAnnotations(namespace!, name!, resourceVersion!, { [SELECTED_NODE_ANNOTATION]: null });
      this.deps.events.warning(persistentVolumeClaimReference(claim), reason, message);
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }

  private async release(pv: V1PersistentVolume, node: NodeInfo, pools: Readonly<Record<string, PoolClassConfig>>,
    runs: ReadonlyMap<string, PoolRun>): Promise<void> {
    const volume = poolVolumeOf(pv, node.name, pools);
    const run = volume && runs.get(volume.className);
    if (!volume || !run) return;
    let action = decideRelease(pv);
    if (action === 'none') return;
    const { name, uid, resourceVersion } = pv.metadata!;
    const ref = persistentVolumeReference(pv);
    const at = poolVolumeHostPath(volume.pool, volume.name);
    if (action === 'retire') {
      // Deleted as it was read: a PV bound meanwhile (its resourceVersion moved) is decided again next pass.
      if (await deletePersistentVolumeIfUnchanged(this.deps.api, name!, uid!, resourceVersion) !== 'deleted') return;
      if (pv.status?.phase === 'Available') {
        this.deps.events.warning(ref, EventReasons.VolumeWithdrawn.reason, `PV ${name} of pool volume ${at} is Available (its claimRef was cleared); `
          + 'the PV is deleted so that no other claim binds it, and its volume is destroyed or kept by its reclaim policy');
      }
      // Being deleted now, with our finalizer: no claim can bind it any more.
      action = pv.spec?.persistentVolumeReclaimPolicy === 'Retain' ? 'keep-then-let-go' : 'destroy-then-let-go';
    }
    if (action === 'keep-then-let-go') {
      const policy = pv.spec?.persistentVolumeReclaimPolicy ?? '';
      // Its line says so before the PV goes: without a PV, only the line keeps the volume from being taken for a stray.
      await this.deps.record.kept(volume.volumeId, policy, `kept: PV ${name} was deleted with reclaimPolicy ${policy}`);
      this.deps.events.warning(ref, EventReasons.PoolVolumeKept.reason, `PV deleted with reclaimPolicy ${policy}: ${at} stays; `
        + `remove it with "local-volume-provisioner volumes reclaim ${at}" (in the agent's pod) when its data is no longer wanted`);
      await removeCleanupFinalizer(this.deps.api, name!, uid!);
      return;
    }
    // The PV is being deleted and held by our finalizer: a crash from here on leaves it so, and the next pass ends the work.
    await this.attempt(run, 'destroy', ref, `destroying ${at}`, async () => {
      if (await this.inUse(run, volume.name, at, ref)) return;
      await run.backend.destroy(volume.volumeId);
      await this.deps.record.destroyed(volume.volumeId);
      this.deps.logger.info({ pv: name, path: at }, 'pool volume destroyed');
      await removeCleanupFinalizer(this.deps.api, name!, uid!);
      this.deps.events.normal(ref, EventReasons.PoolVolumeDeleted.reason, `destroyed ${at} and its limit; the PV goes`);
    });
  }

  /**
   * Each usable pool's capacity object written when it changed; every other capacity object
   * of this node's pool classes deleted: of a class gone or unusable now, and, at the first
   * publish, those an earlier run left (read by the node's label), so that no node is
   * offered to the scheduler for space it cannot give.
   */
  private async publish(node: NodeInfo, runs: ReadonlyMap<string, PoolRun>): Promise<void> {
    const wanted = new Map<string, V1CSIStorageCapacity>();
    for (const { className, available, state } of runs.values()) {
      if (!state) continue;
      const object = buildStorageCapacity(this.deps.namespace, node, className, wholeMiB(available));
      wanted.set(object.metadata!.name!, object);
    }
    if (!this.adopted) {
      try {
        const left = await this.deps.api.listStorageCapacities(this.deps.namespace, { labelSelector: `${NODE_LABEL}=${node.name}` });
        for (const object of left.items) this.published.set(object.metadata!.name!, object);
      } catch (err) {
        if (!isForbidden(err)) throw err;
        this.deps.logger.warn({}, 'may not list csistoragecapacities: a capacity object an earlier run left for a class gone or unusable now stays; grant list (the construct does)');
      }
      this.adopted = true;
    }
    for (const [name, object] of wanted) {
      const last = this.published.get(name);
      if (last && last.capacity === object.capacity) continue;
      this.published.set(name, await this.write(object));
    }
    for (const name of [...this.published.keys()].filter((n) => !wanted.has(n))) {
      await this.deps.api.deleteStorageCapacity(this.deps.namespace, name);
      this.published.delete(name);
    }
  }

  private async write(object: V1CSIStorageCapacity): Promise<V1CSIStorageCapacity> {
    const name = object.metadata!.name!;
    const existing = await this.deps.api.getStorageCapacity(this.deps.namespace, name);
    if (!existing) {
      try {
        return await this.deps.api.createStorageCapacity(this.deps.namespace, object);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        return this.write(object);
      }
    }
    const metadata = { ...object.metadata, resourceVersion: existing.metadata?.resourceVersion };
    return this.deps.api.replaceStorageCapacity(this.deps.namespace, { ...object, metadata });
  }
}
