/**
 * The API resources the test server serves, with the facts the real server's
 * registry knows about each: scope, kind, short names, subresources, the field
 * labels its field selectors accept, and how deletes and generations behave.
 */

/** Reads one field label's value out of an object (for field selectors). */
export type FieldGetter = (obj: any) => string | undefined;

export interface ResourceType {
  readonly group: string;
  readonly version: string;
  /** Plural, lower case: the URL segment. */
  readonly resource: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  /** Whether `/status` is a subresource (the main resource then ignores status changes). */
  readonly hasStatus: boolean;
  /** Field labels beyond metadata.name / metadata.namespace. */
  readonly fields: Readonly<Record<string, FieldGetter>>;
  /** Custom resources: no strategic merge patch, items keep kind/apiVersion in lists, deletes return the object. */
  readonly custom: boolean;
  /** Whether metadata.generation tracks spec changes. */
  readonly tracksGeneration: boolean;
  /** The delete propagation the registry uses when the client names none. */
  readonly defaultPropagation: 'Background' | 'Orphan';
  /** Whether a completed delete answers with the object rather than a Status (pods, custom resources). */
  readonly returnsDeletedObject: boolean;
  /** Module path and export of the kubernetes-models class that validates it. */
  readonly model: readonly [string, string];
  /** The verbs served; a review (e.g. SelfSubjectAccessReview) is create-only and never stored. */
  readonly verbs: readonly string[];
}

/** The verbs of an ordinary stored resource, as discovery lists them. */
export const STORED_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] as const;

export function groupVersion(r: { group: string; version: string }): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** `persistentvolumes` or `jobs.batch`, as the real server names a resource in messages. */
export function qualifiedResource(r: ResourceType): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

const str = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : String(v));

const eventFields: Record<string, FieldGetter> = {
  'involvedObject.kind': (o) => str(o.involvedObject?.kind),
  'involvedObject.namespace': (o) => str(o.involvedObject?.namespace),
  'involvedObject.name': (o) => str(o.involvedObject?.name),
  'involvedObject.uid': (o) => str(o.involvedObject?.uid),
  'involvedObject.apiVersion': (o) => str(o.involvedObject?.apiVersion),
  'involvedObject.resourceVersion': (o) => str(o.involvedObject?.resourceVersion),
  'involvedObject.fieldPath': (o) => str(o.involvedObject?.fieldPath),
  'reason': (o) => str(o.reason),
  'reportingComponent': (o) => str(o.reportingComponent),
  'source': (o) => str(o.source?.component) ?? str(o.reportingComponent),
  'type': (o) => str(o.type),
};

const eventsV1Fields: Record<string, FieldGetter> = {
  'regarding.kind': (o) => str(o.regarding?.kind),
  'regarding.namespace': (o) => str(o.regarding?.namespace),
  'regarding.name': (o) => str(o.regarding?.name),
  'regarding.uid': (o) => str(o.regarding?.uid),
  'regarding.apiVersion': (o) => str(o.regarding?.apiVersion),
  'regarding.resourceVersion': (o) => str(o.regarding?.resourceVersion),
  'regarding.fieldPath': (o) => str(o.regarding?.fieldPath),
  'reason': (o) => str(o.reason),
  'reportingController': (o) => str(o.reportingController),
  'type': (o) => str(o.type),
};

interface Spec {
  group?: string;
  version?: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  hasStatus?: boolean;
  fields?: Record<string, FieldGetter>;
  custom?: boolean;
  tracksGeneration?: boolean;
  defaultPropagation?: 'Background' | 'Orphan';
  returnsDeletedObject?: boolean;
  model?: [string, string];
  verbs?: string[];
}

function define(s: Spec): ResourceType {
  const group = s.group ?? '';
  const version = s.version ?? 'v1';
  const gv = group ? `${group}/${version}` : version;
  return {
    group,
    version,
    resource: s.resource,
    singular: s.kind.toLowerCase(),
    kind: s.kind,
    namespaced: s.namespaced,
    shortNames: s.shortNames ?? [],
    categories: s.categories ?? [],
    hasStatus: s.hasStatus ?? false,
    fields: s.fields ?? {},
    custom: s.custom ?? false,
    tracksGeneration: s.tracksGeneration ?? s.custom ?? false,
    defaultPropagation: s.defaultPropagation ?? 'Background',
    returnsDeletedObject: s.returnsDeletedObject ?? s.custom ?? false,
    verbs: s.verbs ?? [...STORED_VERBS],
    model: s.model ?? [s.custom ? `@kubernetes-models/prometheus-operator/${gv}/${s.kind}` : `kubernetes-models/${gv}/${s.kind}`, s.kind],
  };
}

export const RESOURCES: readonly ResourceType[] = [
  define({ resource: 'persistentvolumes', kind: 'PersistentVolume', namespaced: false, shortNames: ['pv'], hasStatus: true }),
  define({ resource: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim', namespaced: true, shortNames: ['pvc'], hasStatus: true }),
  define({
    resource: 'nodes',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    hasStatus: true,
    fields: { 'spec.unschedulable': (o) => String(o.spec?.unschedulable ?? false) },
  }),
  define({
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    hasStatus: true,
    fields: { 'status.phase': (o) => str(o.status?.phase) },
  }),
  define({ resource: 'configmaps', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'] }),
  define({ resource: 'secrets', kind: 'Secret', namespaced: true, fields: { type: (o) => str(o.type) } }),
  define({ resource: 'services', kind: 'Service', namespaced: true, shortNames: ['svc'], categories: ['all'], hasStatus: true }),
  define({ resource: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true, shortNames: ['sa'] }),
  define({ resource: 'events', kind: 'Event', namespaced: true, shortNames: ['ev'], fields: eventFields }),
  define({
    resource: 'pods',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    categories: ['all'],
    hasStatus: true,
    returnsDeletedObject: true,
    fields: {
      'spec.nodeName': (o) => str(o.spec?.nodeName) ?? '',
      'spec.restartPolicy': (o) => str(o.spec?.restartPolicy),
      'spec.schedulerName': (o) => str(o.spec?.schedulerName),
      'spec.serviceAccountName': (o) => str(o.spec?.serviceAccountName),
      'spec.hostNetwork': (o) => String(o.spec?.hostNetwork ?? false),
      'status.phase': (o) => str(o.status?.phase),
      'status.podIP': (o) => str(o.status?.podIP) ?? '',
      'status.nominatedNodeName': (o) => str(o.status?.nominatedNodeName) ?? '',
    },
  }),
  define({ group: 'storage.k8s.io', resource: 'storageclasses', kind: 'StorageClass', namespaced: false, shortNames: ['sc'] }),
  define({
    group: 'batch',
    resource: 'jobs',
    kind: 'Job',
    namespaced: true,
    categories: ['all'],
    hasStatus: true,
    tracksGeneration: true,
    defaultPropagation: 'Orphan',
    fields: { 'status.successful': (o) => String(o.status?.succeeded ?? 0) },
  }),
  define({ group: 'apps', resource: 'daemonsets', kind: 'DaemonSet', namespaced: true, shortNames: ['ds'], categories: ['all'], hasStatus: true, tracksGeneration: true }),
  define({ group: 'apps', resource: 'deployments', kind: 'Deployment', namespaced: true, shortNames: ['deploy'], categories: ['all'], hasStatus: true, tracksGeneration: true }),
  define({ group: 'coordination.k8s.io', resource: 'leases', kind: 'Lease', namespaced: true }),
  define({ group: 'events.k8s.io', resource: 'events', kind: 'Event', namespaced: true, fields: eventsV1Fields }),
  define({ group: 'rbac.authorization.k8s.io', resource: 'roles', kind: 'Role', namespaced: true }),
  define({ group: 'rbac.authorization.k8s.io', resource: 'rolebindings', kind: 'RoleBinding', namespaced: true }),
  define({ group: 'rbac.authorization.k8s.io', resource: 'clusterroles', kind: 'ClusterRole', namespaced: false }),
  define({ group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', kind: 'ClusterRoleBinding', namespaced: false }),
  define({ group: 'authorization.k8s.io', resource: 'selfsubjectaccessreviews', kind: 'SelfSubjectAccessReview', namespaced: false, verbs: ['create'] }),
  define({ group: 'monitoring.coreos.com', resource: 'servicemonitors', kind: 'ServiceMonitor', namespaced: true, shortNames: ['smon'], categories: ['prometheus-operator'], custom: true }),
  define({ group: 'monitoring.coreos.com', resource: 'prometheusrules', kind: 'PrometheusRule', namespaced: true, shortNames: ['promrule'], categories: ['prometheus-operator'], custom: true }),
];

const byPath = new Map<string, ResourceType>(RESOURCES.map((r) => [`${groupVersion(r)}/${r.resource}`, r]));

/** The resource served at `/api/v1/<resource>` or `/apis/<group>/<version>/<resource>`, if any. */
export function findResource(gv: string, resource: string): ResourceType | undefined {
  return byPath.get(`${gv}/${resource}`);
}

/** The resource whose objects have this apiVersion and kind, if any. */
export function resourceForKind(apiVersion: string, kind: string): ResourceType | undefined {
  return RESOURCES.find((r) => groupVersion(r) === apiVersion && r.kind === kind);
}

/** Served group versions, core first, in the order discovery lists them. */
export function groupVersions(): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const r of RESOURCES) seen.set(groupVersion(r), { group: r.group, version: r.version });
  return [...seen.values()];
}
