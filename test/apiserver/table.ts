/**
 * Server-side printing: the `meta.k8s.io/v1` Table that kubectl asks for
 * (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), with the columns the
 * real server prints for the kinds we care about and Name/Age for the rest.
 */
import { ResourceType, groupVersion } from './resources';
import { Entry } from './store';

interface Column {
  readonly name: string;
  readonly type: string;
  readonly format?: string;
  readonly priority?: number;
  readonly cell: (o: any) => unknown;
}

/** Age as kubectl prints it (k8s.io/apimachinery pkg/util/duration.HumanDuration). */
export function humanDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 ? `${m}m${s % 60}s` : `${m}m`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 ? `${h}h${m % 60}m` : `${h}h`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 ? `${d}d${h % 24}h` : `${d}d`;
  if (d < 730) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

const name: Column = { name: 'Name', type: 'string', format: 'name', cell: (o) => o.metadata.name };
const age: Column = {
  name: 'Age',
  type: 'string',
  cell: (o) => (o.metadata.creationTimestamp ? humanDuration((Date.now() - Date.parse(o.metadata.creationTimestamp)) / 1000) : '<unknown>'),
};
const modes = (m: string[] | undefined) => (m ?? []).map((x) => ({ ReadWriteOnce: 'RWO', ReadOnlyMany: 'ROX', ReadWriteMany: 'RWX', ReadWriteOncePod: 'RWOP' } as any)[x] ?? x).join(',');
const claim = (o: any) => (o.spec?.claimRef ? `${o.spec.claimRef.namespace}/${o.spec.claimRef.name}` : '');

const COLUMNS: Record<string, Column[]> = {
  'v1/PersistentVolume': [name,
    { name: 'Capacity', type: 'string', cell: (o) => o.spec?.capacity?.storage ?? '' },
    { name: 'Access Modes', type: 'string', cell: (o) => modes(o.spec?.accessModes) },
    { name: 'Reclaim Policy', type: 'string', cell: (o) => o.spec?.persistentVolumeReclaimPolicy ?? '' },
    { name: 'Status', type: 'string', cell: (o) => o.status?.phase ?? '' },
    { name: 'Claim', type: 'string', cell: claim },
    { name: 'StorageClass', type: 'string', cell: (o) => o.spec?.storageClassName ?? '' },
    { name: 'VolumeAttributesClass', type: 'string', cell: (o) => o.spec?.volumeAttributesClassName ?? '<unset>' },
    { name: 'Reason', type: 'string', cell: (o) => o.status?.reason ?? '' },
    age,
    { name: 'VolumeMode', type: 'string', priority: 1, cell: (o) => o.spec?.volumeMode ?? '' }],
  'v1/PersistentVolumeClaim': [name,
    { name: 'Status', type: 'string', cell: (o) => o.status?.phase ?? '' },
    { name: 'Volume', type: 'string', cell: (o) => o.spec?.volumeName ?? '' },
    { name: 'Capacity', type: 'string', cell: (o) => o.status?.capacity?.storage ?? '' },
    { name: 'Access Modes', type: 'string', cell: (o) => modes(o.status?.accessModes) },
    { name: 'StorageClass', type: 'string', cell: (o) => o.spec?.storageClassName ?? '' },
    { name: 'VolumeAttributesClass', type: 'string', cell: (o) => o.spec?.volumeAttributesClassName ?? '<unset>' },
    age],
  'v1/Namespace': [name, { name: 'Status', type: 'string', cell: (o) => o.status?.phase ?? '' }, age],
  'v1/ConfigMap': [name, { name: 'Data', type: 'integer', cell: (o) => Object.keys(o.data ?? {}).length + Object.keys(o.binaryData ?? {}).length }, age],
  'v1/Secret': [name, { name: 'Type', type: 'string', cell: (o) => o.type ?? '' }, { name: 'Data', type: 'integer', cell: (o) => Object.keys(o.data ?? {}).length }, age],
  'batch/v1/Job': [name,
    { name: 'Status', type: 'string', cell: (o) => jobStatus(o) },
    { name: 'Completions', type: 'string', cell: (o) => `${o.status?.succeeded ?? 0}/${o.spec?.completions ?? 1}` },
    { name: 'Duration', type: 'string', cell: (o) => (o.status?.startTime ? humanDuration(((o.status.completionTime ? Date.parse(o.status.completionTime) : Date.now()) - Date.parse(o.status.startTime)) / 1000) : '') },
    age],
  'coordination.k8s.io/v1/Lease': [name, { name: 'Holder', type: 'string', cell: (o) => o.spec?.holderIdentity ?? '' }, age],
  'storage.k8s.io/v1/StorageClass': [name,
    { name: 'Provisioner', type: 'string', cell: (o) => o.provisioner ?? '' },
    { name: 'ReclaimPolicy', type: 'string', cell: (o) => o.reclaimPolicy ?? '' },
    { name: 'VolumeBindingMode', type: 'string', cell: (o) => o.volumeBindingMode ?? '' },
    { name: 'AllowVolumeExpansion', type: 'string', cell: (o) => String(o.allowVolumeExpansion ?? false) },
    age],
  'v1/Node': [name,
    { name: 'Status', type: 'string', cell: (o) => nodeStatus(o) },
    { name: 'Roles', type: 'string', cell: (o) => nodeRoles(o) },
    age,
    { name: 'Version', type: 'string', cell: (o) => o.status?.nodeInfo?.kubeletVersion ?? '' }],
  'apps/v1/DaemonSet': [name,
    { name: 'Desired', type: 'integer', cell: (o) => o.status?.desiredNumberScheduled ?? 0 },
    { name: 'Current', type: 'integer', cell: (o) => o.status?.currentNumberScheduled ?? 0 },
    { name: 'Ready', type: 'integer', cell: (o) => o.status?.numberReady ?? 0 },
    { name: 'Up-to-date', type: 'integer', cell: (o) => o.status?.updatedNumberScheduled ?? 0 },
    { name: 'Available', type: 'integer', cell: (o) => o.status?.numberAvailable ?? 0 },
    { name: 'Node Selector', type: 'string', cell: (o) => Object.entries(o.spec?.template?.spec?.nodeSelector ?? {}).map(([k, v]) => `${k}=${v}`).join(',') || '<none>' },
    age],
  'apps/v1/Deployment': [name,
    { name: 'Ready', type: 'string', cell: (o) => `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 1}` },
    { name: 'Up-to-date', type: 'integer', cell: (o) => o.status?.updatedReplicas ?? 0 },
    { name: 'Available', type: 'integer', cell: (o) => o.status?.availableReplicas ?? 0 },
    age],
};

function nodeStatus(o: any): string {
  const ready = (o.status?.conditions ?? []).find((c: any) => c.type === 'Ready');
  const status = ready?.status === 'True' ? 'Ready' : 'NotReady';
  return o.spec?.unschedulable ? `${status},SchedulingDisabled` : status;
}

function nodeRoles(o: any): string {
  const roles = Object.keys(o.metadata?.labels ?? {})
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length));
  return roles.length ? roles.sort().join(',') : '<none>';
}

function jobStatus(o: any): string {
  const c = (t: string) => (o.status?.conditions ?? []).some((x: any) => x.type === t && x.status === 'True');
  if (c('Complete')) return 'Complete';
  if (c('Failed')) return 'Failed';
  if (o.spec?.suspend) return 'Suspended';
  return 'Running';
}

export type IncludeObject = 'None' | 'Metadata' | 'Object';

function columnsFor(r: ResourceType): Column[] {
  return COLUMNS[`${groupVersion(r)}/${r.kind}`] ?? [name, age];
}

/** Whether the Accept header asks for a Table. */
export function wantsTable(accept: string | undefined): boolean {
  return !!accept && accept.split(',')[0].includes('as=Table');
}

/** A Table of the entries, as JSON text. */
export function renderTable(r: ResourceType, entries: Entry[], include: IncludeObject, listMeta: object = {}): string {
  const cols = columnsFor(r);
  const rows = entries.map((e) => {
    const object = include === 'None' ? undefined
      : include === 'Object' ? e.obj
        : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: e.obj.metadata };
    return { cells: cols.map((c) => c.cell(e.obj)), ...(object ? { object } : {}) };
  });
  return JSON.stringify({
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: cols.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: '', priority: c.priority ?? 0 })),
    rows,
  });
}
