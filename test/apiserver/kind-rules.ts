/**
 * The rules of the real registry strategies for the kinds served, beyond the
 * schema: what a create must satisfy (PV sources and node affinity, event
 * namespaces, RBAC rules; pods and workloads through pod-spec.ts and
 * workloads.ts) and what an update may not change.
 */
import { forbiddenField, immutable, invalidValue, required, unsupported } from './causes';
import { configKeyMessages, qualifiedNameProblems } from './names';
import { podProblems } from './pod-spec';
import { compareQuantities, parseQuantity } from './quantity';
import { ResourceType, groupVersion } from './resources';
import { nodeSelectorProblems } from './scheduling';
import { StatusCause } from './status';
import { daemonSetProblems, deploymentProblems, jobProblems } from './workloads';

const ACCESS_MODES = ['ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOnce', 'ReadWriteOncePod'];
const PV_SOURCES = ['awsElasticBlockStore', 'azureDisk', 'azureFile', 'cephfs', 'cinder', 'csi', 'fc', 'flexVolume', 'flocker',
  'gcePersistentDisk', 'glusterfs', 'hostPath', 'iscsi', 'local', 'nfs', 'photonPersistentDisk', 'portworxVolume', 'quobyte',
  'rbd', 'scaleIO', 'storageos', 'vsphereVolume'];

function accessModeProblems(field: string, modes: unknown, emptyDetail?: string): StatusCause[] {
  if (!Array.isArray(modes) || modes.length === 0) return [required(field, emptyDetail)];
  const out = modes.filter((m) => !ACCESS_MODES.includes(m)).map((m) => unsupported(field, m, ACCESS_MODES));
  if (modes.includes('ReadWriteOncePod') && modes.some((m) => m !== 'ReadWriteOncePod' && ACCESS_MODES.includes(m))) {
    out.push(forbiddenField(field, 'may not use ReadWriteOncePod with other access modes'));
  }
  return out;
}

/** ValidatePositiveQuantityValue: storage sizes of volumes and claims. */
function positiveProblems(field: string, value: unknown): StatusCause[] {
  return compareQuantities(parseQuantity(value), { num: 0n, den: 1n }) > 0 ? [] : [invalidValue(field, String(value), 'must be greater than zero')];
}

function pvProblems(pv: any): StatusCause[] {
  const spec = pv.spec ?? {};
  const out: StatusCause[] = [...accessModeProblems('spec.accessModes', spec.accessModes)];
  const capacity = spec.capacity ?? {};
  if (Object.keys(capacity).length === 0) out.push(required('spec.capacity'));
  if (capacity.storage === undefined || Object.keys(capacity).length > 1) out.push(unsupported('spec.capacity', capacity, ['storage']));
  for (const [name, q] of Object.entries(capacity)) out.push(...positiveProblems(`spec.capacity[${name}]`, q));
  const sources = PV_SOURCES.filter((s) => spec[s] !== undefined);
  if (sources.length === 0) out.push(required('spec', 'must specify a volume type'));
  if (sources.length > 1) out.push(forbiddenField(`spec.${sources[1]}`, 'may not specify more than 1 volume type'));
  if (spec.nodeAffinity?.required) out.push(...nodeSelectorProblems('spec.nodeAffinity.required', spec.nodeAffinity.required));
  if (spec.local) {
    if (!spec.nodeAffinity) out.push(required('spec.nodeAffinity', 'Local volume requires node affinity'));
    if (typeof spec.local.path === 'string' && spec.local.path.split('/').includes('..')) {
      out.push(invalidValue('spec.local.path', spec.local.path, "must not contain '..'"));
    }
  }
  const policies = ['Delete', 'Recycle', 'Retain'];
  if (spec.persistentVolumeReclaimPolicy && !policies.includes(spec.persistentVolumeReclaimPolicy)) {
    out.push(unsupported('spec.persistentVolumeReclaimPolicy', spec.persistentVolumeReclaimPolicy, policies));
  }
  if (spec.volumeMode && !['Block', 'Filesystem'].includes(spec.volumeMode)) {
    out.push(unsupported('spec.volumeMode', spec.volumeMode, ['Block', 'Filesystem']));
  }
  return out;
}

function pvcProblems(pvc: any): StatusCause[] {
  const spec = pvc.spec ?? {};
  const out = accessModeProblems('spec.accessModes', spec.accessModes, 'at least 1 access mode is required');
  const storage = spec.resources?.requests?.storage;
  if (storage === undefined) out.push(required('spec.resources[storage]'));
  else out.push(...positiveProblems('spec.resources[storage]', storage));
  return out;
}

/**
 * Events must live in the namespace of what they are about; events about
 * cluster-scoped objects (nodes, PVs) go in `default` (legacy core/v1 rule).
 */
function eventNamespaceProblems(event: any, ref: any, field: string): StatusCause[] {
  const ns = event.metadata?.namespace;
  const refNs = ref?.namespace ?? '';
  const ok = refNs ? ns === refNs : !ns || ns === 'default';
  return ok ? [] : [invalidValue(`${field}.namespace`, refNs, 'does not match event.namespace')];
}

function eventsV1Problems(e: any): StatusCause[] {
  const out = eventNamespaceProblems(e, e.regarding, 'regarding');
  if (!e.eventTime) out.push(required('eventTime'));
  for (const f of ['reportingController', 'reportingInstance', 'action', 'reason']) if (!e[f]) out.push(required(f));
  if (e.reportingController) out.push(...qualifiedNameProblems('reportingController', e.reportingController));
  if (e.type !== 'Normal' && e.type !== 'Warning') out.push(unsupported('type', e.type ?? '', ['Normal', 'Warning']));
  if (typeof e.note === 'string' && e.note.length > 1024) out.push({ reason: 'FieldValueTooLong', field: 'note', message: 'Too long: may not be more than 1024 bytes' });
  return out;
}

function configMapProblems(cm: any): StatusCause[] {
  const out: StatusCause[] = [];
  const keys = [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})];
  for (const k of Object.keys(cm.data ?? {})) out.push(...configKeyMessages(k).map((msg) => invalidValue(`data[${k}]`, k, msg)));
  for (const k of Object.keys(cm.binaryData ?? {})) out.push(...configKeyMessages(k).map((msg) => invalidValue(`binaryData[${k}]`, k, msg)));
  const dup = keys.find((k, i) => keys.indexOf(k) !== i);
  if (dup) out.push(invalidValue(`data[${dup}]`, dup, 'duplicate of key present in binaryData'));
  const size = Object.values<string>(cm.data ?? {}).reduce((n, v) => n + String(v).length, 0)
    + Object.values<string>(cm.binaryData ?? {}).reduce((n, v) => n + Math.floor((String(v).length * 3) / 4), 0);
  if (size > 1024 * 1024) out.push({ reason: 'FieldValueTooLong', field: '', message: 'Too long: must have at most 1048576 bytes' });
  return out;
}

/** Keys a Secret of each built-in type must have in its data (ValidateSecret). */
const SECRET_KEYS: Record<string, string[]> = {
  'kubernetes.io/dockercfg': ['.dockercfg'],
  'kubernetes.io/dockerconfigjson': ['.dockerconfigjson'],
  'kubernetes.io/ssh-auth': ['ssh-privatekey'],
  'kubernetes.io/tls': ['tls.crt', 'tls.key'],
};

function secretProblems(secret: any): StatusCause[] {
  const data: Record<string, string> = secret.data ?? {};
  const out = Object.keys(data).flatMap((k) => configKeyMessages(k).map((msg) => invalidValue(`data[${k}]`, k, msg)));
  const size = Object.values(data).reduce((n, v) => n + Buffer.from(String(v), 'base64').length, 0);
  if (size > 1024 * 1024) out.push({ reason: 'FieldValueTooLong', field: 'data', message: 'Too long: must have at most 1048576 bytes' });
  const type = secret.type ?? '';
  if (type === 'kubernetes.io/service-account-token' && !secret.metadata?.annotations?.['kubernetes.io/service-account.name']) {
    out.push(required('metadata.annotations[kubernetes.io/service-account.name]'));
  }
  if (type === 'kubernetes.io/basic-auth' && !('username' in data) && !('password' in data)) {
    out.push(required('data[username]'), required('data[password]'));
  }
  for (const key of SECRET_KEYS[type] ?? []) {
    if (!(key in data) || (type === 'kubernetes.io/ssh-auth' && !data[key])) out.push(required(`data[${key}]`));
  }
  for (const key of ['.dockercfg', '.dockerconfigjson']) {
    if (SECRET_KEYS[type]?.[0] !== key || !(key in data)) continue;
    try {
      JSON.parse(Buffer.from(data[key], 'base64').toString('utf8'));
    } catch (e: any) {
      out.push(invalidValue(`data[${key}]`, '<secret contents redacted>', e.message));
    }
  }
  return out;
}

function policyRuleProblems(rules: any[] | undefined, namespaced: boolean): StatusCause[] {
  const out: StatusCause[] = [];
  (rules ?? []).forEach((rule: any, i: number) => {
    const f = `rules[${i}]`;
    if (!rule?.verbs?.length) out.push(required(`${f}.verbs`, 'verbs must contain at least one value'));
    if (rule?.nonResourceURLs?.length) {
      if (namespaced) out.push(invalidValue(`${f}.nonResourceURLs`, rule.nonResourceURLs, 'namespaced rules cannot apply to non-resource URLs'));
      if (rule.apiGroups?.length || rule.resources?.length || rule.resourceNames?.length) {
        out.push(invalidValue(`${f}.nonResourceURLs`, rule.nonResourceURLs, 'rules cannot apply to both regular resources and non-resource URLs'));
      }
      return;
    }
    if (!rule?.apiGroups?.length) out.push(required(`${f}.apiGroups`, 'resource rules must supply at least one api group'));
    if (!rule?.resources?.length) out.push(required(`${f}.resources`, 'resource rules must supply at least one resource'));
  });
  return out;
}

function bindingProblems(b: any, clusterWide: boolean): StatusCause[] {
  const out: StatusCause[] = [];
  const ref = b.roleRef ?? {};
  if (ref.apiGroup !== 'rbac.authorization.k8s.io') out.push(unsupported('roleRef.apiGroup', ref.apiGroup ?? '', ['rbac.authorization.k8s.io']));
  const kinds = clusterWide ? ['ClusterRole'] : ['Role', 'ClusterRole'];
  if (!kinds.includes(ref.kind)) out.push(unsupported('roleRef.kind', ref.kind ?? '', kinds));
  if (!ref.name) out.push(required('roleRef.name'));
  (b.subjects ?? []).forEach((sub: any, i: number) => {
    const f = `subjects[${i}]`;
    if (!sub?.name) out.push(required(`${f}.name`));
    if (sub?.kind === 'ServiceAccount') {
      if (sub.apiGroup) out.push(unsupported(`${f}.apiGroup`, sub.apiGroup, ['']));
      if (clusterWide && !sub.namespace) out.push(required(`${f}.namespace`));
    } else if (sub?.kind === 'User' || sub?.kind === 'Group') {
      if (sub.apiGroup !== 'rbac.authorization.k8s.io') out.push(unsupported(`${f}.apiGroup`, sub.apiGroup ?? '', ['rbac.authorization.k8s.io']));
    } else {
      out.push(unsupported(`${f}.kind`, sub?.kind ?? '', ['ServiceAccount', 'User', 'Group']));
    }
  });
  return out;
}

/** Rules of each kind's create (and update, on the new object); `prev` is the stored object on update. */
const RULES: Record<string, (obj: any, prev?: any) => StatusCause[]> = {
  'rbac.authorization.k8s.io/v1/Role': (r) => policyRuleProblems(r.rules, true),
  'rbac.authorization.k8s.io/v1/ClusterRole': (r) => policyRuleProblems(r.rules, false),
  'rbac.authorization.k8s.io/v1/RoleBinding': (b) => bindingProblems(b, false),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': (b) => bindingProblems(b, true),
  'v1/ConfigMap': configMapProblems,
  'v1/Secret': secretProblems,
  'v1/Event': (e) => eventNamespaceProblems(e, e.involvedObject, 'involvedObject'),
  'events.k8s.io/v1/Event': eventsV1Problems,
  'v1/PersistentVolume': pvProblems,
  'v1/PersistentVolumeClaim': pvcProblems,
  'v1/Pod': (p, prev) => podProblems(p, !prev),
  'batch/v1/Job': jobProblems,
  'apps/v1/Deployment': deploymentProblems,
  'apps/v1/DaemonSet': daemonSetProblems,
};

const changed = (a: unknown, b: unknown) => JSON.stringify(a) !== JSON.stringify(b);

/** Update rules of the registry strategies: fields that may not change after creation. */
function updateProblems(r: ResourceType, next: any, prev: any): StatusCause[] {
  const out: StatusCause[] = [];
  switch (`${groupVersion(r)}/${r.kind}`) {
    case 'v1/PersistentVolume': {
      const src = (o: any) => PV_SOURCES.map((s) => o.spec?.[s]);
      if (changed(src(next), src(prev))) out.push(forbiddenField('spec.persistentvolumesource', 'spec.persistentvolumesource is immutable after creation'));
      break;
    }
    case 'v1/PersistentVolumeClaim': {
      const strip = (o: any) => ({
        ...o.spec,
        resources: { ...o.spec?.resources, requests: undefined },
        volumeName: undefined,
        volumeAttributesClassName: undefined,
      });
      if (changed(strip(next), strip(prev))) {
        out.push(forbiddenField('spec', 'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims'));
      }
      if (prev.spec?.volumeName && next.spec?.volumeName !== prev.spec.volumeName) out.push(immutable('spec.volumeName', next.spec?.volumeName));
      break;
    }
    case 'batch/v1/Job':
      if (changed(next.spec?.selector, prev.spec?.selector)) out.push(immutable('spec.selector', next.spec?.selector));
      if (changed(next.spec?.template, prev.spec?.template)) out.push(immutable('spec.template', next.spec?.template));
      if (changed(next.spec?.completions, prev.spec?.completions)) out.push(immutable('spec.completions', next.spec?.completions));
      break;
    case 'storage.k8s.io/v1/StorageClass':
      if (changed(next.parameters, prev.parameters)) out.push(forbiddenField('parameters', 'updates to parameters are forbidden.'));
      if (next.provisioner !== prev.provisioner) out.push(forbiddenField('provisioner', 'updates to provisioner are forbidden.'));
      if (next.reclaimPolicy !== prev.reclaimPolicy) out.push(forbiddenField('reclaimPolicy', 'updates to reclaimPolicy are forbidden.'));
      if (next.volumeBindingMode !== prev.volumeBindingMode) out.push(forbiddenField('volumeBindingMode', 'field is immutable'));
      break;
    case 'apps/v1/Deployment':
    case 'apps/v1/DaemonSet':
      if (changed(next.spec?.selector, prev.spec?.selector)) out.push(immutable('spec.selector', next.spec?.selector));
      break;
    case 'rbac.authorization.k8s.io/v1/RoleBinding':
    case 'rbac.authorization.k8s.io/v1/ClusterRoleBinding':
      if (changed(next.roleRef, prev.roleRef)) out.push(invalidValue('roleRef', next.roleRef, 'cannot change roleRef'));
      break;
    case 'v1/ConfigMap':
      if (prev.immutable === true && (changed(next.data, prev.data) || changed(next.binaryData, prev.binaryData) || next.immutable !== true)) {
        out.push(forbiddenField(next.immutable === true ? 'data' : 'immutable', 'field is immutable when `immutable` is set'));
      }
      break;
    case 'v1/Secret':
      if (next.type !== prev.type) out.push(immutable('type', next.type));
      if (prev.immutable === true) {
        if (next.immutable !== true) out.push(forbiddenField('immutable', 'field is immutable when `immutable` is set'));
        if (changed(next.data, prev.data)) out.push(forbiddenField('data', 'field is immutable when `immutable` is set'));
      }
      break;
    default:
  }
  return out;
}

/** What the kind's registry refuses in this object (and, on update, in its change from `prev`). */
export function kindProblems(r: ResourceType, obj: any, prev?: any): StatusCause[] {
  const out = RULES[`${groupVersion(r)}/${r.kind}`]?.(obj, prev) ?? [];
  if (prev) out.push(...updateProblems(r, obj, prev));
  return out;
}
