import type { V1Job, V1Pod } from '@kubernetes/client-node';
import { Job } from 'kubernetes-models/batch/v1/Job';
import {
  buildCleanupJob,
  cleanerWords,
  cleanupJobName,
  cleanupJobOutcome,
  type CleanupJobInput,
} from '../../../src/runtime/cleanup/cleanup-job';

const input: CleanupJobInput = {
  pvName: 'local-pv-1a2b3c4d',
  pvUid: '0b7b1a2e-7c1e-4a57-9d0e-6f3a0c2b9d11',
  path: '/mnt/fast-disks/sdb',
  hostDir: '/mnt/disks',
  mountDir: '/mnt/fast-disks',
  blockCleanerCommand: ['/scripts/shred.sh', '2'],
  nodeName: 'worker-1',
  namespace: 'storage',
  image: 'registry.example/lvp:1.0.0',
  tolerations: [{ key: 'storage', operator: 'Exists', effect: 'NoSchedule' }],
  timeoutMs: 3_600_000,
  startTime: new Date('2026-01-02T03:04:05.000Z'),
};

describe('the cleanup Job', () => {
  const job = buildCleanupJob(input);
  const pod = job.spec!.template.spec!;
  const container = pod.containers[0];

  test('is a valid batch/v1 Job', () => {
    expect(() => new Job(job as never).validate()).not.toThrow();
  });

  test('is named cleanup-<pv> in the given namespace', () => {
    expect(job.metadata).toMatchObject({ name: 'cleanup-local-pv-1a2b3c4d', namespace: 'storage' });
  });

  test('carries the upstream labels on the Job and its Pods', () => {
    const labels = { 'kubernetes.io/hostname': 'worker-1', 'pv': 'local-pv-1a2b3c4d', 'pvuuid': input.pvUid };
    expect(job.metadata?.labels).toEqual(labels);
    expect(job.spec?.template.metadata?.labels).toEqual(labels);
  });

  test('carries the device and start-time annotations', () => {
    expect(job.metadata?.annotations).toMatchObject({ 'device': '/mnt/fast-disks/sdb', 'start-time': '2026-01-02T03:04:05.000Z' });
  });

  test('runs the class command privileged with LOCAL_PV_BLKDEVICE, from JOB_CONTAINER_IMAGE', () => {
    expect(container).toMatchObject({
      name: 'cleaner',
      image: 'registry.example/lvp:1.0.0',
      command: ['/scripts/shred.sh', '2'],
      env: [{ name: 'LOCAL_PV_BLKDEVICE', value: '/mnt/fast-disks/sdb' }],
      securityContext: { privileged: true },
    });
  });

  test('ends, on a failure, with the last lines of its output as its status message', () => {
    expect(container.terminationMessagePolicy).toBe('FallbackToLogsOnError');
  });

  test('mounts the class hostDir at mountDir and /dev', () => {
    expect(pod.volumes).toEqual([
      { name: 'class-dir', hostPath: { path: '/mnt/disks' } },
      { name: 'dev', hostPath: { path: '/dev' } },
    ]);
    expect(container.volumeMounts).toEqual([
      { name: 'class-dir', mountPath: '/mnt/fast-disks', mountPropagation: 'HostToContainer' },
      { name: 'dev', mountPath: '/dev' },
    ]);
  });

  test('is pinned to the node by name and tolerates jobTolerations', () => {
    expect(pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms).toEqual([
      { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['worker-1'] }] },
    ]);
    expect(pod.tolerations).toEqual([{ key: 'storage', operator: 'Exists', effect: 'NoSchedule' }]);
  });

  test('runs once and is killed after the cleanup timeout', () => {
    expect(pod.restartPolicy).toBe('Never');
    expect(job.spec?.backoffLimit).toBe(0);
    expect(job.spec?.activeDeadlineSeconds).toBe(3600);
  });

  test('leaves its removal to the controller (no TTL)', () => {
    expect(job.spec?.ttlSecondsAfterFinished).toBeUndefined();
  });

  test('a long PV name gives a Job name and labels of at most 63 characters, distinct per PV', () => {
    const long = `local-worker-1-${'pci-0000-3c-00.0-sas-0x5000c500a1b2c3d4-lun-0-'.repeat(3)}`;
    const a = buildCleanupJob({ ...input, pvName: `${long}a` });
    const b = buildCleanupJob({ ...input, pvName: `${long}b` });
    expect(a.metadata!.name!.length).toBeLessThanOrEqual(63);
    expect(a.metadata!.name).not.toBe(b.metadata!.name);
    expect(a.metadata!.labels!.pv.length).toBeLessThanOrEqual(63);
    expect(a.metadata!.annotations!['local.storage.k8s.io/pv']).toBe(`${long}a`);
    expect(() => new Job(a as never).validate()).not.toThrow();
  });

  test('a short name is exactly cleanup-<pv>', () => {
    expect(cleanupJobName('local-pv-abc')).toBe('cleanup-local-pv-abc');
  });
});

describe('the outcome of a cleanup Job', () => {
  const job = (status: V1Job['status']): V1Job => ({ metadata: { name: 'cleanup-x' }, status });

  test('is running while nothing finished', () => {
    expect(cleanupJobOutcome(job({ active: 1 }))).toEqual({ state: 'running' });
  });

  test('succeeded once complete', () => {
    expect(cleanupJobOutcome(job({ succeeded: 1, conditions: [{ type: 'Complete', status: 'True' }] }))).toEqual({ state: 'succeeded' });
  });

  test('failed with the reason from its Failed condition', () => {
    expect(cleanupJobOutcome(job({ failed: 1, conditions: [{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded', message: 'Job was active longer than specified deadline' }] })))
      .toEqual({ state: 'failed', reason: 'Job cleanup-x failed: DeadlineExceeded Job was active longer than specified deadline' });
  });

  test('failed when its pod failed before the condition is written', () => {
    expect(cleanupJobOutcome(job({ failed: 1 })).state).toBe('failed');
  });
});

describe('what a failed cleanup Job\'s cleaner said', () => {
  const pod = (created: string, terminated?: object): V1Pod => ({
    metadata: { creationTimestamp: new Date(created) },
    status: { containerStatuses: [{ name: 'cleaner', image: 'x', imageID: '', ready: false, restartCount: 0, state: terminated ? { terminated } : {} } as never] },
  });

  test('is its newest ended pod\'s reason, exit code and last output lines, on one line', () => {
    const older = pod('2026-01-01T00:00:00Z', { exitCode: 2, reason: 'Error', message: 'earlier try' });
    const newer = pod('2026-01-01T00:01:00Z', { exitCode: 1, reason: 'Error', message: 'shred: /dev/sdb: Input/output error\nshred: failed\n' });
    expect(cleanerWords([older, newer])).toBe('Error (exit 1): shred: /dev/sdb: Input/output error | shred: failed');
  });

  test('is cut at 500 characters', () => {
    const words = cleanerWords([pod('2026-01-01T00:00:00Z', { exitCode: 1, reason: 'Error', message: 'x'.repeat(1000) })])!;
    expect(words).toHaveLength(500);
    expect(words.endsWith('…')).toBe(true);
  });

  test('is nothing while no pod has ended', () => {
    expect(cleanerWords([pod('2026-01-01T00:00:00Z')])).toBeUndefined();
    expect(cleanerWords([])).toBeUndefined();
  });
});
