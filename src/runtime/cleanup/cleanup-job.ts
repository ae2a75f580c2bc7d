/**
 * Cleanup in a Job (`useJobForCleaning`), as upstream, built as plain data; the
 * controller creates it, watches it, and deletes it (Job first, then the PV).
 *
 * Upstream's Job, kept: name `cleanup-<pv>`, labels `kubernetes.io/hostname`,
 * `pv`, `pvuuid`, annotations `device` and `start-time`, a privileged container
 * `cleaner` running the class's command with `LOCAL_PV_BLKDEVICE`, the class
 * directory mounted from the host at mountDir. As upstream, Jobs clean Block
 * volumes only; Filesystem volumes are emptied in the agent (by handle). Fixed: `/dev` is mounted for
 * every block cleanup, `jobTolerations` are applied, it is pinned to the Node by
 * name (upstream used the hostname label, which need not equal the node name),
 * it runs once (restartPolicy Never, backoffLimit 0; the controller retries with
 * backoff and reports each failure), and it is killed after the cleanup timeout.
 */
import { createHash } from 'node:crypto';
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { Toleration } from '../../config';
import { HOSTNAME_LABEL } from '../well-known';

export const CLEANUP_JOB_PREFIX = 'cleanup-';
export const JOB_CONTAINER_NAME = 'cleaner';
export const JOB_LABEL_HOSTNAME = HOSTNAME_LABEL;
export const JOB_LABEL_PV = 'pv';
export const JOB_LABEL_PV_UID = 'pvuuid';
export const JOB_ANNOTATION_DEVICE = 'device';
export const JOB_ANNOTATION_START_TIME = 'start-time';
/** Ours: the full PV name, when the `pv` label had to be shortened. */
export const JOB_ANNOTATION_PV_NAME = 'local.storage.k8s.io/pv';

const MAX_LABEL_VALUE = 63;

export interface CleanupJobInput {
  readonly pvName: string;
  readonly pvUid: string;
  /** The entry as the container sees it (mountDir/entry). */
  readonly path: string;
  /** The class directory on the host (mounted into the Job)… */
  readonly hostDir: string;
  /** …at this path. */
  readonly mountDir: string;
  /** The class's command, run on the device. */
  readonly blockCleanerCommand: readonly string[];
  readonly nodeName: string;
  /** MY_NAMESPACE. */
  readonly namespace: string;
  /** JOB_CONTAINER_IMAGE. */
  readonly image: string;
  /** `jobTolerations`. */
  readonly tolerations: readonly Toleration[];
  /** The cleanup timeout; the Job is killed after it. 0 = none. */
  readonly timeoutMs: number;
  /** When the cleanup was started (upstream's `start-time` annotation). */
  readonly startTime: Date;
}

function shortHash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 8);
}

/** `s` if it fits in `max` characters, else a prefix and a short hash of the whole (still a valid name). */
function fitName(s: string, max: number): string {
  if (s.length <= max) return s;
  const prefix = s.slice(0, max - 9).replace(/[^A-Za-z0-9]+$/, '');
  return `${prefix}-${shortHash(s)}`;
}

/**
 * The Job's name: `cleanup-<pv>`, shortened with a hash when longer than 63
 * characters (the Job controller copies it into a label on the Job's Pods).
 */
export function cleanupJobName(pvName: string): string {
  return fitName(`${CLEANUP_JOB_PREFIX}${pvName}`, MAX_LABEL_VALUE);
}

/** The labels that find a PV's cleanup Job (values shortened to label length where needed). */
export function cleanupJobLabels(pvName: string, pvUid: string, nodeName: string): Record<string, string> {
  return {
    [JOB_LABEL_HOSTNAME]: fitName(nodeName, MAX_LABEL_VALUE),
    [JOB_LABEL_PV]: fitName(pvName, MAX_LABEL_VALUE),
    [JOB_LABEL_PV_UID]: pvUid,
  };
}

/** The cleanup Job for one Released volume. */
export function buildCleanupJob(input: CleanupJobInput): V1Job {
  const labels = cleanupJobLabels(input.pvName, input.pvUid, input.nodeName);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: cleanupJobName(input.pvName),
      namespace: input.namespace,
      labels,
      annotations: {
        [JOB_ANNOTATION_DEVICE]: input.path,
        [JOB_ANNOTATION_START_TIME]: input.startTime.toISOString(),
        [JOB_ANNOTATION_PV_NAME]: input.pvName,
      },
    },
    spec: {
      backoffLimit: 0,
      ...(input.timeoutMs > 0 ? { activeDeadlineSeconds: Math.ceil(input.timeoutMs / 1000) } : {}),
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [input.nodeName] }] }],
              },
            },
          },
          tolerations: input.tolerations.map((t) => ({ ...t })),
          containers: [{
            name: JOB_CONTAINER_NAME,
            image: input.image,
            command: [...input.blockCleanerCommand],
            env: [{ name: 'LOCAL_PV_BLKDEVICE', value: input.path }],
            // A failing cleaner's last output lines become its status message: what the agent's Event can quote.
            terminationMessagePolicy: 'FallbackToLogsOnError',
            securityContext: { privileged: true },
            volumeMounts: [
              { name: 'class-dir', mountPath: input.mountDir, mountPropagation: 'HostToContainer' },
              { name: 'dev', mountPath: '/dev' },
            ],
          }],
          volumes: [
            { name: 'class-dir', hostPath: { path: input.hostDir } },
            { name: 'dev', hostPath: { path: '/dev' } },
          ],
        },
      },
    },
  };
}

/** The longest quote of a cleaner's words in a reason. */
const MAX_CLEANER_WORDS = 500;

/**
 * What a failed cleanup Job's cleaner said: its container's end (reason, exit code) and its
 * termination message (the last lines of its output: FallbackToLogsOnError), from the
 * newest of the Job's pods; undefined when none has ended.
 */
export function cleanerWords(pods: readonly V1Pod[]): string | undefined {
  const createdAt = (p: V1Pod) => (p.metadata?.creationTimestamp ? new Date(p.metadata.creationTimestamp).getTime() : 0);
  const ended = pods
    .map((p) => ({ at: createdAt(p), end: p.status?.containerStatuses?.[0]?.state?.terminated }))
    .filter((p) => p.end !== undefined)
    .sort((a, b) => b.at - a.at)[0]?.end;
  if (!ended) return undefined;
  const message = (ended.message ?? '').trim().replace(/\s*\n\s*/g, ' | ');
  const words = `${ended.reason ?? 'ended'} (exit ${ended.exitCode})${message ? `: ${message}` : ''}`;
  return words.length <= MAX_CLEANER_WORDS ? words : `${words.slice(0, MAX_CLEANER_WORDS - 1)}…`;
}

export type JobOutcome =
  | { readonly state: 'running' }
  | { readonly state: 'succeeded' }
  | { readonly state: 'failed'; readonly reason: string };

/** Reads a cleanup Job's status: still running, succeeded, or failed (and why). */
export function cleanupJobOutcome(job: V1Job): JobOutcome {
  const conditions = job.status?.conditions ?? [];
  const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True');
  if (failed) return { state: 'failed', reason: `Job ${job.metadata?.name ?? ''} failed: ${failed.reason ?? ''} ${failed.message ?? ''}`.trim() };
  if (conditions.some((c) => c.type === 'Complete' && c.status === 'True') || (job.status?.succeeded ?? 0) > 0) {
    return { state: 'succeeded' };
  }
  if ((job.status?.failed ?? 0) > 0) {
    return { state: 'failed', reason: `Job ${job.metadata?.name ?? ''} failed: its pod failed` };
  }
  return { state: 'running' };
}
