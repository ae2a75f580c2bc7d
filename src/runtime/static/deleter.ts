/**
 * The deleter: recycles this node's Released volumes, for both dialects, by the
 * protocol of cleanup/release-decision.ts.
 *
 * Each pass it decides for every PV of ours and acts:
 * - `protect`, `retire`, `let-go`: one guarded API write (our finalizer added; the
 *   PV deleted with uid and resourceVersion preconditions; our finalizer removed);
 *   a PV that changed since it was read answers 409 and is decided again next pass;
 * - `clean`: a cleanup task in the process table (keyed by PV UID): read the PV
 *   again and re-check it, clean the volume through handles (cleanup/clean-volume.ts:
 *   identity, in use, then the cleaner), then remove our finalizer (`finalizer`
 *   mode) or delete the PV with preconditions (`legacy` mode);
 * - `hold`, `warn`: a Warning Event, nothing touched.
 * Discovery offers the volume again once its PV is gone. A crash at any point
 * leaves the PV held (or, in legacy mode, Released) and the next run starts over.
 *
 * What it is doing with each volume between passes is one table, release-table.ts,
 * whose header draws its transitions beside the record's and the process table's.
 */
import * as fs from 'node:fs';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import {
  CleanTarget,
  cleanVolume,
  CleanupEntry,
  CleanupProcessTable,
  CleanVolumeResult,
  ConfiguredVolumes,
  decideRelease,
  locateRecordedVolume,
  NodeIdentity,
  NotCleanedKind,
  ReclaimMode,
  recheckBeforeCleaning,
  recordTaskKey,
  ReleaseDecision,
  TaskOutcome,
  unused,
} from '../cleanup';
import { KubeApi } from '../kube/api-client';
import { EventRecorder, nodeReference, persistentVolumeReference } from '../kube/event-recorder';
import { addCleanupFinalizer, deletePersistentVolumeIfUnchanged, removeCleanupFinalizer } from '../kube/pv-writes';
import { EventReasons, Logger, ProvisionerMetrics, volumeLogger } from '../observability';
import type { CleanupModeLabel } from '../observability/metrics';
import { dirtyDisposition, recordedLines, VolumeRecord, VolumeRecordEntry } from '../record';
import { parseQuantity } from '../volume';
import { VOLUME_IDENTITY_ANNOTATION } from '../well-known';
import { cleanInJob, JobCleaning } from './job-cleaning';
import { CleaningReport, ReleaseTable } from './release-table';

export interface DeleterDeps {
  readonly api: KubeApi;
  readonly table: CleanupProcessTable;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  /** How PVs are held (see release-decision.ts); `finalizer` needs update permission on PVs. */
  readonly mode: ReclaimMode;
  /** A device cleanup during which the device sees no I/O this long is stopped (cleanup/stall-watchdog.ts). 0 = never. */
  readonly stallTimeoutMs: number;
  /** The node's volume record: what a tenant used, what is clean (record/volume-record.ts). */
  readonly record: VolumeRecord;
}

export interface DeleterPass {
  readonly me: NodeIdentity;
  readonly configured: ConfiguredVolumes;
  readonly pvs: readonly V1PersistentVolume[];
  /** Clean Block volumes in Jobs instead of in this process (directory dialect's `useJobForCleaning`). */
  readonly jobs?: JobCleaning;
}

/**
 * The failure kinds of a cleanup task: why the volume was not cleaned, that the PV
 * changed before it was, or that it was cleaned but its PV could not be deleted.
 */
type CleanupFailureKind = NotCleanedKind | 'stale' | 'delete-failed';
/** A cleanup not done for safety. */
export type RefusalKind = Exclude<NotCleanedKind, 'failed'>;

/** Upstream's `cleanup_command`: the class's blockCleanerCommand, whatever cleaned the volume (a directory too). */
function cleanerCommand(target: CleanTarget): readonly string[] {
  return target.method.kind === 'device-wipe' ? ['wipe'] : target.method.blockCleanerCommand;
}

function isQueuedOrRunning(entry: CleanupEntry | undefined): boolean {
  return entry?.state === 'queued' || entry?.state === 'running';
}

/** Upstream's `mode` label: what is at the volume's path now (GetVolumeMode), `unknown` when that cannot be told. */
function modeAtPath(containerPath: string): CleanupModeLabel {
  try {
    const st = fs.statSync(containerPath);
    return st.isDirectory() ? 'Filesystem' : st.isBlockDevice() ? 'Block' : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Warnings for volumes that were not cleaned for safety, by kind. */
const REFUSAL_EVENTS: Partial<Record<CleanupFailureKind, string>> = {
  'identity-mismatch': EventReasons.VolumeIdentityMismatch.reason,
  'in-use': EventReasons.VolumeInUse.reason,
  'refused': EventReasons.CleanupRefused.reason,
  'missing': EventReasons.VolumeMissing.reason,
};

/** A dirty volume of the record whose PV is gone and that is held, not cleaned, and why. */
export interface HeldVolume {
  readonly entry: VolumeRecordEntry;
  readonly reason: string;
}

/** Decisions that ask for nothing, now or later: the PV is not ours, not Released, or keeps its data. */
const AT_REST: ReadonlySet<ReleaseDecision['action']> = new Set(['not-ours', 'skip', 'retain']);

/** What one run found, kept for the controller until the next. */
interface RunSummary {
  /** Dirty volumes without a PV that are held (Retain, class not configured). */
  readonly held: readonly HeldVolume[];
  /** Names of the PVs of dirty volumes to be cleaned without their PV. */
  readonly orphanNames: ReadonlySet<string>;
  /** Nothing was decided, warned about, cleaned or let go: the same PVs would be decided the same way again. */
  readonly atRest: boolean;
}

export class Deleter {
  /** What this deleter is doing with each volume (release-table.ts: its states and transitions). */
  private readonly volumes = new ReleaseTable();
  private last: RunSummary = { held: [], orphanNames: new Set(), atRest: false };

  constructor(private readonly deps: DeleterDeps) {}

  /** Acts on this pass's PVs: guarded writes now, cleanups started; reports cleanups that finished. */
  async run(pass: DeleterPass): Promise<void> {
    const byUid = new Map(pass.pvs.map((pv) => [pv.metadata?.uid ?? '', pv]));
    this.reportFinished(byUid);
    this.volumes.forgetLetGoExcept(new Set(byUid.keys()));
    const recorded = this.recordedVolumes();
    const writes: Array<Promise<void>> = [];
    let acted = false;
    for (const pv of pass.pvs) {
      const uid = pv.metadata?.uid ?? '';
      if (this.volumes.state(uid) === 'let-go') continue;
      const state = recorded(pv);
      const decision = decideRelease(pv, pass.me, pass.configured, this.deps.mode, state);
      acted ||= !AT_REST.has(decision.action);
      const ref = persistentVolumeReference(pv);
      switch (decision.action) {
        case 'protect':
        case 'retire':
          writes.push(this.retire(pv, decision.action === 'protect', decision.target, pass));
          break;
        case 'let-go':
          writes.push(this.write(pv, `let go without cleaning: ${decision.reason}`, () => this.letGo(pv, unused(pv, state)),
            pv.metadata?.deletionTimestamp ? undefined : EventReasons.VolumeFailedDelete.reason));
          break;
        case 'withdraw':
          writes.push(this.write(pv, `withdrawn: ${decision.reason}`, () => {
            const { name, resourceVersion } = pv.metadata!;
            return deletePersistentVolumeIfUnchanged(this.deps.api, name!, uid, resourceVersion);
          }, EventReasons.VolumeFailedDelete.reason));
          this.deps.events.warning(ref, EventReasons.VolumeWithdrawn.reason, `${decision.reason}; the PV is deleted so that no claim binds it, and its volume is cleaned or held by its reclaim policy`);
          break;
        case 'clean':
          this.start(pv, decision.target, pass);
          break;
        case 'hold':
          this.deps.events.warning(ref, EventReasons.CleanupRefused.reason, `${decision.reason}; nothing is wiped and the PV is kept until it can be`);
          break;
        case 'warn':
          this.deps.events.warning(ref, decision.policy === 'unsupported'
            ? EventReasons.VolumeUnsupportedReclaimPolicy.reason : EventReasons.VolumeUnknownReclaimPolicy.reason, decision.reason);
          break;
        default:
      }
    }
    await Promise.all(writes);
    const orphans = this.cleanOrphans(byUid, pass);
    this.deps.table.retainOnly(new Set([...byUid.keys(), ...orphans.keys]));
    const running = [...this.volumes.cleanings()].filter(([key, report]) => report.type === 'process' && isQueuedOrRunning(this.deps.table.get(key))).length;
    this.deps.metrics.setProcTableRunning(running);
    this.last = { held: orphans.held, orphanNames: orphans.names, atRest: !acted && !this.volumes.busy && orphans.keys.size === 0 };
  }

  /** The dirty volumes without a PV that are held until an administrator's word, as of the last run. */
  heldVolumes(): readonly HeldVolume[] {
    return this.last.held;
  }

  /** Each PV's volume's line in the record. */
  private recordedVolumes(): (pv: V1PersistentVolume) => VolumeRecordEntry | undefined {
    return recordedLines(this.deps.record.entries(), (i) => this.deps.record.get(i));
  }

  /**
   * True when the last run found nothing to do, warn about or wait for: no PV to hold,
   * clean, let go or report, and no cleanup under way, failed or just finished. The
   * same PVs would then be decided the same way again.
   */
  get atRest(): boolean {
    return this.last.atRest;
  }

  /** True while a cleanup of this PV name is queued or running, or its volume still waits for one. */
  isCleaning(pvName: string): boolean {
    return this.deps.table.isActiveForName(pvName) || this.last.orphanNames.has(pvName);
  }

  /** Why the last cleanup of this PV UID did not clean its volume, when it was refused for safety. */
  refusal(pvUid: string): RefusalKind | undefined {
    const entry = this.deps.table.get(pvUid);
    const kind = entry?.state === 'failed' ? entry.failureKind as CleanupFailureKind | undefined : undefined;
    return kind !== undefined && kind in REFUSAL_EVENTS ? kind as RefusalKind : undefined;
  }

  /**
   * Holds a Released PV with our finalizer (when `protect`), deletes it with
   * preconditions so that no claim can bind it any more, and starts cleaning its
   * volume: all in this pass when nothing changed meanwhile, else the next pass
   * decides again.
   */
  private async retire(pv: V1PersistentVolume, protect: boolean, target: CleanTarget, pass: DeleterPass): Promise<void> {
    let held = pv;
    if (protect) {
      let patched: V1PersistentVolume | undefined;
      await this.write(pv, 'cleanup finalizer added', async () => {
        const result = await addCleanupFinalizer(this.deps.api, pv);
        if (typeof result === 'string') return result;
        patched = result;
        return 'done';
      });
      if (!patched) return;
      held = patched;
    }
    let deleted = false;
    await this.write(held, 'Released PV deleted; it stays until its volume is clean', async () => {
      const { name, uid, resourceVersion } = held.metadata!;
      const outcome = await deletePersistentVolumeIfUnchanged(this.deps.api, name!, uid!, resourceVersion);
      deleted = outcome === 'deleted';
      return outcome;
    }, EventReasons.VolumeFailedDelete.reason);
    // The cleanup reads the PV again and goes on only if it is being deleted, with our finalizer.
    if (deleted) this.start(held, target, pass);
  }

  /**
   * One guarded write; a PV that changed or went meanwhile is simply decided again next
   * pass. A failure is logged, and recorded on the PV as `failureEvent` when given.
   */
  private async write(pv: V1PersistentVolume, done: string, write: () => Promise<string>, failureEvent?: string): Promise<void> {
    const uid = pv.metadata?.uid ?? '';
    if (!this.volumes.beginWrite(uid)) return;
    const log = volumeLogger(this.deps.logger, { pv: pv.metadata?.name ?? '', path: pv.spec?.local?.path ?? '', storageClass: pv.spec?.storageClassName ?? '' });
    try {
      const outcome = await write();
      if (outcome === 'done' || outcome === 'deleted') log.info(done);
      else log.debug({ outcome }, 'PV changed or went before the write; decided again next pass');
    } catch (err) {
      log.error({ err: (err as Error).message }, `cannot write PV (${done})`);
      if (failureEvent) this.deps.events.warning(persistentVolumeReference(pv), failureEvent, (err as Error).message);
    } finally {
      this.volumes.endWrite(uid);
    }
  }

  /**
   * The record's dirty volumes of this dialect whose PV is gone (deleted while the agent
   * was down, its finalizer stripped, deleted in legacy mode before its clean, a Retain
   * PV deleted by hand): cleaned when their policy allows and their class is configured,
   * held otherwise. Upstream offers such volumes again with the old data. Returns the
   * process-table keys and PV names of those being cleaned, and those held.
   */
  private cleanOrphans(byUid: ReadonlyMap<string, V1PersistentVolume>, pass: DeleterPass) {
    const names = new Set<string>();
    const keys = new Set<string>();
    const held: HeldVolume[] = [];
    const withPv = new Set([...byUid.values()].map((pv) => pv.metadata?.annotations?.[VOLUME_IDENTITY_ANNOTATION]));
    for (const entry of this.deps.record.entries()) {
      if (entry.state !== 'dirty' || entry.dialect !== pass.configured.dialect || entry.admin === 'accept') continue;
      if ((entry.pvUid !== undefined && byUid.has(entry.pvUid)) || withPv.has(entry.identity)) continue;
      const located = locateRecordedVolume(entry, pass.configured);
      const disposition = located.ok ? dirtyDisposition(entry, this.classConfigured(entry, pass.configured)) : { action: 'hold' as const, reason: located.reason };
      if (disposition.action === 'hold' || !located.ok) {
        held.push({ entry, reason: disposition.action === 'hold' ? disposition.reason : '' });
        continue;
      }
      const key = recordTaskKey(entry);
      keys.add(key);
      if (entry.pvName) names.add(entry.pvName);
      const state = this.deps.table.get(key)?.state;
      if (state === 'queued' || state === 'running') continue;
      this.start(undefined, located.target, pass);
    }
    for (const { entry, reason } of held) {
      this.deps.events.warning(nodeReference(pass.me.nodeName), EventReasons.VolumeHeldDirty.reason,
        `${entry.hostPath} (${entry.identity}) was used by a tenant and is not clean: ${reason}; it is never offered until an administrator runs `
        + `"local-volume-provisioner volumes reclaim ${entry.hostPath}" (clean it, then offer it) or "volumes accept ${entry.hostPath}" (offer it as it is)`);
    }
    return { keys, names, held };
  }

  /** Whether the volume's class is one this agent offers now. */
  private classConfigured(entry: VolumeRecordEntry, configured: ConfiguredVolumes): boolean {
    return configured.dialect === 'directory'
      ? Object.prototype.hasOwnProperty.call(configured.storageClassMap, entry.storageClass)
      : configured.spec.storageClassName === entry.storageClass;
  }

  /**
   * Records a volume as clean once its PV is gone (only then may discovery offer it),
   * if its line is still as `expected` says: a line that became dirty meanwhile stays so.
   */
  private async markClean(identity: string | undefined, reason: string, expected: (entry: VolumeRecordEntry) => boolean): Promise<void> {
    if (identity === undefined) return;
    await this.deps.record.update((record) => {
      const entry = record.get(identity);
      if (!entry || entry.state === 'clean' || !expected(entry)) return { writes: [], result: undefined };
      // Clean: no PV, no tenant, no word of an administrator's any more.
      const { pvName, pvUid, admin, claim, claimUid, ...rest } = entry;
      return { writes: [{ ...rest, state: 'clean' as const, reason, since: new Date().toISOString() }], result: undefined };
    });
  }

  /** Starts a cleanup of a PV's volume, or with `pv` undefined of the volume of one that vanished uncleaned. */
  private start(pv: V1PersistentVolume | undefined, target: CleanTarget, pass: DeleterPass): void {
    const useJob = pass.jobs !== undefined && target.method.kind === 'class' && target.volumeMode === 'Block';
    const log = volumeLogger(this.deps.logger, { pv: target.pvName, path: target.hostPath, storageClass: target.storageClassName });
    const result = this.deps.table.start(target.pvUid, target.pvName, async (signal): Promise<TaskOutcome> => {
      let fresh: V1PersistentVolume | undefined;
      if (pv) {
        fresh = await this.deps.api.getPersistentVolume(target.pvName);
        const recheck = recheckBeforeCleaning(fresh, target, pass.me, pass.configured, this.deps.mode, fresh && this.recordedVolumes()(fresh));
        if (!recheck.ok) return { ok: false, kind: 'stale', reason: `not cleaned: ${recheck.reason}` };
      }
      log.info({ job: useJob, pvDeleted: !pv }, 'cleaning volume');
      // The root as it was first offered (an administrator's mode, owner, ACLs), given back by the clean.
      const rootMetadata = target.identity !== undefined ? this.deps.record.get(target.identity)?.rootMetadata : undefined;
      const startedAt = performance.now();
      const cleaned = await cleanVolume(target, {
        signal,
        rootMetadata,
        stallTimeoutMs: this.deps.stallTimeoutMs,
        onOutput: (line, stream) => log.info({ stream }, line),
        onWritten: (bytes) => this.deps.metrics.addCleanupBytes(target.volumeMode, useJob ? 'job' : 'process', bytes),
        ...(useJob ? { runCommandElsewhere: (s) => cleanInJob(this.deps, target, pass.jobs!, pass.me.nodeName, s ?? signal) } : {}),
      });
      if (!cleaned.ok) return this.notCleaned(cleaned, fresh, target, signal);
      const outcome = pv ? await this.finish(fresh!, target, log) : { ok: true as const };
      if (!outcome.ok) return outcome;
      if (pv) {
        const took = ((performance.now() - startedAt) / 1000).toFixed(1);
        this.deps.events.normal(persistentVolumeReference(fresh!), EventReasons.CleanupSucceeded.reason,
          `cleaned "${target.hostPath}" ${cleanedHow(cleaned.cleaner, useJob)} in ${took}s; PV ${this.deps.mode === 'finalizer' ? 'released to be deleted' : 'deleted'}`);
      }
      // Only now, with its PV gone, is the volume recorded clean; a crash before leaves it dirty, cleaned again.
      await this.markClean(cleaned.identity, `cleaned after PV ${target.pvName}`, () => true);
      if (!pv) log.info('volume of a PV deleted before it was cleaned is clean; discovery offers it again');
      return outcome;
    });
    if (!result.started) return;
    this.volumes.cleaning(target.pvUid, { target, capacityBytes: pv ? capacityBytes(pv) : 0, type: useJob ? 'job' : 'process' });
    const where = pv ? persistentVolumeReference(pv) : nodeReference(pass.me.nodeName);
    const message = pv
      ? `cleaning ${target.hostPath}${useJob ? ' in a Job' : ''}`
      : `PV ${target.pvName} was deleted before its volume was cleaned; cleaning ${target.hostPath} before it is offered again`;
    this.deps.events.normal(where, EventReasons.CleanupStarted.reason, message);
  }

  /**
   * A volume not cleaned: a gone volume of a PV being deleted that was never bound has
   * nothing to clean, so our finalizer goes; everything else stays, and is retried.
   */
  private async notCleaned(cleaned: Extract<CleanVolumeResult, { ok: false }>, fresh: V1PersistentVolume | undefined,
    target: CleanTarget, signal: AbortSignal): Promise<TaskOutcome> {
    // The recorded volume is not here. Nothing is cleaned in its name; its PV may go when the volume
    // holds nothing of anyone, or (device dialect) when any device is wiped before it is offered again.
    const gone = cleaned.kind === 'missing' || cleaned.kind === 'identity-mismatch';
    if (gone && fresh && (unused(fresh, this.recordedVolumes()(fresh)) || target.method.kind === 'device-wipe')) {
      // The record keeps the volume as it is (dirty once its PV is gone): it is cleaned if it ever comes back.
      const outcome = await this.letGo(fresh, false);
      if (outcome !== 'changed') return { ok: true };
    }
    // Say why it was stopped (the cleanup timeout, or shutdown): the cleaner only knows it was.
    const reason = signal.aborted ? `${cleaned.reason}: ${String(signal.reason)}` : cleaned.reason;
    return { ok: false, kind: cleaned.kind, reason };
  }

  /**
   * Lets a PV go without cleaning: our finalizer removed from one being deleted, else the PV
   * deleted with preconditions. When its volume is `unused` (the record never saw it used),
   * it is recorded clean once the PV is gone, so it is offered again without a clean.
   */
  private async letGo(pv: V1PersistentVolume, unusedVolume: boolean): Promise<string> {
    const { name, uid, resourceVersion, deletionTimestamp } = pv.metadata!;
    const outcome = deletionTimestamp
      ? await removeCleanupFinalizer(this.deps.api, name!, uid!)
      : await deletePersistentVolumeIfUnchanged(this.deps.api, name!, uid!, resourceVersion);
    if (unusedVolume && outcome !== 'changed') {
      await this.markClean(this.recordedVolumes()(pv)?.identity, `PV ${name} went without ever being bound`,
        (entry) => entry.state === 'offered' && entry.pvName === name);
    }
    return outcome;
  }

  /** The volume is clean: let the PV go (our finalizer removed, or in legacy mode the PV deleted). */
  private async finish(fresh: V1PersistentVolume, target: CleanTarget, log: Logger): Promise<TaskOutcome> {
    if (this.deps.mode === 'finalizer') {
      const outcome = await removeCleanupFinalizer(this.deps.api, target.pvName, target.pvUid);
      log.info({ outcome }, 'volume cleaned; cleanup finalizer removed, the PV goes and discovery offers the volume again');
      return outcome === 'changed' ? { ok: false, kind: 'failed', reason: 'the PV kept changing while its cleanup finalizer was removed' } : { ok: true };
    }
    let outcome;
    try {
      outcome = await deletePersistentVolumeIfUnchanged(this.deps.api, target.pvName, target.pvUid, fresh.metadata?.resourceVersion);
    } catch (err) {
      return { ok: false, kind: 'delete-failed', reason: `deleting PV "${target.pvName}": ${(err as Error).message}` };
    }
    log.info({ outcome }, 'volume cleaned; PV deleted so discovery offers it again');
    if (outcome === 'changed') return { ok: false, kind: 'stale', reason: 'the PV changed while its volume was cleaned; it is decided again' };
    return { ok: true };
  }

  /** Reports each finished cleanup once: metrics, Event (while its PV exists), log. */
  private reportFinished(pvsByUid: ReadonlyMap<string, V1PersistentVolume>): void {
    for (const [key, report] of [...this.volumes.cleanings()]) {
      const entry = this.deps.table.consume(key);
      if (!entry) continue;
      this.volumes.reported(key, entry.state === 'succeeded');
      this.recordOutcome(pvsByUid.get(key), report, entry);
    }
  }

  private recordOutcome(pv: V1PersistentVolume | undefined, info: CleaningReport, entry: CleanupEntry): void {
    const succeeded = entry.state === 'succeeded';
    const kind = entry.failureKind as CleanupFailureKind | undefined;
    const log = volumeLogger(this.deps.logger, { pv: info.target.pvName, path: info.target.hostPath, storageClass: info.target.storageClassName });
    if (kind === 'stale') {
      log.info({ reason: entry.reason }, 'cleanup not started: the PV changed; it is decided again');
      return;
    }
    const refusal = kind !== undefined ? REFUSAL_EVENTS[kind] : undefined;
    if (refusal) {
      this.deps.metrics.recordCleanupRefused(kind as RefusalKind);
      log.warn({ reason: entry.reason, kind }, 'volume not cleaned; retried after a backoff');
      if (pv) this.deps.events.warning(persistentVolumeReference(pv), refusal, entry.reason ?? 'not cleaned');
      return;
    }
    // Cleaned, then the PV delete failed: the volume is cleaned again before the next delete.
    const deleteFailed = kind === 'delete-failed';
    if (info.type === 'process') this.deps.metrics.recordProcessCleanupEnded(succeeded || deleteFailed);
    this.deps.metrics.recordCleanup({
      mode: modeAtPath(info.target.path),
      type: info.type,
      succeeded,
      capacityBytes: info.capacityBytes,
      cleanupCommand: cleanerCommand(info.target),
      seconds: (entry.durationMs ?? 0) / 1000,
    });
    if (succeeded) {
      log.info({ seconds: (entry.durationMs ?? 0) / 1000 }, 'cleanup succeeded');
      return;
    }
    const timedOut = /timed out/.test(entry.reason ?? '');
    log.warn({ reason: entry.reason, failures: entry.failures, retryAt: entry.retryAt }, 'cleanup failed; it is retried after a backoff');
    if (pv) {
      const reason = deleteFailed ? EventReasons.VolumeFailedDelete.reason
        : timedOut ? EventReasons.CleanupTimedOut.reason : EventReasons.CleanupFailed.reason;
      this.deps.events.warning(persistentVolumeReference(pv), reason, `${entry.reason ?? 'cleanup failed'} (attempt ${entry.failures}; retried after a backoff)`);
    }
  }
}

/** How a volume was cleaned, for its CleanupSucceeded Event. */
function cleanedHow(cleaner: string, inJob: boolean): string {
  if (cleaner === 'filesystem') return 'by emptying it in the agent';
  if (cleaner === 'wipe') return 'by zeroing it whole in the agent';
  return `with ${cleaner}${inJob ? ' in a Job' : ' in the agent'}`;
}

function capacityBytes(pv: V1PersistentVolume): number {
  return parseQuantity(pv.spec?.capacity?.storage) ?? 0;
}
