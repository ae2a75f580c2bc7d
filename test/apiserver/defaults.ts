/**
 * Server-side defaulting the real API server applies on create and update, for
 * the fields clients read back (so `kubectl apply` twice and round trips behave
 * as against a cluster). Mutates the object it is given.
 */
import { ResourceType, groupVersion } from './resources';

function defaultContainer(c: any): void {
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.imagePullPolicy ??= typeof c.image === 'string' && (c.image.endsWith(':latest') || !/:[^/]+$/.test(c.image.split('@')[0])) ? 'Always' : 'IfNotPresent';
  c.resources ??= {};
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
}

function defaultPodSpec(spec: any, restartPolicy = 'Always'): void {
  if (!spec) return;
  spec.restartPolicy ??= restartPolicy;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.securityContext ??= {};
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) defaultContainer(c);
  if (spec.serviceAccountName && !spec.serviceAccount) spec.serviceAccount = spec.serviceAccountName;
}

const DEFAULTERS: Record<string, (o: any) => void> = {
  'v1/PersistentVolume': (o) => {
    o.spec ??= {};
    o.spec.persistentVolumeReclaimPolicy ??= 'Retain';
    o.spec.volumeMode ??= 'Filesystem';
  },
  'v1/PersistentVolumeClaim': (o) => {
    o.spec ??= {};
    o.spec.volumeMode ??= 'Filesystem';
  },
  'v1/Namespace': (o) => {
    o.metadata.labels = { ...o.metadata.labels, 'kubernetes.io/metadata.name': o.metadata.name };
    o.spec ??= {};
    o.spec.finalizers ??= ['kubernetes'];
  },
  'v1/Pod': (o) => defaultPodSpec(o.spec),
  'v1/Service': (o) => {
    o.spec ??= {};
    o.spec.type ??= 'ClusterIP';
    o.spec.sessionAffinity ??= 'None';
    for (const p of o.spec.ports ?? []) {
      p.protocol ??= 'TCP';
      p.targetPort ??= p.port;
    }
  },
  'storage.k8s.io/v1/StorageClass': (o) => {
    o.reclaimPolicy ??= 'Delete';
    o.volumeBindingMode ??= 'Immediate';
  },
  'batch/v1/Job': (o) => {
    o.spec ??= {};
    o.spec.parallelism ??= 1;
    o.spec.completions ??= 1;
    o.spec.backoffLimit ??= 6;
    o.spec.completionMode ??= 'NonIndexed';
    o.spec.suspend ??= false;
    o.spec.podReplacementPolicy ??= 'TerminatingOrFailed';
    defaultPodSpec(o.spec.template?.spec, 'Always');
  },
  'apps/v1/Deployment': (o) => {
    o.spec ??= {};
    o.spec.replicas ??= 1;
    o.spec.revisionHistoryLimit ??= 10;
    o.spec.progressDeadlineSeconds ??= 600;
    o.spec.strategy ??= { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' } };
    defaultPodSpec(o.spec.template?.spec);
  },
  'apps/v1/DaemonSet': (o) => {
    o.spec ??= {};
    o.spec.revisionHistoryLimit ??= 10;
    o.spec.updateStrategy ??= { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } };
    defaultPodSpec(o.spec.template?.spec);
  },
};

/** Applies the kind's defaults in place. */
export function applyDefaults(r: ResourceType, obj: any): void {
  DEFAULTERS[`${groupVersion(r)}/${r.kind}`]?.(obj);
}

/** Job creation also stamps the selector and template labels from the Job's uid, as the batch registry does. */
export function applyCreateDefaults(r: ResourceType, obj: any): void {
  if (r.group === 'batch' && r.kind === 'Job' && !obj.spec?.manualSelector) {
    const uid = obj.metadata.uid;
    const name = obj.metadata.name;
    obj.spec.selector ??= { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
    const tmeta = (obj.spec.template ??= {}).metadata ??= {};
    tmeta.labels = {
      ...tmeta.labels,
      'batch.kubernetes.io/controller-uid': uid,
      'batch.kubernetes.io/job-name': name,
      'controller-uid': uid,
      'job-name': name,
    };
  }
  if (r.group === '' && r.kind === 'PersistentVolume') obj.status = { phase: 'Pending' };
  if (r.group === '' && r.kind === 'PersistentVolumeClaim') obj.status = { phase: 'Pending' };
  if (r.group === '' && r.kind === 'Namespace') obj.status = { phase: 'Active' };
  if (r.group === '' && r.kind === 'Pod') obj.status = { phase: 'Pending', qosClass: 'BestEffort' };
  if (r.group === '' && r.kind === 'Service' && obj.spec?.type !== 'ExternalName') {
    obj.spec.clusterIP ??= nextClusterIp();
    obj.spec.clusterIPs ??= [obj.spec.clusterIP];
    obj.spec.ipFamilies ??= ['IPv4'];
    obj.spec.ipFamilyPolicy ??= 'SingleStack';
    obj.status ??= { loadBalancer: {} };
  }
}

let lastIp = 10;
function nextClusterIp(): string {
  lastIp++;
  return `10.96.${Math.floor(lastIp / 256) % 256}.${lastIp % 256}`;
}
