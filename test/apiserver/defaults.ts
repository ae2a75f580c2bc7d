/**
 * Server-side defaulting the real API server applies on create and update, for
 * the fields clients read back (so `kubectl apply` twice and round trips behave
 * as against a cluster). Mutates the object it is given.
 */
import { ResourceType, groupVersion } from './resources';

/** SetDefaults_HTTPGetAction (probes and lifecycle hooks alike). */
function defaultHttpGet(h: any): void {
  if (!h) return;
  h.path ||= '/';
  h.scheme ||= 'HTTP';
}

/** SetDefaults_Probe: zero timings take the documented defaults. */
function defaultProbe(p: any): void {
  if (!p) return;
  p.timeoutSeconds ||= 1;
  p.periodSeconds ||= 10;
  p.successThreshold ||= 1;
  p.failureThreshold ||= 3;
  defaultHttpGet(p.httpGet);
}

function defaultContainer(c: any): void {
  c.terminationMessagePath ??= '/dev/termination-log';
  c.terminationMessagePolicy ??= 'File';
  c.imagePullPolicy ??= typeof c.image === 'string' && (c.image.endsWith(':latest') || !/:[^/]+$/.test(c.image.split('@')[0])) ? 'Always' : 'IfNotPresent';
  c.resources ??= {};
  for (const p of c.ports ?? []) p.protocol ??= 'TCP';
  for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) defaultProbe(probe);
  defaultHttpGet(c.lifecycle?.postStart?.httpGet);
  defaultHttpGet(c.lifecycle?.preStop?.httpGet);
  for (const e of c.env ?? []) if (e?.valueFrom?.fieldRef) e.valueFrom.fieldRef.apiVersion ||= 'v1';
}

const DEFAULT_MODE = 0o644;

/** SetDefaults_Volume and the volume sources' defaults: no source means an emptyDir. */
function defaultVolume(v: any): void {
  const sources = Object.keys(v).filter((k) => k !== 'name' && v[k] !== undefined && v[k] !== null);
  if (sources.length === 0) v.emptyDir = {};
  if (v.hostPath) v.hostPath.type ??= '';
  for (const src of [v.configMap, v.secret, v.downwardAPI, v.projected]) if (src) src.defaultMode ??= DEFAULT_MODE;
}

function defaultPodSpec(spec: any, restartPolicy = 'Always'): void {
  if (!spec) return;
  spec.restartPolicy ??= restartPolicy;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.schedulerName ??= 'default-scheduler';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.securityContext ??= {};
  spec.enableServiceLinks ??= true;
  for (const v of spec.volumes ?? []) if (v) defaultVolume(v);
  for (const c of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) if (c) defaultContainer(c);
  if (spec.serviceAccountName && !spec.serviceAccount) spec.serviceAccount = spec.serviceAccountName;
}

/** SetDefaults_Pod (not templates): host-network ports are host ports; limits stand in for missing requests. */
function defaultPod(o: any): void {
  defaultPodSpec(o.spec);
  for (const c of [...(o.spec?.containers ?? []), ...(o.spec?.initContainers ?? [])]) {
    if (o.spec.hostNetwork) for (const p of c?.ports ?? []) p.hostPort ||= p.containerPort;
    if (c?.resources?.limits) c.resources.requests = { ...c.resources.limits, ...c.resources.requests };
  }
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
  'v1/Pod': defaultPod,
  'v1/Secret': (o) => {
    o.type ||= 'Opaque';
  },
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
    const strategy = (o.spec.strategy ??= {});
    strategy.type ??= 'RollingUpdate';
    if (strategy.type === 'RollingUpdate') {
      strategy.rollingUpdate ??= {};
      strategy.rollingUpdate.maxUnavailable ??= '25%';
      strategy.rollingUpdate.maxSurge ??= '25%';
    }
    defaultPodSpec(o.spec.template?.spec);
  },
  'apps/v1/DaemonSet': (o) => {
    o.spec ??= {};
    o.spec.revisionHistoryLimit ??= 10;
    const strategy = (o.spec.updateStrategy ??= {});
    strategy.type ??= 'RollingUpdate';
    if (strategy.type === 'RollingUpdate') {
      strategy.rollingUpdate ??= {};
      strategy.rollingUpdate.maxUnavailable ??= 1;
      strategy.rollingUpdate.maxSurge ??= 0;
    }
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
