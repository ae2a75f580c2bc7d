/**
 * One pass of the directory dialect (the Go static provisioner's job), in
 * upstream's order: the deleter, then discovery. Plus what upstream lacks: the
 * PVs that exist are checked against what is at their paths (identity, missing,
 * no longer configured), one disk never gets two PVs whatever leads to it, and
 * every entry that cannot be offered is a Warning and a metric.
 */
import * as fs from 'node:fs';
import type { V1ObjectReference, V1PersistentVolume } from '@kubernetes/client-node';
import { ProvisionerConfig } from '../../config';
import { ConcurrencyLimiter, ConfiguredVolumes, containerPathFor, NodeIdentity, ownership, ReclaimMode } from '../cleanup';
import {
  ClassDiscovery,
  directoryCandidates,
  discoverDirectoryVolumes,
  DiscoveredVolume,
  directoryStamp,
  MountPointMemo,
  MountTable,
  mountAt,
  planProvisioning,
  PlanCandidate,
} from '../discovery';
import { MissingVolumeTracker } from './missing-volumes';
import { judgeVolume, steward, VolumeAtPath, VolumeVerdict } from './pv-stewardship';
import { PassInputs, QuietPasses } from './quiet-passes';
import { KubeApi } from '../kube/api-client';
import { EventRecorder, nodeReference, persistentVolumeReference } from '../kube/event-recorder';
import { NodePvCache } from '../kube/pv-cache';
import { deletePersistentVolumeIfUnchanged, ensurePersistentVolume } from '../kube/pv-writes';
import { StorageClassCache } from '../kube/storage-class-cache';
import { EventReasons, Logger, ProvisionerMetrics, volumeLogger } from '../observability';
import { buildDirectoryPV, NodeInfo, provisionerName, storageClassFields, StorageClassFieldsResult } from '../pv';
import { withIdentities } from '../record';
import { describeProbe, filesystemFirstSight, IdentityCache, inspectEntry, probeSignatures } from '../volume';
import { Deleter } from './deleter';
import { Claimed, FirstSight, RecordKeeper } from './record-keeper';
import { capacityByMode, heldDirtyVolumes, volumeStateEntries } from './volume-states';

export interface DirectoryControllerDeps {
  readonly api: KubeApi;
  readonly cache: NodePvCache;
  readonly storageClasses: StorageClassCache;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly deleter: Deleter;
  /** The node's volume record: only what it calls clean is offered. */
  readonly keeper: RecordKeeper;
  readonly readMountTable: () => Promise<MountTable>;
  /** How PVs are held (see cleanup/release-decision.ts). */
  readonly mode: ReclaimMode;
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
  /** The pass repeated the last one's inputs, which left nothing behind, so it did nothing (quiet-passes.ts). */
  readonly skipped: boolean;
}

export class DirectoryController {
  private readonly missing = new MissingVolumeTracker();
  private readonly identities = new IdentityCache();
  private readonly mountPoints = new MountPointMemo();
  /** The verdict on each PV of ours this pass, by UID (for the volume_state metric). */
  private verdicts = new Map<string, VolumeVerdict>();
  /** Rejections reported by the last pass: a lasting one is logged at warn once. */
  private reported = new Set<string>();
  private readonly quiet = new QuietPasses();
  private lastClasses: readonly ClassDiscovery[] = [];
  private readonly now: () => number;

  constructor(private readonly deps: DirectoryControllerDeps) {
    this.now = deps.now ?? Date.now;
  }

  async pass(config: ProvisionerConfig, node: NodeInfo): Promise<DirectoryPassResult> {
    // Read before anything else: a change during the pass makes the next one a full pass.
    // The record is read once, here: what changed in it (another agent's lines, an administrator's word), and its health.
    const recordHealth = this.deps.keeper.check();
    const inputs: PassInputs = {
      config,
      node,
      pvRevision: this.deps.cache.revision,
      mountTable: await this.deps.readMountTable(),
      directoryStamps: Object.values(config.storageClassMap).map((c) => directoryStamp(c.mountDir)),
      recordRevision: this.deps.keeper.record.revision,
      readAtMs: performance.now(),
    };
    if (this.quiet.canSkip(inputs)) return { created: [], classes: this.lastClasses, skipped: true };
    // Without a usable record nothing is offered or cleaned: a guess could call dirty data clean.
    if (!recordHealth.ok) return { created: [], classes: this.lastClasses, skipped: false };
    const me: NodeIdentity = { nodeName: node.name, provisionerName: provisionerName(node.name, node.uid, config.useNodeNameOnly) };
    const configured: ConfiguredVolumes = { dialect: 'directory', storageClassMap: config.storageClassMap };
    const recordContext = { dialect: 'directory' as const, reclaimPolicyOf: (pv: V1PersistentVolume) => pv.spec?.persistentVolumeReclaimPolicy };
    const ownedNow = () => this.deps.cache.list().filter((pv) => ownership(pv, me, 'directory').ok);
    // A tenant seen, a PV gone unseen: recorded before the deleter lets any PV go; a PV given to another tenant said before it is cleaned.
    const seenByRecord = withIdentities(ownedNow(), this.deps.keeper.identities());
    await this.deps.keeper.observe(seenByRecord, this.deps.cache.list(), recordContext);
    this.deps.keeper.reportRebound(seenByRecord);

    await this.deps.deleter.run({
      me,
      configured,
      pvs: this.deps.cache.list(),
      jobs: config.useJobForCleaning
        ? { namespace: this.deps.namespace, image: this.deps.jobContainerImage, config, pollIntervalMs: this.deps.jobPollIntervalMs }
        : undefined,
    });

    const table = await this.deps.readMountTable();
    this.identities.retainMounts(new Set(table.entries.map((e) => e.mountId)));
    // Only a volume that has its PV is taken from memory: one about to be offered is measured afresh.
    const withPv = new Set(this.deps.cache.list().map((pv) => acceptedKey(pv.spec?.storageClassName ?? '', pv.spec?.local?.path ?? '')));
    this.mountPoints.retain((v) => withPv.has(acceptedKey(v.className, v.hostPath)));
    const classes = await discoverDirectoryVolumes(config.storageClassMap, table, { identities: this.identities, mountPoints: this.mountPoints });
    const owned = ownedNow();
    // Each PV's volume found by one lookup, not by a scan of its class's volumes (thousands of both on a big node).
    const accepted = new Map(classes.flatMap((c) => c.volumes.map((v) => [acceptedKey(c.className, v.hostPath), v] as const)));
    const atPaths = await Promise.all(owned.map(async (pv) => ({ pv, at: await this.volumeAtPath(pv, config, classes, accepted, table) })));
    const stewardWrites = await steward(this.deps.api, this.deps.logger, atPaths, this.deps.mode);
    this.verdicts = new Map(atPaths.map(({ pv, at }) => [pv.metadata?.uid ?? '', judgeVolume(pv, at)]));
    this.reportVerdicts(owned);

    this.reportRejections(classes, node);
    const found = new Map(atPaths.flatMap(({ pv, at }) => (at.state === 'present' ? [[pv.metadata?.uid ?? '', at.identity] as const] : [])));
    // PVs made before identities (the Go provisioner's) are known by the record from adoption on, else by what is at their path.
    const recorded = this.deps.keeper.identities();
    const identityOf = (pv: V1PersistentVolume) => recorded(pv) ?? found.get(pv.metadata?.uid ?? '');
    await this.deps.keeper.observe(withIdentities(owned, identityOf), this.deps.cache.list(), recordContext);
    const { created, planned } = await this.provision(classes, config, node, identityOf);
    await this.handleMissing(config, owned);
    this.updateMetrics(classes, me);
    this.quiet.ran(inputs, { deleterAtRest: this.deps.deleter.atRest, stewardWrites, verdicts: this.verdicts.values(), classes, planned });
    this.lastClasses = classes;
    return { created, classes, skipped: false };
  }

  /** What is at the PV's path now, as this container sees it. */
  private async volumeAtPath(
    pv: V1PersistentVolume, config: ProvisionerConfig, classes: readonly ClassDiscovery[],
    accepted: ReadonlyMap<string, DiscoveredVolume>, table: MountTable,
  ): Promise<VolumeAtPath> {
    const className = pv.spec?.storageClassName ?? '';
    const hostPath = pv.spec?.local?.path ?? '';
    const cls = Object.prototype.hasOwnProperty.call(config.storageClassMap, className) ? config.storageClassMap[className] : undefined;
    if (!cls) return { state: 'unknown', reason: `its StorageClass "${className}" is not configured on this node` };
    const discovered = classes.find((c) => c.className === className);
    if (discovered?.problem) return { state: 'unknown', reason: discovered.problem };
    const volume = accepted.get(acceptedKey(className, hostPath));
    if (volume) return { state: 'present', identity: volume.identity, configured: true };
    const mapped = containerPathFor(hostPath, cls.hostDir, cls.mountDir, { directChildOnly: true });
    if (!mapped.ok) return { state: 'unknown', reason: mapped.reason };
    // Not offered by the configuration now (e.g. namePattern narrowed): look at the entry itself.
    try {
      const inspection = inspectEntry(mapped.containerPath);
      if (inspection.kind === 'block-device') return { state: 'present', identity: await this.identities.block(inspection.deviceNumber!), configured: false };
      if (inspection.kind !== 'directory') return { state: 'gone', reason: `"${mapped.containerPath}" is ${inspection.description}` };
      const mount = mountAt(await fs.promises.realpath(mapped.containerPath), table);
      if (!mount) return { state: 'gone', reason: `"${mapped.containerPath}" is no longer a mount point` };
      return { state: 'present', identity: await this.identities.mount(mount), configured: false };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { state: 'gone', reason: `"${mapped.containerPath}" does not exist` };
      return { state: 'unknown', reason: `"${mapped.containerPath}" cannot be inspected: ${(err as Error).message}` };
    }
  }

  /** Warnings for PVs whose path holds another volume, or that the configuration no longer offers. */
  private reportVerdicts(owned: readonly V1PersistentVolume[]): void {
    for (const pv of owned) {
      if (pv.metadata?.deletionTimestamp) continue;
      const verdict = this.verdicts.get(pv.metadata?.uid ?? '');
      const path = pv.spec?.local?.path;
      if (verdict?.kind === 'identity-mismatch') {
        this.deps.events.warning(persistentVolumeReference(pv), EventReasons.VolumeIdentityMismatch.reason,
          `"${path}" is not the volume PV "${pv.metadata?.name}" was made for: it recorded ${verdict.recorded}, the path now holds ${verdict.current}; `
          + 'the PV is kept, and that volume is neither cleaned nor offered in its name');
      } else if ((verdict?.kind === 'ok' && !verdict.configured) || (verdict?.kind === 'unknown' && pv.status?.phase === 'Available')) {
        const why = verdict.kind === 'unknown' ? verdict.reason : 'the configuration no longer offers its entry (namePattern, class or hostDir changed)';
        this.deps.events.warning(persistentVolumeReference(pv), EventReasons.VolumeNotConfigured.reason,
          `PV "${pv.metadata?.name}" for "${path}": ${why}; a configuration change never deletes a PV, so it is left as it is`);
      }
    }
  }

  /** Each problem is an Event (the recorder holds repeats) and a warn log line when it appears, a debug line while it lasts. */
  private reportRejections(classes: readonly ClassDiscovery[], node: NodeInfo): void {
    const nodeRef = nodeReference(node.name);
    const seen = new Set<string>();
    const report = (reason: string, message: string, fields: Record<string, unknown>, log: Logger) => {
      this.deps.events.warning(nodeRef, reason, message);
      seen.add(message);
      if (this.reported.has(message)) log.debug(fields, message);
      else log.warn(fields, message);
    };
    for (const cls of classes) {
      if (cls.problem) report(EventReasons.VolumeRejected.reason, cls.problem, { storageClass: cls.className, path: cls.mountDir }, this.deps.logger);
      for (const r of cls.rejections) {
        const reason = r.code === 'not-a-mount-point' ? EventReasons.VolumeNotMountPoint.reason : EventReasons.VolumeRejected.reason;
        report(reason, r.hint ? `${r.reason}: ${r.hint}` : r.reason, { code: r.code }, volumeLogger(this.deps.logger, { path: r.path, storageClass: r.className }));
      }
    }
    this.reported = seen;
  }

  /** Plans over every class at once (one disk is one PV across classes), then creates class by class. */
  private async provision(classes: readonly ClassDiscovery[], config: ProvisionerConfig, node: NodeInfo,
    identityOf: (pv: V1PersistentVolume) => string | undefined): Promise<{ created: string[]; planned: { create: number; warnings: number } }> {
    const candidates = classes.flatMap((cls) => directoryCandidates(cls.volumes, node.name));
    const plan = planProvisioning(candidates, this.deps.cache.list(), {
      pvNames: new Set(candidates.map((c) => c.pvName).filter((n) => this.deps.deleter.isCleaning(n))),
      paths: new Set(),
    }, identityOf);
    const nodeRef = nodeReference(node.name);
    let warnings = 0;
    for (const s of plan.skip) {
      if (!s.warning) continue;
      warnings++;
      this.deps.events.warning(nodeRef, EventReasons.DuplicatePath.reason, s.warning);
      volumeLogger(this.deps.logger, { pv: s.candidate.pvName, path: s.candidate.localPath, storageClass: s.candidate.className }).warn(s.warning);
    }
    const created: string[] = [];
    for (const cls of classes) {
      const toCreate = plan.create.filter((c) => c.className === cls.className);
      if (toCreate.length === 0) continue;
      const fields = await this.storageClassOf(cls.className, nodeRef);
      if (!fields) continue;
      // Claimed in the record in batches, each before its PVs are made, the next batch claimed while this one's PVs are made:
      // the first PVs wait for a small first batch only, the last for no claim of their own.
      const claim = (batch: typeof toCreate) => this.deps.keeper.claim(
        batch.map((c) => ({ ...c, storageClass: c.className, reclaimPolicy: fields.reclaimPolicy })), 'directory', (v) => firstSightOf(v, this.deps.logger));
      const batches = claimBatches(toCreate);
      let claiming = claim(batches[0]);
      for (let i = 0; i < batches.length; i++) {
        const claimed = await claiming;
        if (i + 1 < batches.length) claiming = claim(batches[i + 1]);
        const creates = new ConcurrencyLimiter(CREATES_AT_ONCE);
        const made = (await Promise.all(claimed.map((candidate) => creates.run(async () => {
          const pv = await this.create(candidate, config, node, fields);
          if (!pv) await this.deps.keeper.release(candidate.identity, candidate.pvName, 'clean');
          return pv ? [{ identity: candidate.identity, pv }] : [];
        })))).flat();
        await this.deps.keeper.made(made);
        created.push(...made.map(({ pv }) => pv.metadata!.name!));
      }
    }
    return { created, planned: { create: plan.create.length, warnings } };
  }

  /** The StorageClass fields of a class's PVs, or undefined (with a Warning) while they cannot be had. */
  private async storageClassOf(className: string, nodeRef: V1ObjectReference): Promise<Extract<StorageClassFieldsResult, { ok: true }> | undefined> {
    let storageClass;
    try {
      storageClass = await this.deps.storageClasses.get(className);
    } catch (err) {
      // One class's API trouble must not stop the other classes (or the rest of the pass).
      const message = `cannot read StorageClass "${className}": ${(err as Error).message}; its volumes wait for the next pass`;
      this.deps.events.warning(nodeRef, EventReasons.ProvisioningFailed.reason, message);
      this.deps.logger.warn({ storageClass: className }, message);
      return undefined;
    }
    const fields = storageClassFields(className, storageClass);
    if (!fields.ok) {
      this.deps.events.warning(nodeRef, EventReasons.StorageClassMissing.reason, fields.message);
      this.deps.logger.warn({ storageClass: className }, fields.message);
      return undefined;
    }
    return fields;
  }

  private async create(
    volume: DiscoveredVolume & PlanCandidate & Claimed,
    config: ProvisionerConfig,
    node: NodeInfo,
    fields: Extract<StorageClassFieldsResult, { ok: true }>,
  ): Promise<V1PersistentVolume | undefined> {
    const started = this.now();
    const classConfig = config.storageClassMap[volume.className];
    const pv = buildDirectoryPV({ volume, identity: volume.identity, classConfig, config, node, storageClass: fields, handTo: volume.handTo });
    const log = volumeLogger(this.deps.logger, { pv: volume.pvName, path: volume.hostPath, storageClass: volume.className });
    try {
      const result = await ensurePersistentVolume(this.deps.api, pv);
      if (!result.created) return undefined;
      // Known at once, even while the watch lags: the next pass never offers this disk twice.
      this.deps.cache.observe(result.pv);
      this.deps.metrics.recordPVCreated(volume.volumeMode, (this.now() - started) / 1000);
      this.deps.events.normal(persistentVolumeReference(result.pv), EventReasons.ProvisioningSucceeded.reason,
        `created PV ${volume.pvName} for ${volume.hostPath} (${pv.spec?.capacity?.storage}, ${volume.volumeMode})`);
      log.info({ capacity: pv.spec?.capacity?.storage, volumeMode: volume.volumeMode }, 'PV created');
      return result.pv;
    } catch (err) {
      const message = `cannot create PV ${volume.pvName} for ${volume.hostPath}: ${(err as Error).message}`;
      this.deps.events.warning(nodeReference(node.name), EventReasons.ProvisioningFailed.reason, message);
      log.error(message);
      return undefined;
    }
  }

  /**
   * PVs whose volume is really gone (path missing, no longer a mount point or the
   * device recorded): an Available one is deleted after the grace period, with
   * preconditions (a claim binding it meanwhile keeps it); a Released one is reported.
   * A configuration change alone never counts: its PVs are left alone.
   */
  private async handleMissing(config: ProvisionerConfig, owned: readonly V1PersistentVolume[]): Promise<void> {
    const present = (pv: V1PersistentVolume): boolean | undefined => {
      const verdict = this.verdicts.get(pv.metadata?.uid ?? '');
      if (verdict === undefined || verdict.kind === 'unknown') return undefined;
      return verdict.kind === 'ok';
    };
    const verdict = this.missing.observe(owned, present, {
      gracePeriodMs: config.missingVolumeGracePeriod,
      deleteReleased: config.deleteMissingReleasedVolumes,
    }, this.now());
    for (const pv of verdict.missing) {
      if (pv.status?.phase === 'Released' && !config.deleteMissingReleasedVolumes) {
        this.deps.events.warning(persistentVolumeReference(pv), EventReasons.VolumeMissing.reason,
          `the volume at ${pv.spec?.local?.path} is gone; the Released PV is kept (set deleteMissingReleasedVolumes to delete it)`);
      }
    }
    for (const pv of verdict.deleteNow) {
      const name = pv.metadata!.name!;
      const outcome = await deletePersistentVolumeIfUnchanged(this.deps.api, name, pv.metadata!.uid!, pv.metadata!.resourceVersion)
        .catch((e: Error) => e.message);
      volumeLogger(this.deps.logger, { pv: name, path: pv.spec?.local?.path ?? '', storageClass: pv.spec?.storageClassName ?? '' })
        .warn({ outcome }, 'volume gone past the grace period; PV deleted');
    }
  }

  /** Gauges over this agent's PVs only: another provisioner's PVs on this node (the device dialect's) are its to count. */
  private updateMetrics(classes: readonly ClassDiscovery[], me: NodeIdentity): void {
    const pvs = this.deps.cache.list().filter((pv) => ownership(pv, me, 'directory').ok);
    this.deps.metrics.setCapacity(capacityByMode(pvs));
    const rejected = classes.flatMap((c) => c.rejections.map((r) => ({ path: r.path, storageClass: c.className, state: 'error' as const })));
    this.deps.metrics.setVolumeStates(
      volumeStateEntries(pvs, (pv) => {
        const uid = pv.metadata?.uid ?? '';
        const verdict = this.verdicts.get(uid);
        return {
          missing: verdict?.kind === 'missing',
          identityMismatch: verdict?.kind === 'identity-mismatch',
          notConfigured: verdict?.kind === 'ok' && !verdict.configured,
          cleaning: this.deps.deleter.isCleaning(pv.metadata?.name ?? ''),
          refusal: this.deps.deleter.refusal(uid),
        };
      }, [...rejected, ...heldDirtyVolumes(this.deps.deleter.heldVolumes())]),
      classes.map((c) => c.className),
    );
  }
}

/**
 * Volumes claimed in the record per transaction (one lock, one directory fsync): a small
 * first batch, for a first PV at once, then each twice the last, so that claiming the next
 * takes about as long as making the PVs of this one, up to a bound.
 */
const FIRST_CLAIM_BATCH = 8;
const CLAIM_BATCH = 128;
/** PVs created at once: the API server's round trip, not this agent, is what a create waits for. */
const CREATES_AT_ONCE = 8;

/** The volumes to offer, in claim batches. */
function claimBatches<T>(volumes: readonly T[]): T[][] {
  const batches: T[][] = [];
  for (let i = 0, size = FIRST_CLAIM_BATCH; i < volumes.length; i += size, size = Math.min(2 * size, CLAIM_BATCH)) {
    batches.push(volumes.slice(i, i + size));
  }
  return batches;
}

/**
 * What a volume the record has never seen holds: a filesystem volume with nothing but
 * `lost+found`, or a device with no signature, holds nothing anyone wrote there. A
 * filesystem volume's root metadata is recorded with it, for each clean to give back.
 */
async function firstSightOf(volume: DiscoveredVolume, logger: Logger): Promise<FirstSight> {
  if (volume.source === 'block-device') {
    const probe = await probeSignatures(volume.mountPath);
    return probe.state === 'blank' ? { holdsNothing: true } : { holdsNothing: false, what: describeProbe(probe) };
  }
  const sight = await filesystemFirstSight(volume.mountPath);
  if (sight.holdings !== undefined) return { holdsNothing: false, what: sight.holdings };
  if ('rootMetadataProblem' in sight) {
    logger.warn({ path: volume.hostPath, reason: sight.rootMetadataProblem }, 'the root directory\'s metadata cannot be read; cleans leave the root as they find it');
    return { holdsNothing: true };
  }
  return { holdsNothing: true, rootMetadata: sight.rootMetadata };
}

/** A discovered volume's key: its class and host path. */
function acceptedKey(className: string, hostPath: string): string {
  return `${className}\0${hostPath}`;
}
