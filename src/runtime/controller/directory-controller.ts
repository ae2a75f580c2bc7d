/**
 * One pass of the directory dialect (the Go static provisioner's job), in
 * upstream's order: the deleter, then discovery. Plus what upstream lacks:
 * missing volumes, per-volume states and capacity totals in the metrics, and a
 * Warning Event for every entry that cannot be offered.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { ProvisionerConfig } from '../../config';
import { ConfiguredVolumes, containerPathFor, NodeIdentity } from '../cleanup';
import {
  ClassDiscovery,
  directoryCandidates,
  discoverDirectoryVolumes,
  DiscoveredVolume,
  MountTable,
  planProvisioning,
  PlanCandidate,
} from '../discovery';
import { KubeApi } from '../kube/api-client';
import { EventRecorder, nodeReference, persistentVolumeReference } from '../kube/event-recorder';
import { NodePvCache } from '../kube/pv-cache';
import { deletePersistentVolumeIfUnchanged, ensurePersistentVolume } from '../kube/pv-writes';
import { StorageClassCache } from '../kube/storage-class-cache';
import { EventReasons, Logger, ProvisionerMetrics, volumeLogger } from '../observability';
import { buildDirectoryPV, NodeInfo, provisionerName, storageClassFields, StorageClassFieldsResult } from '../pv';
import { Deleter } from './deleter';
import { MissingVolumeTracker } from './missing-volumes';
import { capacityByMode, volumeStateEntries } from './volume-states';

export interface DirectoryControllerDeps {
  readonly api: KubeApi;
  readonly cache: NodePvCache;
  readonly storageClasses: StorageClassCache;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly deleter: Deleter;
  readonly readMountTable: () => Promise<MountTable>;
  /** For cleanup Jobs. */
  readonly namespace: string;
  readonly jobContainerImage: string;
  /** How often a running cleanup Job's status is read. @default 1000 */
  readonly jobPollIntervalMs?: number;
  readonly now?: () => number;
}

/** What one pass saw, for the caller (readiness, plan-like logs, tests). */
export interface DirectoryPassResult {
  readonly created: readonly string[];
  readonly classes: readonly ClassDiscovery[];
}

export class DirectoryController {
  private readonly missing = new MissingVolumeTracker();
  /** UIDs of PVs whose volume was missing in the last pass. */
  private missingNow = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly deps: DirectoryControllerDeps) {
    this.now = deps.now ?? Date.now;
  }

  async pass(config: ProvisionerConfig, node: NodeInfo): Promise<DirectoryPassResult> {
    const me: NodeIdentity = { nodeName: node.name, provisionerName: provisionerName(node.name, node.uid, config.useNodeNameOnly) };
    const configured: ConfiguredVolumes = { dialect: 'directory', storageClassMap: config.storageClassMap };

    this.deps.deleter.run({
      me,
      configured,
      pvs: this.deps.cache.list(),
      jobs: config.useJobForCleaning
        ? { namespace: this.deps.namespace, image: this.deps.jobContainerImage, config, pollIntervalMs: this.deps.jobPollIntervalMs }
        : undefined,
    });

    const classes = await discoverDirectoryVolumes(config.storageClassMap, await this.deps.readMountTable());
    const created: string[] = [];
    for (const cls of classes) {
      created.push(...await this.provisionClass(cls, config, node));
    }
    await this.handleMissing(config, classes);
    this.updateMetrics(classes);
    return { created, classes };
  }

  private async provisionClass(cls: ClassDiscovery, config: ProvisionerConfig, node: NodeInfo): Promise<string[]> {
    const nodeRef = nodeReference(node.name);
    if (cls.problem) {
      this.deps.events.warning(nodeRef, EventReasons.VolumeRejected.reason, cls.problem);
      this.deps.logger.warn({ storageClass: cls.className, path: cls.mountDir }, cls.problem);
    }
    for (const r of cls.rejections) {
      const reason = r.code === 'not-a-mount-point' ? EventReasons.VolumeNotMountPoint.reason : EventReasons.VolumeRejected.reason;
      const message = r.hint ? `${r.reason}: ${r.hint}` : r.reason;
      this.deps.events.warning(nodeRef, reason, message);
      volumeLogger(this.deps.logger, { path: r.path, storageClass: r.className }).warn({ code: r.code }, message);
    }
    if (cls.volumes.length === 0) return [];

    let storageClass;
    try {
      storageClass = await this.deps.storageClasses.get(cls.className);
    } catch (err) {
      // One class's API trouble must not stop the other classes (or the rest of the pass).
      const message = `cannot read StorageClass "${cls.className}": ${(err as Error).message}; its volumes wait for the next pass`;
      this.deps.events.warning(nodeRef, EventReasons.ProvisioningFailed.reason, message);
      this.deps.logger.warn({ storageClass: cls.className }, message);
      return [];
    }
    const fields: StorageClassFieldsResult = storageClassFields(cls.className, storageClass);
    if (!fields.ok) {
      this.deps.events.warning(nodeRef, EventReasons.StorageClassMissing.reason, fields.message);
      this.deps.logger.warn({ storageClass: cls.className }, fields.message);
      return [];
    }
    const classConfig = config.storageClassMap[cls.className];
    const candidates = directoryCandidates(cls.volumes, node.name);
    const plan = planProvisioning(candidates, this.deps.cache.list(), {
      pvNames: new Set(candidates.map((c) => c.pvName).filter((n) => this.deps.deleter.isCleaning(n))),
      paths: new Set(),
    });
    for (const s of plan.skip) {
      if (!s.warning) continue;
      this.deps.events.warning(nodeRef, EventReasons.DuplicatePath.reason, s.warning);
      volumeLogger(this.deps.logger, { pv: s.candidate.pvName, path: s.candidate.localPath, storageClass: cls.className }).warn(s.warning);
    }
    const created: string[] = [];
    for (const candidate of plan.create) {
      const name = await this.create(candidate, classConfig, config, node, fields);
      if (name) created.push(name);
    }
    return created;
  }

  private async create(
    volume: DiscoveredVolume & PlanCandidate,
    classConfig: ProvisionerConfig['storageClassMap'][string],
    config: ProvisionerConfig,
    node: NodeInfo,
    fields: Extract<StorageClassFieldsResult, { ok: true }>,
  ): Promise<string | undefined> {
    const started = this.now();
    const pv = buildDirectoryPV({ volume, classConfig, config, node, storageClass: fields });
    const log = volumeLogger(this.deps.logger, { pv: volume.pvName, path: volume.hostPath, storageClass: volume.className });
    try {
      const result = await ensurePersistentVolume(this.deps.api, pv);
      if (!result.created) return undefined;
      this.deps.metrics.recordPVCreated(volume.volumeMode, (this.now() - started) / 1000);
      this.deps.events.normal(persistentVolumeReference(result.pv), EventReasons.ProvisioningSucceeded.reason,
        `created PV ${volume.pvName} for ${volume.hostPath} (${pv.spec?.capacity?.storage}, ${volume.volumeMode})`);
      log.info({ capacity: pv.spec?.capacity?.storage, volumeMode: volume.volumeMode }, 'PV created');
      return volume.pvName;
    } catch (err) {
      const message = `cannot create PV ${volume.pvName} for ${volume.hostPath}: ${(err as Error).message}`;
      this.deps.events.warning(nodeReference(node.name), EventReasons.ProvisioningFailed.reason, message);
      log.error(message);
      return undefined;
    }
  }

  /** Deletes Available PVs whose volume stayed gone past the grace period; reports Released ones. */
  private async handleMissing(config: ProvisionerConfig, classes: readonly ClassDiscovery[]): Promise<void> {
    const found = new Map(classes.map((c) => [c.className, c]));
    const present = (pv: V1PersistentVolume): boolean | undefined => {
      const cls = found.get(pv.spec?.storageClassName ?? '');
      // An unconfigured class, or a directory we could not list this pass: no verdict.
      if (!cls || cls.problem) return undefined;
      const classConfig = config.storageClassMap[cls.className];
      const path = pv.spec?.local?.path ?? '';
      if (!containerPathFor(path, classConfig.hostDir, classConfig.mountDir, { directChildOnly: true }).ok) return undefined;
      return cls.volumes.some((v) => v.hostPath === path);
    };
    const verdict = this.missing.observe(this.deps.cache.list(), present, {
      gracePeriodMs: config.missingVolumeGracePeriod,
      deleteReleased: config.deleteMissingReleasedVolumes,
    }, this.now());
    this.missingNow = new Set(verdict.missing.map((pv) => pv.metadata!.uid!));
    for (const pv of verdict.missing) {
      if (pv.status?.phase === 'Released' && !config.deleteMissingReleasedVolumes) {
        this.deps.events.warning(persistentVolumeReference(pv), EventReasons.VolumeMissing.reason,
          `the volume at ${pv.spec?.local?.path} is gone; the Released PV is kept (set deleteMissingReleasedVolumes to delete it)`);
      }
    }
    for (const pv of verdict.deleteNow) {
      const name = pv.metadata!.name!;
      // The cache may lag behind a claim that has just bound the PV: only the PV as the server has it now may be deleted.
      const fresh = await this.deps.api.getPersistentVolume(name).catch(() => undefined);
      const unchanged = fresh?.metadata?.uid === pv.metadata?.uid && fresh?.status?.phase === pv.status?.phase;
      if (!unchanged || fresh?.metadata?.deletionTimestamp) continue;
      const outcome = await deletePersistentVolumeIfUnchanged(this.deps.api, name, pv.metadata!.uid!).catch((e: Error) => e.message);
      volumeLogger(this.deps.logger, { pv: name, path: pv.spec?.local?.path ?? '', storageClass: pv.spec?.storageClassName ?? '' })
        .warn({ outcome }, 'volume gone past the grace period; PV deleted');
    }
  }

  private updateMetrics(classes: readonly ClassDiscovery[]): void {
    const pvs = this.deps.cache.list();
    this.deps.metrics.setCapacity(capacityByMode(pvs));
    const rejected = classes.flatMap((c) => c.rejections.map((r) => ({ path: r.path, storageClass: c.className, state: 'error' as const })));
    this.deps.metrics.setVolumeStates(
      volumeStateEntries(pvs, (pv) => ({
        missing: this.missingNow.has(pv.metadata?.uid ?? ''),
        cleaning: this.deps.deleter.isCleaning(pv.metadata?.name ?? ''),
      }), rejected),
      classes.map((c) => c.className),
    );
  }
}
