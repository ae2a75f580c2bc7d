/**
 * The node-cleanup controller (upstream's separate binary, here a subcommand):
 * it looks every interval for local PVs of the opted-in StorageClasses whose
 * nodes are gone, deletes those nothing can need, and, after a delay, the
 * claims bound to them, so StatefulSet pods can be rescheduled with new
 * volumes. Every delete carries a UID precondition.
 */
import type { V1Node, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { KubeApi, PageRequest } from '../kube/api-client';
import { KubeApiError } from '../kube/errors';
import { EventRecorder, persistentVolumeClaimReference, persistentVolumeReference } from '../kube/event-recorder';
import { deletePersistentVolumeIfUnchanged, removeCleanupFinalizer } from '../kube/pv-writes';
import { EventReasons, Logger, ProvisionerMetrics } from '../observability';
import { CLEANUP_FINALIZER } from '../well-known';
import { decideClaimOfGoneNode, decidePVOfGoneNode, isPVOfGoneNode, nodeNamesOfPV } from './decisions';

export interface NodeCleanupSettings {
  readonly storageClassNames: readonly string[];
  readonly pvcDeletionDelayMs: number;
}

/** Reads every page of a list, keeping the items. */
async function listAll<T>(list: (page: PageRequest) => Promise<{ items: T[]; metadata?: { _continue?: string } }>): Promise<T[]> {
  const items: T[] = [];
  let continueToken: string | undefined;
  do {
    const page = await list({ limit: 500, continueToken });
    items.push(...page.items);
    continueToken = page.metadata?._continue || undefined;
  } while (continueToken);
  return items;
}

export interface NodeCleanupPassResult {
  readonly deletedPVs: string[];
  readonly deletedClaims: string[];
  /** Deletes the API server refused with 403 (the ServiceAccount lacks a rule), each its error message. */
  readonly denied: string[];
}

/** A 403: RBAC refused the request, which no retry will change. */
export function isForbidden(err: unknown): boolean {
  return err instanceof KubeApiError && err.code === 403;
}

export class NodeCleanupController {
  /** Node name -> when it was first seen gone. */
  private readonly goneSince = new Map<string, number>();

  constructor(
    private readonly api: KubeApi,
    private readonly metrics: ProvisionerMetrics,
    private readonly logger: Logger,
    private readonly events: EventRecorder,
    private readonly settings: NodeCleanupSettings,
    private readonly now: () => number = Date.now,
  ) {}

  async pass(): Promise<NodeCleanupPassResult> {
    // Upstream's rule: no opted-in class, nothing is ever deleted (so nothing need be read).
    if (this.settings.storageClassNames.length === 0) return { deletedPVs: [], deletedClaims: [], denied: [] };
    const [nodes, pvs] = await Promise.all([
      listAll<V1Node>((p) => this.api.listNodes(p)),
      listAll<V1PersistentVolume>((p) => this.api.listPersistentVolumes(p)),
    ]);
    const optedIn = pvs.filter((pv) => pv.spec?.local && this.settings.storageClassNames.includes(pv.spec.storageClassName ?? ''));
    this.trackGoneNodes(optedIn, nodes);

    const deletedPVs: string[] = [];
    const denied: string[] = [];
    for (const pv of optedIn) {
      if (!decidePVOfGoneNode(pv, nodes, this.settings.storageClassNames).delete) continue;
      const name = pv.metadata!.name!;
      try {
        const outcome = await deletePersistentVolumeIfUnchanged(this.api, name, pv.metadata!.uid!, pv.metadata!.resourceVersion);
        this.metrics.recordNodeCleanupPVDelete(pv.status?.phase ?? '', true);
        if (outcome !== 'deleted') {
          this.logger.info({ pv: name, nodes: nodeNamesOfPV(pv), outcome }, 'PV of a gone node changed or went before its delete; decided again next pass');
          continue;
        }
        if (!await this.letGo(pv, denied)) continue;
        deletedPVs.push(name);
        this.events.normal(persistentVolumeReference(pv), EventReasons.StaleVolumeDeleted.reason,
          `node ${quotedNames(nodeNamesOfPV(pv))} no longer exists; PV deleted`);
      } catch (e) {
        this.metrics.recordNodeCleanupPVDelete(pv.status?.phase ?? '', false);
        this.logger.error({ pv: name, err: (e as Error).message }, 'cannot delete PV of a gone node');
        if (isForbidden(e)) denied.push((e as Error).message);
      }
    }

    const deletedClaims = await this.cleanClaims(optedIn, nodes, denied);
    return { deletedPVs, deletedClaims, denied };
  }

  /**
   * A deleted PV goes unless it carries the agent's cleanup finalizer (a Released PV whose
   * volume is not clean yet), which its node's agent removes once it has cleaned the volume:
   * never, for a node that does not come back. Node cleanup removes it (uid precondition):
   * the node's volume record, not the PV, keeps the volume from being offered dirty should
   * the node come back (it is cleaned first, or, unknown to the record, offered only if it
   * holds nothing). True when the PV goes; without `patch` on PVs it stays Terminating, and
   * the log and metric say so.
   */
  private async letGo(pv: V1PersistentVolume, denied: string[]): Promise<boolean> {
    const name = pv.metadata!.name!;
    const nodes = nodeNamesOfPV(pv);
    if (!pv.metadata?.finalizers?.includes(CLEANUP_FINALIZER)) {
      this.logger.info({ pv: name, nodes }, 'deleted PV of a gone node');
      return true;
    }
    try {
      const outcome = await removeCleanupFinalizer(this.api, name, pv.metadata.uid!);
      this.metrics.recordNodeCleanupFinalizerRemoval(outcome !== 'changed');
      this.logger.info({ pv: name, nodes, outcome }, `deleted PV of a gone node and removed its finalizer ${CLEANUP_FINALIZER}: `
        + 'the volume is not clean, and its node\'s volume record has it cleaned before it is offered again, should the node come back');
      return outcome !== 'changed';
    } catch (e) {
      this.metrics.recordNodeCleanupFinalizerRemoval(false);
      this.logger.warn({ pv: name, nodes, err: (e as Error).message }, `deleted PV of a gone node stays Terminating: it carries ${CLEANUP_FINALIZER}, `
        + 'which its node\'s agent removes once it has cleaned the volume (never, if the node does not come back), and node cleanup may not remove it; '
        + 'grant it patch on persistentvolumes (the construct does), or remove the finalizer by hand');
      if (isForbidden(e)) denied.push((e as Error).message);
      return false;
    }
  }

  private trackGoneNodes(pvs: readonly V1PersistentVolume[], nodes: readonly V1Node[]): void {
    const goneNow = new Set<string>();
    for (const pv of pvs) {
      if (!isPVOfGoneNode(pv, nodes)) continue;
      for (const n of nodeNamesOfPV(pv) ?? []) goneNow.add(n);
    }
    for (const n of goneNow) if (!this.goneSince.has(n)) this.goneSince.set(n, this.now());
    for (const n of [...this.goneSince.keys()]) if (!goneNow.has(n)) this.goneSince.delete(n);
  }

  private async cleanClaims(pvs: readonly V1PersistentVolume[], nodes: readonly V1Node[], denied: string[]): Promise<string[]> {
    const boundOnGoneNodes = pvs.filter((pv) => pv.status?.phase === 'Bound' && pv.spec?.claimRef && isPVOfGoneNode(pv, nodes));
    const deleted: string[] = [];
    for (const pv of boundOnGoneNodes) {
      const ref = pv.spec!.claimRef!;
      const pvc: V1PersistentVolumeClaim | undefined = await this.api.getPersistentVolumeClaim(ref.namespace ?? '', ref.name ?? '');
      if (!pvc) continue;
      // Re-read the PV right before deciding: the binding must still be intact.
      const fresh = await this.api.getPersistentVolume(pv.metadata!.name!);
      // A PV pinned to several hosts is gone once the last of them went: the delay counts from then.
      const goneSince = Math.max(...(nodeNamesOfPV(pv) ?? []).map((n) => this.goneSince.get(n) ?? Infinity));
      const decision = decideClaimOfGoneNode({
        pvc,
        pv: fresh,
        nodes,
        storageClassNames: this.settings.storageClassNames,
        goneSinceMs: Number.isFinite(goneSince) ? goneSince : undefined,
        nowMs: this.now(),
        deletionDelayMs: this.settings.pvcDeletionDelayMs,
      });
      const claim = `${pvc.metadata?.namespace}/${pvc.metadata?.name}`;
      if (!decision.delete) {
        this.logger.debug({ claim, reason: decision.reason }, 'claim of a gone node kept');
        continue;
      }
      try {
        await this.api.deletePersistentVolumeClaim(pvc.metadata!.namespace!, pvc.metadata!.name!, pvc.metadata!.uid!);
        this.metrics.recordNodeCleanupPVCDelete(true);
        deleted.push(claim);
        this.logger.info({ claim, pv: pv.metadata?.name }, 'deleted claim bound to a local PV of a gone node');
        this.events.normal(persistentVolumeClaimReference(pvc), EventReasons.StaleClaimDeleted.reason,
          `PV "${pv.metadata?.name}" is on node ${quotedNames(nodeNamesOfPV(pv))}, which no longer exists; claim deleted`);
      } catch (e) {
        this.metrics.recordNodeCleanupPVCDelete(false);
        this.logger.error({ claim, err: (e as Error).message }, 'cannot delete claim of a gone node');
        if (isForbidden(e)) denied.push((e as Error).message);
      }
    }
    return deleted;
  }
}

/** "worker-7", or "a" or "b" for a PV pinned to several hosts. */
function quotedNames(names: readonly string[] | undefined): string {
  return (names ?? []).map((n) => `"${n}"`).join(' or ');
}
