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
import type { V1CSIStorageCapacity, V1PersistentVolume, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import type { ClassConfig } from '../../config';
import type { KubeApi } from '../kube/api-client';
import { isAlreadyExists, isConflict } from '../kube/errors';
import { EventRecorder, nodeReference, persistentVolumeClaimReference, persistentVolumeReference } from '../kube/event-recorder';
import { deletePersistentVolumeIfUnchanged, ensurePersistentVolume, removeCleanupFinalizer } from '../kube/pv-writes';
import { EventReasons, Logger, ProvisionerMetrics } from '../observability';
import { buildPoolPV, type NodeInfo, storageClassFields } from '../pv';
import { formatBinaryQuantity } from '../volume';
import {
  createVolume, deleteVolume, limitVolume, poolEntries, poolFreeBytes, poolUsage, PoolVolumeUsage, preparePool, volumeIdentity,
} from './btrfs';
import {
  ClaimDecision, decideClaims, decideExpansions, decideRelease, Expansion, PoolClassConfig, poolClassesOf, poolVolumeHostPath, poolVolumeOf,
  SELECTED_NODE_ANNOTATION, strayVolumes,
} from './pool-decisions';
import { availableBytes, buildStorageCapacity, wholeMiB } from './storage-capacity';

const MiB = 1024 * 1024;


/** The claim conditions of a resize in progress or failed (core/v1 PersistentVolumeClaimConditionType), none left once it is done. */
const RESIZE_CONDITIONS: ReadonlySet<string> = new Set(['Resizing', 'FileSystemResizePending', 'ControllerResizeError', 'NodeResizeError']);

export interface PoolControllerDeps {
  readonly api: KubeApi;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly metrics: ProvisionerMetrics;
  /** Where the capacity objects live (the agent's namespace). */
  readonly namespace: string;
  readonly claims: () => readonly V1PersistentVolumeClaim[];
  /** Whether `claims` holds every claim of the cluster now (listed, and watched since). */
  readonly claimsComplete: () => boolean;
  readonly pvs: () => readonly V1PersistentVolume[];
  readonly storageClass: (name: string) => Promise<V1StorageClass | undefined>;
}

/** A pool this pass can use: its free space and its volumes' usage, as read at the start of the pass. */
interface PoolState {
  readonly className: string;
  readonly pool: PoolClassConfig;
  available: number;
  /** Each volume of the pool's filesystem, by name (its PV's), from its qgroup. */
  readonly usage: ReadonlyMap<string, PoolVolumeUsage>;
}

export class PoolController {
  /** Capacity objects this agent published, by name, as last written. */
  private readonly published = new Map<string, V1CSIStorageCapacity>();
  /** Resizes refused, by claim UID, with the message, so each refusal is said once. */
  private readonly refusedResizes = new Map<string, string>();
  /** Stray volumes kept by a Retain class, said once each. */
  private readonly keptStrays = new Set<string>();
  /** Pools reported unusable, with the message, so each problem is said once. */
  private readonly unusable = new Map<string, string>();

  constructor(private readonly deps: PoolControllerDeps) {}

  async pass(storageClassMap: Readonly<Record<string, ClassConfig>>, node: NodeInfo): Promise<void> {
    const pools = poolClassesOf(storageClassMap);
    const states = new Map<string, PoolState>();
    for (const [className, pool] of Object.entries(pools)) {
      const state = await this.open(className, pool, node);
      if (state) states.set(className, state);
    }
    const pvs = this.deps.pvs();
    for (const pv of pvs) await this.release(pv, node, pools);
    const claims = this.deps.claims();
    const byKey = new Map(claims.map((c) => [`${c.metadata?.namespace}/${c.metadata?.name}`, c]));
    for (const expansion of decideExpansions(pvs, (namespace, name) => byKey.get(`${namespace}/${name}`), node.name, pools)) {
      await this.expand(expansion, states);
    }
    const pvNames = new Set(pvs.map((pv) => pv.metadata?.name ?? ''));
    // Only with every claim known: a volume whose claim is merely unseen is never a stray.
    if (this.deps.claimsComplete()) {
      const claimUids = new Set(claims.map((c) => c.metadata?.uid ?? ''));
      for (const state of states.values()) await this.removeStrays(state, pvNames, claimUids, node);
    }
    for (const decision of decideClaims(claims, pvNames, node.name, pools)) {
      await this.provision(decision, states, node);
    }
    await this.publish(node, states);
    this.report(states);
  }

  /** The pools' metrics: what each can still give, and each of its volumes' use and limit (with the PVs this pass made). */
  private report(states: ReadonlyMap<string, PoolState>): void {
    const classOf = new Map(this.deps.pvs().map((pv) => [pv.metadata?.name ?? '', pv.spec?.storageClassName ?? '']));
    const volumes = [...states.values()].flatMap((state) => [...state.usage]
      .filter(([name]) => classOf.get(name) === state.className)
      .map(([name, u]) => ({ persistentVolume: name, storageClass: state.className, usedBytes: u.usedBytes, limitBytes: u.limitBytes })));
    this.deps.metrics.setPools([...states.values()].map((s) => ({ storageClass: s.className, availableBytes: s.available })), volumes);
  }

  /** The pool ready for use, with what it can still give; undefined (said once) when it cannot be used. */
  private async open(className: string, pool: PoolClassConfig, node: NodeInfo): Promise<PoolState | undefined> {
    try {
      await preparePool(pool.mountDir);
      // Every pool volume on the filesystem counts: pools on one filesystem share its free space.
      const usage = await poolUsage(pool.mountDir);
      if (this.unusable.delete(className)) this.deps.logger.info({ storageClass: className }, 'pool usable again');
      return { className, pool, usage, available: availableBytes(poolFreeBytes(pool.mountDir), usage.values()) };
    } catch (err) {
      const message = `pool ${pool.mountDir} of class "${className}": ${(err as Error).message}`;
      if (this.unusable.get(className) !== message) {
        this.deps.logger.error({ storageClass: className }, message);
        this.deps.events.warning(nodeReference(node.name), EventReasons.PoolUnusable.reason, message);
      }
      this.unusable.set(className, message);
      return undefined;
    }
  }

  private async provision(decision: ClaimDecision, states: Map<string, PoolState>, node: NodeInfo): Promise<void> {
    const { claim } = decision;
    const ref = persistentVolumeClaimReference(claim);
    if (decision.action === 'refuse') {
      this.deps.events.warning(ref, EventReasons.PoolClaimRefused.reason, decision.reason);
      return;
    }
    const state = states.get(decision.className);
    if (!state) return; // unusable here: said on the Node
    const fields = storageClassFields(decision.className, await this.deps.storageClass(decision.className));
    if (!fields.ok) {
      this.deps.events.warning(ref, EventReasons.PoolClaimRefused.reason, fields.message);
      return;
    }
    if (decision.sizeBytes > state.available) {
      await this.giveBack(claim, `pool ${state.pool.mountDir} of class "${decision.className}" on node "${node.name}" has `
        + `${formatBinaryQuantity(wholeMiB(state.available))} left, the claim asks ${claim.spec?.resources?.requests?.storage}; given back to the scheduler`);
      return;
    }
    const log = this.deps.logger.child({ claim: `${claim.metadata?.namespace}/${claim.metadata?.name}`, pv: decision.name });
    const volumeId = await createVolume(state.pool.mountDir, decision.name, decision.sizeBytes);
    state.available -= decision.sizeBytes;
    const hostPath = poolVolumeHostPath(state.pool, decision.name);
    const pv = buildPoolPV({
      name: decision.name, volumeId, claim, className: decision.className, hostPath, selector: state.pool.selector, node, storageClass: fields,
    });
    await ensurePersistentVolume(this.deps.api, pv, (existing, wanted) => existing.spec?.local?.path === wanted.spec?.local?.path
      && existing.spec?.claimRef?.uid === wanted.spec?.claimRef?.uid);
    log.info({ path: hostPath, volumeId, limitBytes: decision.sizeBytes }, 'pool volume made for the claim');
    this.deps.events.normal(ref, EventReasons.PoolVolumeProvisioned.reason,
      `made ${hostPath} (limit ${claim.spec?.resources?.requests?.storage}) on node "${node.name}"; PV ${decision.name}`);
  }

  /**
   * A resize, in the order a crash can repeat: the limit raised first (what the tenant
   * can write), then the PV's capacity, then the claim's status as a resizer writes it
   * (capacity and allocatedResources the new size, no resize condition left: a quota
   * needs no filesystem resize on the node). Growth the pool cannot hold is refused.
   */
  private async expand(e: Expansion, states: Map<string, PoolState>): Promise<void> {
    const state = states.get(e.className);
    if (!state) return;
    const ref = persistentVolumeClaimReference(e.claim);
    const growth = e.bytes - e.fromBytes;
    if (growth > state.available) {
      const message = `pool ${state.pool.mountDir} of class "${e.className}" has ${formatBinaryQuantity(wholeMiB(state.available))} left; `
        + `growing ${e.pv.metadata?.name} from ${e.pv.spec?.capacity?.storage} to ${e.quantity} needs ${formatBinaryQuantity(Math.ceil(growth / MiB) * MiB)}`;
      if (this.refusedResizes.get(e.claim.metadata?.uid ?? '') !== message) this.deps.events.warning(ref, EventReasons.PoolExpansionRefused.reason, message);
      this.refusedResizes.set(e.claim.metadata?.uid ?? '', message);
      return;
    }
    this.refusedResizes.delete(e.claim.metadata?.uid ?? '');
    if (!await limitVolume(state.pool.mountDir, e.volumeId, e.bytes)) return;
    state.available -= growth;
    const pvName = e.pv.metadata!.name!;
    try {
      await this.deps.api.patchPersistentVolumeCapacity(pvName, e.pv.metadata!.resourceVersion!, e.quantity);
      // A merge patch replaces the whole list: the others' conditions (e.g. the controller manager's Unused) are
      // written back as read, under the resourceVersion precondition, without the resize ones.
      const conditions = e.claim.status?.conditions ?? [];
      const kept = conditions.filter((c) => !RESIZE_CONDITIONS.has(c.type));
      const { namespace, name, resourceVersion } = e.claim.metadata!;
      await this.deps.api.patchPersistentVolumeClaimStatus(namespace!, name!, resourceVersion!, {
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
  }

  /**
   * Volumes nothing refers to: made for a claim deleted before its PV was made, or left
   * by a PV deleted (its finalizer stripped) while the agent could not act, with its
   * claim gone too. No claim can ever use them again, so under the class's policy Delete
   * they are destroyed, by identity, and their space given back; under Retain they
   * stay, said once.
   */
  private async removeStrays(state: PoolState, pvNames: ReadonlySet<string>, claimUids: ReadonlySet<string>, node: NodeInfo): Promise<void> {
    const strays = strayVolumes(poolEntries(state.pool.mountDir), pvNames, claimUids);
    if (strays.length === 0) return;
    const fields = storageClassFields(state.className, await this.deps.storageClass(state.className));
    for (const name of strays) {
      const at = poolVolumeHostPath(state.pool, name);
      const volumeId = await volumeIdentity(state.pool.mountDir, name);
      if (volumeId === undefined) continue;
      if (!fields.ok || fields.reclaimPolicy !== 'Delete') {
        if (!this.keptStrays.has(at)) {
          this.deps.events.warning(nodeReference(node.name), EventReasons.PoolVolumeStrayKept.reason,
            `${at} has no PV and no claim, and StorageClass "${state.className}" keeps volumes (${fields.ok ? fields.reclaimPolicy : fields.message}); it stays until removed with "btrfs subvolume delete"`);
          this.keptStrays.add(at);
        }
        continue;
      }
      await deleteVolume(state.pool.mountDir, volumeId);
      this.deps.logger.info({ path: at, volumeId }, 'stray pool volume destroyed');
      this.deps.events.normal(nodeReference(node.name), EventReasons.PoolVolumeStrayDestroyed.reason,
        `${at} had no PV and no claim; destroyed under the class's policy Delete, its space given back`);
    }
  }

  /**
   * The scheduler's choice undone, as external provisioners undo it: without the
   * selected-node annotation the scheduler chooses again, with fresher capacity. Only
   * the claim as judged is changed (its resourceVersion is the precondition).
   */
  private async giveBack(claim: V1PersistentVolumeClaim, message: string): Promise<void> {
    const { namespace, name, resourceVersion } = claim.metadata!;
    try {
      await this.deps.api.patchPersistentVolumeClaimAnnotations(namespace!, name!, resourceVersion!, { [SELECTED_NODE_ANNOTATION]: null });
      this.deps.events.warning(persistentVolumeClaimReference(claim), EventReasons.PoolClaimRescheduled.reason, message);
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }

  private async release(pv: V1PersistentVolume, node: NodeInfo, pools: Readonly<Record<string, PoolClassConfig>>): Promise<void> {
    const volume = poolVolumeOf(pv, node.name, pools);
    if (!volume) return;
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
      this.deps.events.warning(ref, EventReasons.PoolVolumeKept.reason,
        `PV deleted with reclaimPolicy ${pv.spec?.persistentVolumeReclaimPolicy}: ${at} stays; remove it with "btrfs subvolume delete" when its data is no longer wanted`);
      await removeCleanupFinalizer(this.deps.api, name!, uid!);
      return;
    }
    // The PV is being deleted and held by our finalizer: a crash from here on leaves it so, and the next pass ends the work.
    await deleteVolume(volume.pool.mountDir, volume.volumeId);
    this.deps.logger.info({ pv: name, path: at }, 'pool volume destroyed');
    await removeCleanupFinalizer(this.deps.api, name!, uid!);
    this.deps.events.normal(ref, EventReasons.PoolVolumeDeleted.reason, `destroyed ${at} and its quota; the PV goes`);
  }

  /** Each usable pool's capacity object written when it changed; those of pools no longer here deleted. */
  private async publish(node: NodeInfo, states: ReadonlyMap<string, PoolState>): Promise<void> {
    const wanted = new Map<string, V1CSIStorageCapacity>();
    for (const { className, available } of states.values()) {
      const object = buildStorageCapacity(this.deps.namespace, node, className, wholeMiB(available));
      wanted.set(object.metadata!.name!, object);
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
