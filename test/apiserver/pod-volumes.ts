/**
 * A pod's volumes and its containers' mounts of them, as the core validation
 * checks them (ValidateVolumes, validateVolumeSource, ValidateVolumeMounts,
 * validateMountPropagation): unique DNS-label names, exactly one source per
 * volume, hostPath types, mounts of declared volumes on unique paths.
 */
import { duplicate, forbiddenField, invalidValue, notFound, required, unsupported } from './causes';
import { dnsLabelProblems } from './names';
import { compareQuantities, parseQuantity } from './quantity';
import { StatusCause } from './status';

/**
 * The volume sources in the order the real validation tries them: the first
 * one set is the volume's source, each later one is "more than 1 volume type".
 * The path segment is the one the real errors name (two differ from the JSON name).
 */
const SOURCES: readonly (readonly [json: string, path: string])[] = [
  ['emptyDir', 'emptyDir'], ['hostPath', 'hostPath'], ['gitRepo', 'gitRepo'], ['gcePersistentDisk', 'gcePersistentDisk'],
  ['awsElasticBlockStore', 'awsElasticBlockStore'], ['secret', 'secret'], ['nfs', 'nfs'], ['iscsi', 'iscsi'], ['glusterfs', 'glusterfs'],
  ['flocker', 'flocker'], ['persistentVolumeClaim', 'persistentVolumeClaim'], ['rbd', 'rbd'], ['cinder', 'cinder'], ['cephfs', 'cephFS'],
  ['quobyte', 'quobyte'], ['downwardAPI', 'downwarAPI'], ['fc', 'fc'], ['flexVolume', 'flexVolume'], ['configMap', 'configMap'],
  ['azureFile', 'azureFile'], ['vsphereVolume', 'vsphereVolume'], ['photonPersistentDisk', 'photonPersistentDisk'],
  ['portworxVolume', 'portworxVolume'], ['azureDisk', 'azureDisk'], ['storageos', 'storageos'], ['projected', 'projected'],
  ['scaleIO', 'scaleIO'], ['csi', 'csi'], ['ephemeral', 'ephemeral'], ['image', 'image'],
];

const HOST_PATH_TYPES = ['', 'BlockDevice', 'CharDevice', 'Directory', 'DirectoryOrCreate', 'File', 'FileOrCreate', 'Socket'];
const FILE_MODE = 'must be a number between 0 and 0777 (octal), both inclusive';

const set = (v: unknown) => v !== undefined && v !== null;

/** validatePathNoBacksteps: no `..` element. */
function backstepProblems(field: string, path: string): StatusCause[] {
  return path.split('/').includes('..') ? [invalidValue(field, path, "must not contain '..'")] : [];
}

/** validateLocalDescendingPath: relative, no `..` element (subPath, item paths). */
function descendingPathProblems(field: string, path: string): StatusCause[] {
  return [...(path.startsWith('/') ? [invalidValue(field, path, 'must be a relative path')] : []), ...backstepProblems(field, path)];
}

function modeProblems(field: string, mode: unknown): StatusCause[] {
  return typeof mode === 'number' && (mode < 0 || mode > 0o777) ? [invalidValue(field, mode, FILE_MODE)] : [];
}

/** validateKeyToPath: the items of configMap and secret volumes. */
function itemsProblems(field: string, items: any[] | undefined): StatusCause[] {
  return (items ?? []).flatMap((item: any, i: number) => {
    const f = `${field}.items[${i}]`;
    const out: StatusCause[] = [];
    if (!item?.key) out.push(required(`${f}.key`));
    if (!item?.path) {out.push(required(`${f}.path`));} else {
      out.push(...descendingPathProblems(`${f}.path`, item.path));
      if (item.path.startsWith('..')) out.push(invalidValue(`${f}.path`, item.path, "must not start with '..'"));
    }
    return [...out, ...modeProblems(`${f}.mode`, item?.mode)];
  });
}

/** The checks of the one source a volume has. */
function sourceProblems(field: string, json: string, source: any): StatusCause[] {
  switch (json) {
    case 'hostPath':
      if (!source.path) return [required(`${field}.path`)];
      return [
        ...backstepProblems(`${field}.path`, source.path),
        ...(set(source.type) && !HOST_PATH_TYPES.includes(source.type) ? [unsupported(`${field}.type`, source.type, HOST_PATH_TYPES)] : []),
      ];
    case 'emptyDir':
      return set(source.sizeLimit) && compareQuantities(parseQuantity(source.sizeLimit), { num: 0n, den: 1n }) < 0
        ? [forbiddenField(`${field}.sizeLimit`, 'SizeLimit field must be a valid resource quantity')] : [];
    case 'configMap':
      return [...(source.name ? [] : [required(`${field}.name`)]), ...modeProblems(`${field}.defaultMode`, source.defaultMode), ...itemsProblems(field, source.items)];
    case 'secret':
      return [...(source.secretName ? [] : [required(`${field}.secretName`)]), ...modeProblems(`${field}.defaultMode`, source.defaultMode), ...itemsProblems(field, source.items)];
    case 'persistentVolumeClaim':
      return source.claimName ? [] : [required(`${field}.claimName`)];
    case 'nfs':
      return [
        ...(source.server ? [] : [required(`${field}.server`)]),
        ...(source.path ? [] : [required(`${field}.path`)]),
        ...(String(source.path ?? '').startsWith('/') ? [] : [invalidValue(`${field}.path`, source.path ?? '', 'must be an absolute path')]),
      ];
    default:
      return [];
  }
}

export interface VolumesResult {
  readonly problems: StatusCause[];
  /** Volumes without problems, by name: what containers may mount. */
  readonly valid: ReadonlyMap<string, any>;
}

/** ValidateVolumes: names unique DNS labels, exactly one source each; only flawless volumes may be mounted. */
export function volumesProblems(field: string, volumes: any[] | undefined): VolumesResult {
  const problems: StatusCause[] = [];
  const valid = new Map<string, any>();
  (volumes ?? []).forEach((v: any, i: number) => {
    const f = `${field}[${i}]`;
    const own: StatusCause[] = [];
    const present = SOURCES.filter(([json]) => set(v?.[json]));
    if (present.length === 0) {own.push(required(f, 'must specify a volume type'));} else {
      const [json, path] = present[0];
      own.push(...sourceProblems(`${f}.${path}`, json, v[json]));
      for (const [, extra] of present.slice(1)) own.push(forbiddenField(`${f}.${extra}`, 'may not specify more than 1 volume type'));
    }
    const name = v?.name ?? '';
    if (!name) own.push(required(`${f}.name`));
    else own.push(...dnsLabelProblems(`${f}.name`, name));
    if (valid.has(name)) own.push(duplicate(`${f}.name`, name));
    if (own.length === 0) valid.set(name, v);
    problems.push(...own);
  });
  return { problems, valid };
}

const PROPAGATIONS = ['Bidirectional', 'HostToContainer', 'None'];

/** ValidateVolumeMounts with validateMountPropagation, for one container. */
export function volumeMountsProblems(field: string, container: any, volumes: ReadonlyMap<string, any>): StatusCause[] {
  const out: StatusCause[] = [];
  const paths = new Set<string>();
  const privileged = container?.securityContext?.privileged === true;
  (container?.volumeMounts ?? []).forEach((m: any, i: number) => {
    const f = `${field}[${i}]`;
    const name = m?.name ?? '';
    const path = m?.mountPath ?? '';
    if (!name) out.push(required(`${f}.name`));
    if (!volumes.has(name)) out.push(notFound(`${f}.name`, name));
    if (!path) out.push(required(`${f}.mountPath`));
    if (paths.has(path)) out.push(invalidValue(`${f}.mountPath`, path, 'must be unique'));
    paths.add(path);
    // The real validation names the list, not the entry, for these three.
    if (m?.subPath) out.push(...descendingPathProblems(`${field}.subPath`, m.subPath));
    if (m?.subPathExpr) {
      if (m.subPath) out.push(invalidValue(`${f}.subPathExpr`, m.subPathExpr, 'subPathExpr and subPath are mutually exclusive'));
      out.push(...descendingPathProblems(`${field}.subPathExpr`, m.subPathExpr));
    }
    if (set(m?.mountPropagation)) {
      if (!PROPAGATIONS.includes(m.mountPropagation)) out.push(unsupported(`${field}.mountPropagation`, m.mountPropagation, PROPAGATIONS));
      if (m.mountPropagation === 'Bidirectional' && !privileged) {
        out.push(forbiddenField(`${field}.mountPropagation`, 'Bidirectional mount propagation is available only to privileged containers'));
      }
    }
  });
  return out;
}
