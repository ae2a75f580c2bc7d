/**
 * The three patch formats the real server accepts for built-in kinds:
 * JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch
 * (k8s.io/apimachinery pkg/util/strategicpatch), the last with the merge keys and
 * strategies of the fields `kubectl apply` touches.
 */
import { ApiError, badRequest } from './status';

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 7386: objects merge recursively, null removes, everything else replaces. */
export function mergePatch(target: any, patch: any): any {
  if (!isObject(patch)) return patch;
  const out: Record<string, any> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unprocessable(message: string): ApiError {
  return new ApiError(422, 'Invalid', message);
}

function parsePointer(p: string): string[] {
  if (p === '') return [];
  if (!p.startsWith('/')) throw unprocessable(`JSON pointer "${p}" must start with /`);
  return p.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function walk(doc: any, path: string[], op: string): { parent: any; key: string } {
  let cur = doc;
  for (const seg of path.slice(0, -1)) {
    cur = Array.isArray(cur) ? cur[Number(seg)] : isObject(cur) ? cur[seg] : undefined;
    if (cur === undefined) throw unprocessable(`${op} operation does not apply: doc is missing path: "/${path.join('/')}": missing value`);
  }
  return { parent: cur, key: path[path.length - 1] };
}

function getAt(doc: any, path: string[], op: string): any {
  if (path.length === 0) return doc;
  const { parent, key } = walk(doc, path, op);
  const v = Array.isArray(parent) ? parent[Number(key)] : parent?.[key];
  if (v === undefined) throw unprocessable(`${op} operation does not apply: doc is missing path: "/${path.join('/')}": missing value`);
  return v;
}

function removeAt(doc: any, path: string[], op: string): any {
  const { parent, key } = walk(doc, path, op);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!(i >= 0 && i < parent.length)) throw unprocessable(`${op} operation does not apply: doc is missing path: "/${path.join('/')}": missing value`);
    return parent.splice(i, 1)[0];
  }
  if (!isObject(parent) || !(key in parent)) throw unprocessable(`${op} operation does not apply: doc is missing path: "/${path.join('/')}": missing value`);
  const v = parent[key];
  delete parent[key];
  return v;
}

function addAt(doc: any, path: string[], value: any, replace: boolean, op: string): any {
  if (path.length === 0) return value;
  const { parent, key } = walk(doc, path, op);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(i) || i < 0 || i > parent.length || (replace && i >= parent.length)) {
      throw unprocessable(`${op} operation does not apply: doc is missing path: "/${path.join('/')}": missing value`);
    }
    if (replace) parent[i] = value;
    else parent.splice(i, 0, value);
  } else if (isObject(parent)) {
    if (replace && !(key in parent)) throw unprocessable(`replace operation does not apply: doc is missing key: /${path.join('/')}: missing value`);
    parent[key] = value;
  } else {
    throw unprocessable(`${op} operation does not apply: doc is missing path: "/${path.join('/')}": missing value`);
  }
  return doc;
}

/** RFC 6902 on a private copy of `doc`. */
export function jsonPatch(doc: any, ops: unknown): any {
  if (!Array.isArray(ops)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let out = structuredClone(doc);
  for (const o of ops) {
    if (!isObject(o) || typeof o.op !== 'string') throw badRequest('json patch operation must be an object with "op"');
    const path = parsePointer(String(o.path ?? ''));
    switch (o.op) {
      case 'add': out = addAt(out, path, structuredClone(o.value), false, 'add'); break;
      case 'replace': out = addAt(out, path, structuredClone(o.value), true, 'replace'); break;
      case 'remove': removeAt(out, path, 'remove'); break;
      case 'move': {
        const v = removeAt(out, parsePointer(String(o.from)), 'move');
        out = addAt(out, path, v, false, 'move');
        break;
      }
      case 'copy': out = addAt(out, path, structuredClone(getAt(out, parsePointer(String(o.from)), 'copy')), false, 'copy'); break;
      case 'test':
        if (JSON.stringify(getAt(out, path, 'test')) !== JSON.stringify(o.value)) {
          throw unprocessable(`testing value /${path.join('/')} failed: test failed`);
        }
        break;
      default: throw badRequest(`Unexpected kind: ${o.op}`);
    }
  }
  return out;
}

/**
 * How strategic merge patch treats one field: `mergeKey` lists merge element-wise
 * by that key, `primitive` lists merge as sets, `retainKeys` maps drop keys the
 * patch does not name. `fields` describes the elements (lists) or the value (maps).
 */
export interface PatchMeta {
  readonly mergeKey?: string;
  readonly primitive?: boolean;
  readonly retainKeys?: boolean;
  readonly fields?: Readonly<Record<string, PatchMeta>>;
}

export type PatchSchema = Readonly<Record<string, PatchMeta>>;

const conditions: PatchMeta = { mergeKey: 'type' };

const container: PatchSchema = {
  env: { mergeKey: 'name' },
  ports: { mergeKey: 'containerPort' },
  volumeMounts: { mergeKey: 'mountPath' },
  volumeDevices: { mergeKey: 'devicePath' },
};

const podSpec: PatchSchema = {
  containers: { mergeKey: 'name', fields: container },
  initContainers: { mergeKey: 'name', fields: container },
  ephemeralContainers: { mergeKey: 'name', fields: container },
  volumes: { mergeKey: 'name', fields: { '': { retainKeys: true } } },
  imagePullSecrets: { mergeKey: 'name' },
  hostAliases: { mergeKey: 'ip' },
  topologySpreadConstraints: { mergeKey: 'topologyKey' },
  resourceClaims: { mergeKey: 'name' },
  schedulingGates: { mergeKey: 'name' },
};

const metadata: PatchMeta = { fields: { finalizers: { primitive: true }, ownerReferences: { mergeKey: 'uid' } } };

const workloadStatus: PatchMeta = { fields: { conditions } };
const template: PatchMeta = { fields: { metadata, spec: { fields: podSpec } } };

/** Patch metadata per kind for the kinds served here (fields not named replace atomically). */
export const PATCH_SCHEMAS: Readonly<Record<string, PatchSchema>> = {
  Pod: { metadata, spec: { fields: podSpec }, status: { fields: { conditions, containerStatuses: {}, podIPs: { mergeKey: 'ip' } } } },
  Job: { metadata, spec: { fields: { template } }, status: workloadStatus },
  DaemonSet: { metadata, spec: { fields: { template } }, status: workloadStatus },
  Deployment: { metadata, spec: { fields: { template, strategy: { retainKeys: true } } }, status: workloadStatus },
  Service: { metadata, spec: { fields: { ports: { mergeKey: 'port' } } }, status: { fields: { conditions } } },
  Node: { metadata, status: { fields: { conditions, addresses: { mergeKey: 'type' } } } },
  Namespace: { metadata, status: { fields: { conditions } } },
  PersistentVolumeClaim: { metadata, status: { fields: { conditions } } },
};

/** Patch metadata of a kind; every kind at least merges finalizers and ownerReferences. */
export function patchSchemaFor(kind: string): PatchSchema {
  return PATCH_SCHEMAS[kind] ?? { metadata };
}

const DIRECTIVE = '$patch';
const SET_ORDER = '$setElementOrder/';
const DELETE_PRIMITIVE = '$deleteFromPrimitiveList/';
const RETAIN_KEYS = '$retainKeys';

function smpMap(original: any, patch: Record<string, any>, schema: PatchSchema, retainKeys: boolean): any {
  if (patch[DIRECTIVE] === 'replace') {
    const { [DIRECTIVE]: _d, ...rest } = patch;
    return stripDirectives(rest);
  }
  if (patch[DIRECTIVE] === 'delete') return undefined;
  const out: Record<string, any> = isObject(original) ? { ...original } : {};
  const orders: Record<string, any[]> = {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === DIRECTIVE || k === RETAIN_KEYS) continue;
    if (k.startsWith(SET_ORDER)) {
      orders[k.slice(SET_ORDER.length)] = v;
      continue;
    }
    if (k.startsWith(DELETE_PRIMITIVE)) {
      const field = k.slice(DELETE_PRIMITIVE.length);
      const drop = new Set((v as any[]).map((x) => JSON.stringify(x)));
      if (Array.isArray(out[field])) out[field] = out[field].filter((x: any) => !drop.has(JSON.stringify(x)));
      continue;
    }
    if (v === null) {
      delete out[k];
      continue;
    }
    const meta = schema[k] ?? {};
    if (Array.isArray(v)) {
      out[k] = smpList(out[k], v, meta);
    } else if (isObject(v)) {
      out[k] = smpMap(out[k], v, meta.fields ?? {}, meta.retainKeys ?? false);
      if (out[k] === undefined) delete out[k];
    } else {
      out[k] = v;
    }
  }
  for (const [field, order] of Object.entries(orders)) {
    if (Array.isArray(out[field])) out[field] = applyOrder(out[field], order, schema[field]?.mergeKey);
  }
  if (retainKeys && Array.isArray(patch[RETAIN_KEYS])) {
    const keep = new Set<string>(patch[RETAIN_KEYS]);
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }
  return out;
}

function applyOrder(list: any[], order: any[], mergeKey: string | undefined): any[] {
  const id = (x: any) => JSON.stringify(mergeKey ? (isObject(x) ? x[mergeKey] : x) : x);
  const rank = new Map(order.map((o, i) => [id(o), i]));
  const ordered = list.filter((x) => rank.has(id(x))).sort((a, b) => rank.get(id(a))! - rank.get(id(b))!);
  return [...ordered, ...list.filter((x) => !rank.has(id(x)))];
}

function smpList(original: any, patch: any[], meta: PatchMeta): any[] {
  const replaceDirective = patch.find((x) => isObject(x) && x[DIRECTIVE] === 'replace' && Object.keys(x).length === 1);
  if (replaceDirective) return stripDirectives(patch.filter((x) => x !== replaceDirective));
  const base: any[] = Array.isArray(original) ? [...original] : [];
  if (meta.primitive) {
    const seen = new Set(base.map((x) => JSON.stringify(x)));
    for (const x of patch) if (!seen.has(JSON.stringify(x))) base.push(x);
    return base;
  }
  const key = meta.mergeKey;
  if (!key) return stripDirectives(patch);
  const elementSchema = meta.fields ?? {};
  const retain = elementSchema['']?.retainKeys ?? false;
  for (const item of patch) {
    if (!isObject(item)) throw badRequest(`unable to find api field in struct for ${key}`);
    const i = base.findIndex((x) => isObject(x) && x[key] === item[key]);
    if (item[DIRECTIVE] === 'delete') {
      if (i >= 0) base.splice(i, 1);
      continue;
    }
    if (i >= 0) base[i] = smpMap(base[i], item, elementSchema, retain);
    else base.push(smpMap(undefined, item, elementSchema, retain));
  }
  return base;
}

function stripDirectives(v: any): any {
  if (Array.isArray(v)) return v.map(stripDirectives);
  if (!isObject(v)) return v;
  const out: Record<string, any> = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === DIRECTIVE || k === RETAIN_KEYS || k.startsWith(SET_ORDER) || k.startsWith(DELETE_PRIMITIVE)) continue;
    out[k] = stripDirectives(x);
  }
  return out;
}

/** Strategic merge patch of `original` with `patch` under the kind's patch metadata. */
export function strategicMergePatch(original: any, patch: unknown, schema: PatchSchema): any {
  if (!isObject(patch)) throw badRequest('json: cannot unmarshal array into Go value of type map[string]interface {}');
  return smpMap(original, patch, schema, false);
}
