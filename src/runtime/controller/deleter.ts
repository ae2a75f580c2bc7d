/**
 * The deleter: recycles this node's Released volumes, for both dialects.
 *
 * For each PV of ours that `decideRelease` says to clean, one cleanup task goes
 * into the process table (keyed by PV UID): re-read the PV and re-check it,
 * clean the volume (in this process, or in a Job), then delete the PV with a UID
 * precondition. Discovery offers the volume again with a new PV. The PV is
 * deleted only after a successful cleanup, so a crash at any point leaves it
 * Released and the next run cleans it again from the start.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { ProvisionerConfig, VolumeMode } from '../../config';
import {
  buildCleanupJob,
  cleanupJobName,
  CleanTarget,
  cleanupJobOutcome,
  cleanVolume,
  CleanupEntry,
  CleanupProcessTable,
  ConfiguredVolumes,
  decideRelease,
  FS_CLEANER_COMMAND,
  JOB_LABEL_PV_UID,
  NodeIdentity,
  recheckBeforeCleaning,
  resolveVolumePath,
  TaskOutcome,
} from '../cleanup';
import { isMountPoint, MountTable, readMountTable } from '../discovery';
import { KubeApi } from '../kube/api-client';
import { EventRecorder, nodeReference, persistentVolumeReference } from '../kube/event-recorder';
import { deletePersistentVolumeIfUnchanged } from '../kube/pv-writes';
import { EventReasons, Logger, ProvisionerMetrics, volumeLogger } from '../observability';
import { parseQuantity } from '../volume';

export interface JobCleaning {
  readonly namespace: string;
  readonly image: string;
  readonly config: Pick<ProvisionerConfig, 'jobTolerations' | 'cleanupTimeout'>;
  /** How often a running Job's status is read. */
  readonly pollIntervalMs?: number;
}

export interface DeleterDeps {
  readonly api: KubeApi;
  readonly table: CleanupProcessTable;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  /** The mount table, read before a directory-dialect directory is cleaned. @default /proc/self/mountinfo */
  readonly readMountTable?: () => Promise<MountTable>;
}

export interface DeleterPass {
  readonly me: NodeIdentity;
  readonly configured: ConfiguredVolumes;
  readonly pvs: readonly V1PersistentVolume[];
  /** Clean in Jobs instead of in this process (directory dialect's `useJobForCleaning`). */
  readonly jobs?: JobCleaning;
}

/** What a cleanup of a target needs, for metrics and logs. */
function cleanerCommand(target: CleanTarget): readonly string[] {
  if (target.method.kind === 'device-wipe') return ['wipe'];
  return target.volumeMode === 'Block' ? target.method.blockCleanerCommand : [];
}

export class Deleter {
  /** PV UID -> what the metrics need once its cleanup is reported. */
  private readonly started = new Map<string, { target: CleanTarget; capacityBytes: number; type: 'process' | 'job' }>();
  /** UIDs of PVs cleaned and deleted here, which a cache may still list as Released for a moment. */
  private readonly deleted = new Set<string>();
  /**
   * Released PVs of ours with reclaim policy Delete, by UID, until their cleanup
   * succeeds. One that disappears first (deleted by someone else) leaves its
   * volume dirty: it is cleaned anyway before discovery may offer it again.
   */
  private readonly awaitingCleanup = new Map<string, CleanTarget>();
  /** Names of those whose PV is gone: discovery must not offer them yet. */
  private orphanNames = new Set<string>();

  constructor(private readonly deps: DeleterDeps) {}

  /** Starts cleanups for this pass's Released PVs and reports those that finished. */
  run(pass: DeleterPass): void {
    const byUid = new Map(pass.pvs.map((pv) => [pv.metadata?.uid ?? '', pv]));
    this.reportFinished(byUid);
    for (const uid of this.deleted) if (!byUid.has(uid)) this.deleted.delete(uid);
    for (const pv of pass.pvs) {
      const uid = pv.metadata?.uid ?? '';
      if (this.deleted.has(uid)) continue;
      const decision = decideRelease(pv, pass.me, pass.configured);
      if (decision.action === 'warn') {
        this.deps.events.warning(persistentVolumeReference(pv), EventReasons.ReclaimPolicyUnsupported.reason, decision.reason);
      } else if (decision.action === 'clean') {
        this.awaitingCleanup.set(uid, decision.target);
        this.start(pv, decision.target, pass);
      } else {
        this.awaitingCleanup.delete(uid);
      }
    }
    this.cleanOrphans(byUid, pass);
    this.deps.table.retainOnly(new Set([...byUid.keys(), ...this.awaitingCleanup.keys()]));
    const counts = this.deps.table.counts();
    this.deps.metrics.setProcTable({ running: counts.running + counts.queued, succeeded: counts.succeeded, failed: counts.failed });
  }

  /** True while a cleanup of this PV name is queued or running, or its volume still waits for one. */
  isCleaning(pvName: string): boolean {
    return this.deps.table.isActiveForName(pvName) || this.orphanNames.has(pvName);
  }

  /**
   * Volumes whose Released PV vanished before we cleaned it (an admin deleted
   * it): upstream offers them again with the old data; we clean them first.
   */
  private cleanOrphans(byUid: ReadonlyMap<string, V1PersistentVolume>, pass: DeleterPass): void {
    this.orphanNames = new Set();
    for (const [uid, target] of this.awaitingCleanup) {
      if (byUid.has(uid)) continue;
      this.orphanNames.add(target.pvName);
      const state = this.deps.table.get(uid)?.state;
      if (state === 'queued' || state === 'running') continue;
      this.start(undefined, target, pass);
    }
  }

  /** Starts a cleanup of a Released PV, or with `pv` undefined of the volume of one that vanished uncleaned. */
  private start(pv: V1PersistentVolume | undefined, target: CleanTarget, pass: DeleterPass): void {
    const useJob = pass.jobs !== undefined && target.method.kind === 'class';
    const log = volumeLogger(this.deps.logger, { pv: target.pvName, path: target.hostPath, storageClass: target.storageClassName });
    const result = this.deps.table.start(target.pvUid, target.pvName, async (signal) => {
      if (pv) {
        const fresh = await this.deps.api.getPersistentVolume(target.pvName);
        const recheck = recheckBeforeCleaning(fresh, target, pass.me, pass.configured);
        if (!recheck.ok) return { ok: false, reason: `not cleaned: ${recheck.reason}` };
      }
      const unmounted = pass.configured.dialect === 'directory' ? await this.unmountedDirectory(target) : undefined;
      if (unmounted) return { ok: false, reason: `not cleaned: ${unmounted}` };
      log.info({ job: useJob, pvDeleted: !pv }, 'cleaning released volume');
      const cleaned = useJob ? await this.cleanInJob(target, pass, signal, log) : await this.cleanInProcess(target, signal, log);
      // Say why it was stopped (the cleanup timeout, or shutdown): the cleaner only knows it was.
      if (!cleaned.ok) return signal.aborted ? { ok: false, reason: `${cleaned.reason}: ${String(signal.reason)}` } : cleaned;
      if (!pv) {
        log.info('volume of a PV deleted while Released cleaned; discovery offers it again');
        return { ok: true };
      }
      const outcome = await deletePersistentVolumeIfUnchanged(this.deps.api, target.pvName, target.pvUid);
      log.info({ outcome }, 'volume cleaned; PV deleted so discovery offers it again');
      return { ok: true };
    });
    if (!result.started) return;
    this.started.set(target.pvUid, { target, capacityBytes: pv ? capacityBytes(pv) : 0, type: useJob ? 'job' : 'process' });
    const where = pv ? persistentVolumeReference(pv) : nodeReference(pass.me.nodeName);
    const message = pv
      ? `cleaning ${target.hostPath}${useJob ? ' in a Job' : ''}`
      : `PV ${target.pvName} was deleted while Released, before its volume was cleaned; cleaning ${target.hostPath} before it is offered again`;
    this.deps.events.normal(where, EventReasons.CleanupStarted.reason, message);
  }

  /**
   * A directory-dialect directory volume is a mount point. One that is not any
   * more has lost its disk: what lies beneath is the node's own directory, and
   * deleting the PV would let the disk, once back, be offered with its data.
   */
  private async unmountedDirectory(target: CleanTarget): Promise<string | undefined> {
    const resolved = await resolveVolumePath(target.path, target.classDir);
    // Missing paths, symlinks and devices are the cleaner's to refuse or clean.
    if (!resolved.ok || resolved.kind !== 'directory') return undefined;
    const table = await (this.deps.readMountTable ?? readMountTable)();
    if (isMountPoint(resolved.path, table)) return undefined;
    return `"${target.path}" is no longer a mount point: its volume is gone (unmounted or removed), so the PV is kept`;
  }

  private async cleanInProcess(target: CleanTarget, signal: AbortSignal, log: Logger): Promise<TaskOutcome> {
    const mode: VolumeMode = target.volumeMode;
    const r = await cleanVolume(target, {
      signal,
      onOutput: (line, stream) => log.info({ stream }, line),
      onWritten: (bytes) => this.deps.metrics.addCleanupBytes(mode, 'process', bytes),
    });
    return r.ok ? { ok: true } : { ok: false, reason: r.reason };
  }

  /** Runs the cleanup as upstream's Job: create (or reuse one for this very PV UID), wait, delete the Job. */
  private async cleanInJob(target: CleanTarget, pass: DeleterPass, signal: AbortSignal, log: Logger): Promise<TaskOutcome> {
    const jobs = pass.jobs!;
    const method = target.method;
    if (method.kind !== 'class' || target.hostDir === undefined) return { ok: false, reason: 'a Job cleans directory-dialect volumes only' };
    const resolved = await resolveVolumePath(target.path, target.classDir);
    if (!resolved.ok) return { ok: false, reason: resolved.reason };
    const name = cleanupJobName(target.pvName);
    const existing = await this.deps.api.getJob(jobs.namespace, name);
    // A Job left by an earlier run counts only if it cleaned this very PV (same UID).
    if (existing && existing.metadata?.labels?.[JOB_LABEL_PV_UID] !== target.pvUid) {
      await this.deps.api.deleteJob(jobs.namespace, name);
      await waitUntil(async () => (await this.deps.api.getJob(jobs.namespace, name)) === undefined, signal, jobs.pollIntervalMs);
    }
    if (!existing || existing.metadata?.labels?.[JOB_LABEL_PV_UID] !== target.pvUid) {
      await this.deps.api.createJob(jobs.namespace, buildCleanupJob({
        pvName: target.pvName,
        pvUid: target.pvUid,
        volumeKind: resolved.kind,
        path: target.path,
        hostDir: target.hostDir,
        mountDir: target.classDir,
        blockCleanerCommand: resolved.kind === 'directory' ? FS_CLEANER_COMMAND : method.blockCleanerCommand,
        nodeName: pass.me.nodeName,
        namespace: jobs.namespace,
        image: jobs.image,
        tolerations: jobs.config.jobTolerations,
        timeoutMs: jobs.config.cleanupTimeout,
        startTime: new Date(),
      }));
      log.info({ job: name }, 'cleanup Job created');
    }
    let outcome = cleanupJobOutcome(existing ?? {});
    await waitUntil(async () => {
      const job = await this.deps.api.getJob(jobs.namespace, name);
      outcome = job ? cleanupJobOutcome(job) : { state: 'failed', reason: `Job ${name} disappeared before it finished` };
      return outcome.state !== 'running';
    }, signal, jobs.pollIntervalMs);
    // Delete the Job either way: a failed one is retried with a new Job after the backoff.
    await this.deps.api.deleteJob(jobs.namespace, name);
    return outcome.state === 'succeeded' ? { ok: true } : { ok: false, reason: outcome.state === 'failed' ? outcome.reason : 'Job still running' };
  }

  /** Reports each finished cleanup once: metrics, Event (while its PV exists), log. */
  private reportFinished(pvsByUid: ReadonlyMap<string, V1PersistentVolume>): void {
    for (const [uid, info] of this.started) {
      const entry = this.deps.table.consume(uid);
      if (!entry) continue;
      this.started.delete(uid);
      if (entry.state === 'succeeded') {
        this.deleted.add(uid);
        this.awaitingCleanup.delete(uid);
      }
      this.recordOutcome(pvsByUid.get(uid), info, entry);
    }
  }

  private recordOutcome(pv: V1PersistentVolume | undefined, info: { target: CleanTarget; capacityBytes: number; type: 'process' | 'job' }, entry: CleanupEntry): void {
    const succeeded = entry.state === 'succeeded';
    this.deps.metrics.recordCleanup({
      mode: info.target.volumeMode,
      type: info.type,
      succeeded,
      capacityBytes: info.capacityBytes,
      cleanupCommand: cleanerCommand(info.target),
      seconds: (entry.durationMs ?? 0) / 1000,
    });
    const log = volumeLogger(this.deps.logger, { pv: info.target.pvName, path: info.target.hostPath, storageClass: info.target.storageClassName });
    if (succeeded) {
      log.info({ seconds: (entry.durationMs ?? 0) / 1000 }, 'cleanup succeeded');
      return;
    }
    const timedOut = /timed out/.test(entry.reason ?? '');
    log.warn({ reason: entry.reason, failures: entry.failures, retryAt: entry.retryAt }, 'cleanup failed; it is retried after a backoff');
    if (pv) {
      const reason = timedOut ? EventReasons.CleanupTimedOut.reason : EventReasons.CleanupFailed.reason;
      this.deps.events.warning(persistentVolumeReference(pv), reason, `${entry.reason ?? 'cleanup failed'} (attempt ${entry.failures}; retried after a backoff)`);
    }
  }
}

function capacityBytes(pv: V1PersistentVolume): number {
  return parseQuantity(pv.spec?.capacity?.storage) ?? 0;
}

async function waitUntil(done: () => Promise<boolean>, signal: AbortSignal, intervalMs = 1000): Promise<void> {
  while (!(await done())) {
    if (signal.aborted) throw new Error(`aborted: ${String(signal.reason)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
