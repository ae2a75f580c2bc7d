/**
 * Server-side validation: the Kubernetes schemas that `kubernetes-models` ships,
 * object-meta rules (name syntax, labels), and the semantic checks of the real
 * registry strategies for the kinds our runtime writes. A failure is 422 Invalid
 * with one cause per field; a body that cannot decode as the kind is 400.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ResourceType, groupVersion } from './resources';
import { StatusCause, badRequest, invalid } from './status';

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const LABEL_VALUE_MSG = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const QUALIFIED_NAME_MSG = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

const DNS_LABEL_NAMED = new Set(['namespaces', 'services']);
const PATH_SEGMENT_NAMED = new Set(['roles', 'rolebindings', 'clusterroles', 'clusterrolebindings']);

function invalidValue(field: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(value)}: ${detail}` };
}

function required(field: string, detail?: string): StatusCause {
  return { reason: 'FieldValueRequired', field, message: detail ? `Required value: ${detail}` : 'Required value' };
}

function unsupported(field: string, value: unknown, allowed: string[]): StatusCause {
  return {
    reason: 'FieldValueNotSupported',
    field,
    message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${allowed.map((a) => `"${a}"`).join(', ')}`,
  };
}

function forbiddenField(field: string, detail: string): StatusCause {
  return { reason: 'FieldValueForbidden', field, message: `Forbidden: ${detail}` };
}

/** Name syntax as the kind's registry checks it. */
export function nameProblems(r: ResourceType, name: string, field = 'metadata.name'): StatusCause[] {
  if (PATH_SEGMENT_NAMED.has(r.resource)) {
    if (name === '.' || name === '..') return [invalidValue(field, name, `may not be '${name}'`)];
    for (const bad of ['/', '%']) if (name.includes(bad)) return [invalidValue(field, name, `may not contain '${bad}'`)];
    return [];
  }
  if (DNS_LABEL_NAMED.has(r.resource)) {
    const out: StatusCause[] = [];
    if (name.length > 63) out.push(invalidValue(field, name, 'must be no more than 63 characters'));
    if (!LABEL.test(name)) out.push(invalidValue(field, name, LABEL_MSG));
    return out;
  }
  const out: StatusCause[] = [];
  if (name.length > 253) out.push(invalidValue(field, name, 'must be no more than 253 characters'));
  if (!SUBDOMAIN.test(name)) out.push(invalidValue(field, name, SUBDOMAIN_MSG));
  return out;
}

function qualifiedNameProblems(field: string, key: string): StatusCause[] {
  const slash = key.lastIndexOf('/');
  const namePart = slash >= 0 ? key.slice(slash + 1) : key;
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const out: StatusCause[] = [];
  if (namePart.length === 0 || namePart.length > 63 || !QUALIFIED_NAME.test(key)) {
    out.push(invalidValue(field, key, QUALIFIED_NAME_MSG));
  }
  if (prefix !== undefined && (prefix.length > 253 || !SUBDOMAIN.test(prefix))) {
    out.push(invalidValue(field, key, `prefix part ${SUBDOMAIN_MSG}`));
  }
  return out;
}

function metadataProblems(r: ResourceType, meta: any): StatusCause[] {
  const out: StatusCause[] = [];
  if (!meta.name) out.push(required('metadata.name', 'name or generateName is required'));
  else out.push(...nameProblems(r, meta.name));
  for (const [k, v] of Object.entries<any>(meta.labels ?? {})) {
    out.push(...qualifiedNameProblems('metadata.labels', k));
    if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v)) {
      out.push(invalidValue('metadata.labels', v, v?.length > 63 ? 'must be no more than 63 characters' : LABEL_VALUE_MSG));
    }
  }
  let annotationBytes = 0;
  for (const [k, v] of Object.entries<any>(meta.annotations ?? {})) {
    out.push(...qualifiedNameProblems('metadata.annotations', k.toLowerCase()));
    annotationBytes += k.length + String(v).length;
  }
  if (annotationBytes > 256 * 1024) out.push({ reason: 'FieldValueTooLong', field: 'metadata.annotations', message: 'Too long: must have at most 262144 bytes' });
  (meta.ownerReferences ?? []).forEach((o: any, i: number) => {
    for (const f of ['apiVersion', 'kind', 'name', 'uid']) {
      if (!o?.[f]) out.push(required(`metadata.ownerReferences[${i}].${f}`));
    }
  });
  return out;
}

const modelCache = new Map<ResourceType, any>();

/**
 * Loads a model class. The prometheus-operator models are ES modules whose
 * package exports only an `import` condition, so outside jest (which maps the
 * path) they are required by file path, which Node's require(esm) accepts.
 */
function loadModel(specifier: string): any {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(specifier);
  } catch (e: any) {
    if (e?.code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw e;
    const [scope, name, ...rest] = specifier.split('/');
    const dir = (require.resolve.paths(specifier) ?? []).map((p) => join(p, scope, name)).find((d) => existsSync(d));
    if (!dir) throw e;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(join(dir, `${rest.join('/')}.js`));
  }
}

function modelClass(r: ResourceType): any {
  if (!modelCache.has(r)) modelCache.set(r, loadModel(r.model[0])[r.model[1]]);
  return modelCache.get(r);
}

function fieldPath(instancePath: string): string {
  return instancePath.split('/').filter(Boolean)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, s) => (/^\d+$/.test(s) ? `${acc}[${s}]` : acc ? `${acc}.${s}` : s), '');
}

function valueAt(obj: any, instancePath: string): unknown {
  return instancePath.split('/').filter(Boolean).reduce((o, s) => o?.[s.replace(/~1/g, '/').replace(/~0/g, '~')], obj);
}

/** Schema errors from kubernetes-models as causes; type errors on built-in kinds are decode failures (400). */
function schemaProblems(r: ResourceType, obj: any): StatusCause[] {
  const Model = modelClass(r);
  try {
    new Model(obj).validate();
    return [];
  } catch (e: any) {
    const errors: any[] = e?.errors ?? [];
    if (!errors.length) throw e;
    const out: StatusCause[] = [];
    for (const err of errors) {
      const field = fieldPath(err.instancePath ?? '');
      const value = valueAt(obj, err.instancePath ?? '');
      switch (err.keyword) {
        case 'required': out.push(required(field ? `${field}.${err.params.missingProperty}` : err.params.missingProperty)); break;
        case 'type': {
          if (!r.custom) {
            throw badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: `
              + `json: cannot unmarshal ${typeof value} into Go struct field .${field} of type ${err.params.type}`);
          }
          out.push(invalidValue(field, typeof value, `${field} in body must be of type ${err.params.type}: "${typeof value}"`));
          break;
        }
        case 'enum': out.push(unsupported(field, value, err.params.allowedValues ?? [])); break;
        default: out.push(invalidValue(field, value, err.message ?? 'invalid'));
      }
    }
    return out;
  }
}

const ACCESS_MODES = ['ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOnce', 'ReadWriteOncePod'];
const PV_SOURCES = ['awsElasticBlockStore', 'azureDisk', 'azureFile', 'cephfs', 'cinder', 'csi', 'fc', 'flexVolume', 'flocker',
  'gcePersistentDisk', 'glusterfs', 'hostPath', 'iscsi', 'local', 'nfs', 'photonPersistentDisk', 'portworxVolume', 'quobyte',
  'rbd', 'scaleIO', 'storageos', 'vsphereVolume'];

function accessModeProblems(field: string, modes: unknown): StatusCause[] {
  if (!Array.isArray(modes) || modes.length === 0) return [required(field)];
  return modes.filter((m) => !ACCESS_MODES.includes(m)).map((m) => unsupported(field, m, ACCESS_MODES));
}

/** NodeSelector rules of the core validation (PV node affinity). */
function nodeSelectorProblems(field: string, selector: any): StatusCause[] {
  const terms = selector?.nodeSelectorTerms;
  if (!Array.isArray(terms) || terms.length === 0) return [required(`${field}.nodeSelectorTerms`, 'must have at least one node selector term')];
  const out: StatusCause[] = [];
  terms.forEach((term: any, i: number) => {
    (term?.matchExpressions ?? []).forEach((req: any, j: number) => {
      const f = `${field}.nodeSelectorTerms[${i}].matchExpressions[${j}]`;
      const values: unknown[] = req?.values ?? [];
      switch (req?.operator) {
        case 'In':
        case 'NotIn':
          if (!values.length) out.push(required(`${f}.values`, 'must be specified when `operator` is \'In\' or \'NotIn\''));
          break;
        case 'Exists':
        case 'DoesNotExist':
          if (values.length) out.push(forbiddenField(`${f}.values`, 'may not be specified when `operator` is \'Exists\' or \'DoesNotExist\''));
          break;
        case 'Gt':
        case 'Lt':
          if (values.length !== 1 || !/^-?\d+$/.test(String(values[0]))) out.push(required(`${f}.values`, 'must be specified single value when `operator` is \'Lt\' or \'Gt\''));
          break;
        default:
          out.push(invalidValue(`${f}.operator`, req?.operator, 'not a valid selector operator'));
      }
      if (req?.key) out.push(...qualifiedNameProblems(`${f}.key`, req.key));
    });
  });
  return out;
}

function pvProblems(pv: any): StatusCause[] {
  const spec = pv.spec ?? {};
  const out: StatusCause[] = [...accessModeProblems('spec.accessModes', spec.accessModes)];
  if (!spec.capacity || Object.keys(spec.capacity).length === 0) out.push(required('spec.capacity'));
  else if (spec.capacity.storage === undefined) out.push(required('spec.capacity[storage]'));
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
  const out = accessModeProblems('spec.accessModes', spec.accessModes);
  if (spec.resources?.requests?.storage === undefined) out.push(required('spec.resources[storage]'));
  return out;
}

function podSpecProblems(field: string, spec: any): StatusCause[] {
  const out: StatusCause[] = [];
  const containers = spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0) {out.push(required(`${field}.containers`));} else {
    containers.forEach((c: any, i: number) => {
      if (!c.name) out.push(required(`${field}.containers[${i}].name`));
      if (!c.image) out.push(required(`${field}.containers[${i}].image`));
    });
  }
  return out;
}

function jobProblems(job: any): StatusCause[] {
  const out = podSpecProblems('spec.template.spec', job.spec?.template?.spec);
  const rp = job.spec?.template?.spec?.restartPolicy;
  if (rp !== 'OnFailure' && rp !== 'Never') out.push(unsupported('spec.template.spec.restartPolicy', rp ?? '', ['OnFailure', 'Never']));
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

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

function configMapProblems(cm: any): StatusCause[] {
  const out: StatusCause[] = [];
  const keys = [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})];
  for (const k of Object.keys(cm.data ?? {})) {
    if (!CONFIG_KEY.test(k) || k === '.' || k === '..') {
      out.push(invalidValue(`data[${k}]`, k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
        + "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"));
    }
  }
  const dup = keys.find((k, i) => keys.indexOf(k) !== i);
  if (dup) out.push(invalidValue(`data[${dup}]`, dup, 'duplicate of key present in binaryData'));
  const size = Object.values<string>(cm.data ?? {}).reduce((n, v) => n + String(v).length, 0)
    + Object.values<string>(cm.binaryData ?? {}).reduce((n, v) => n + Math.floor((String(v).length * 3) / 4), 0);
  if (size > 1024 * 1024) out.push({ reason: 'FieldValueTooLong', field: '', message: 'Too long: must have at most 1048576 bytes' });
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

/** Whether a LabelSelector object (matchLabels, matchExpressions) selects these labels. */
function selects(selector: any, labels: Record<string, string>): boolean {
  const byLabels = Object.entries<string>(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector?.matchExpressions ?? []).every((e: any) => {
    const has = labels[e.key] !== undefined;
    switch (e.operator) {
      case 'In': return has && (e.values ?? []).includes(labels[e.key]);
      case 'NotIn': return !has || !(e.values ?? []).includes(labels[e.key]);
      case 'Exists': return has;
      case 'DoesNotExist': return !has;
      default: return false;
    }
  });
  return byLabels && byExpressions;
}

/** apps/v1 workloads: a selector is required and must select the pod template's labels. */
function workloadProblems(w: any, restartPolicies: string[]): StatusCause[] {
  const out = podSpecProblems('spec.template.spec', w.spec?.template?.spec);
  const selector = w.spec?.selector;
  const labels = w.spec?.template?.metadata?.labels ?? {};
  if (!selector || (!Object.keys(selector.matchLabels ?? {}).length && !(selector.matchExpressions ?? []).length)) {
    out.push(required('spec.selector'));
  } else if (!selects(selector, labels)) {
    out.push(invalidValue('spec.template.metadata.labels', labels, '`selector` does not match template `labels`'));
  }
  const rp = w.spec?.template?.spec?.restartPolicy ?? 'Always';
  if (!restartPolicies.includes(rp)) out.push(unsupported('spec.template.spec.restartPolicy', rp, restartPolicies));
  return out;
}

const SEMANTIC: Record<string, (obj: any) => StatusCause[]> = {
  'rbac.authorization.k8s.io/v1/Role': (r) => policyRuleProblems(r.rules, true),
  'rbac.authorization.k8s.io/v1/ClusterRole': (r) => policyRuleProblems(r.rules, false),
  'rbac.authorization.k8s.io/v1/RoleBinding': (b) => bindingProblems(b, false),
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': (b) => bindingProblems(b, true),
  'v1/ConfigMap': configMapProblems,
  'v1/Event': (e) => eventNamespaceProblems(e, e.involvedObject, 'involvedObject'),
  'events.k8s.io/v1/Event': eventsV1Problems,
  'v1/PersistentVolume': pvProblems,
  'v1/PersistentVolumeClaim': pvcProblems,
  'v1/Pod': (p) => podSpecProblems('spec', p.spec),
  'batch/v1/Job': jobProblems,
  'apps/v1/Deployment': (d) => workloadProblems(d, ['Always']),
  'apps/v1/DaemonSet': (d) => workloadProblems(d, ['Always']),
};

const changed = (a: unknown, b: unknown) => JSON.stringify(a) !== JSON.stringify(b);

function immutable(field: string, value: unknown): StatusCause {
  return invalidValue(field, value, 'field is immutable');
}

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
    default:
  }
  return out;
}

/** Throws 400 or 422 as the real server would for this object (on create, or update when `prev` is given). */
export function validateObject(r: ResourceType, obj: any, prev?: any): void {
  const name = obj.metadata?.name ?? '';
  const causes = [
    ...metadataProblems(r, obj.metadata ?? {}),
    ...schemaProblems(r, obj),
  ];
  causes.push(...(SEMANTIC[`${groupVersion(r)}/${r.kind}`]?.(obj) ?? []));
  if (prev) causes.push(...updateProblems(r, obj, prev));
  // The schema and the semantic checks can both notice one missing field; report it once.
  const unique = [...new Map(causes.map((c) => [`${c.field}|${c.reason}`, c])).values()];
  if (unique.length) throw invalid(r, name, unique);
}

