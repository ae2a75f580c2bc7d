/**
 * Cleaning a Block volume in upstream's Job (the directory dialect's
 * `useJobForCleaning`): the class's command runs in a Job on this node, and the
 * deleter's cleanup waits for it as for a process of its own.
 */
import type { ProvisionerConfig } from '../../config';
import {
  buildCleanupJob,
  cleanerWords,
  CleanerStalled,
  cleanupJobName,
  cleanupJobOutcome,
  CleanTarget,
  JOB_LABEL_PV_UID,
  TaskOutcome,
} from '../cleanup';
import type { KubeApi } from '../kube/api-client';
import type { Logger } from '../observability';

/** Where and how cleanup Jobs run. */
export interface JobCleaning {
  readonly namespace: string;
  readonly image: string;
  readonly config: Pick<ProvisionerConfig, 'jobTolerations' | 'cleanupTimeout'>;
  /** How often a running Job's status is read. */
  readonly pollIntervalMs?: number;
}

/** What a Job cleaning needs from the deleter. */
export interface JobCleaningDeps {
  readonly api: KubeApi;
  readonly logger: Logger;
}

/** Runs the class's command in upstream's Job: create (or reuse one for this very PV UID), wait, delete the Job. */
export async function cleanInJob(
  deps: JobCleaningDeps, target: CleanTarget, jobs: JobCleaning, nodeName: string, signal: AbortSignal,
): Promise<TaskOutcome> {
  const method = target.method;
  if (method.kind !== 'class' || target.hostDir === undefined) return { ok: false, reason: 'a Job cleans directory-dialect Block volumes only' };
  const name = cleanupJobName(target.pvName);
  const existing = await deps.api.getJob(jobs.namespace, name);
  // A Job left by an earlier run counts only if it cleaned this very PV (same UID).
  const reusable = existing?.metadata?.labels?.[JOB_LABEL_PV_UID] === target.pvUid;
  if (existing && !reusable) {
    await deps.api.deleteJob(jobs.namespace, name);
    await waitUntil(async () => (await deps.api.getJob(jobs.namespace, name)) === undefined, signal, jobs.pollIntervalMs);
  }
  if (!reusable) {
    await deps.api.createJob(jobs.namespace, buildCleanupJob({
      pvName: target.pvName,
      pvUid: target.pvUid,
      path: target.path,
      hostDir: target.hostDir,
      mountDir: target.classDir,
      blockCleanerCommand: method.blockCleanerCommand,
      nodeName,
      namespace: jobs.namespace,
      image: jobs.image,
      tolerations: jobs.config.jobTolerations,
      timeoutMs: jobs.config.cleanupTimeout,
      startTime: new Date(),
    }));
    deps.logger.info({ job: name, pv: target.pvName }, 'cleanup Job created');
  }
  let outcome = cleanupJobOutcome(existing ?? {});
  try {
    await waitUntil(async () => {
      const job = await deps.api.getJob(jobs.namespace, name);
      outcome = job ? cleanupJobOutcome(job) : { state: 'failed', reason: `Job ${name} disappeared before it finished` };
      return outcome.state !== 'running';
    }, signal, jobs.pollIntervalMs);
  } catch (e) {
    // A stalled Job is stopped as a stalled process is; at shutdown it runs on, and the next agent waits for it.
    if (signal.reason instanceof CleanerStalled) await deps.api.deleteJob(jobs.namespace, name);
    throw e;
  }
  // What the cleaner said, read before the Job (and its pod) is deleted: a failed one is retried with a new Job after the backoff.
  const said = outcome.state === 'failed' ? await cleanerWordsOf(deps, jobs.namespace, name) : undefined;
  await deps.api.deleteJob(jobs.namespace, name);
  if (outcome.state === 'succeeded') return { ok: true };
  return { ok: false, reason: outcome.state === 'failed' ? `${outcome.reason}${said ? `; the cleaner: ${said}` : ''}` : 'Job still running' };
}

/**
 * How the failed Job's cleaner ended, from its pod; undefined where pods may not be
 * listed (the Helm chart's RBAC grants nothing on pods) or none has ended.
 */
async function cleanerWordsOf(deps: JobCleaningDeps, namespace: string, jobName: string): Promise<string | undefined> {
  try {
    return cleanerWords((await deps.api.listJobPods(namespace, jobName)).items);
  } catch (err) {
    deps.logger.debug({ job: jobName, err: String(err) }, 'the failed Job\'s pod could not be read; its Event gives the Job\'s condition only');
    return undefined;
  }
}

async function waitUntil(done: () => Promise<boolean>, signal: AbortSignal, intervalMs = 1000): Promise<void> {
  while (!(await done())) {
    if (signal.aborted) throw new Error(`aborted: ${String(signal.reason)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
