/**
 * Unknown-field handling as the real server decodes built-in kinds: fields the
 * Go types do not have are dropped (with a warning, or a 400 under
 * `fieldValidation=Strict`). The field lists come from client-node's generated
 * models, which mirror the Go types field for field.
 */
import * as models from '@kubernetes/client-node';
import { ResourceType } from './resources';

interface Attribute {
  readonly baseName: string;
  readonly type: string;
}

type ModelClass = { getAttributeTypeMap(): Attribute[] };

const catalog = models as unknown as Record<string, ModelClass | undefined>;

function modelOf(type: string): Attribute[] | undefined {
  const cls = catalog[type];
  return typeof cls?.getAttributeTypeMap === 'function' ? cls.getAttributeTypeMap() : undefined;
}

/** The client-node model class naming this resource's type (custom resources have none). */
function rootType(r: ResourceType): string | undefined {
  if (r.custom) return undefined;
  if (r.kind === 'Event') return r.group ? 'EventsV1Event' : 'CoreV1Event';
  return `V1${r.kind}`;
}

function walk(value: any, type: string, path: string, unknown: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, array[1], `${path}[${i}]`, unknown));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, map[1], `${path}[${k}]`, unknown);
    return;
  }
  const attrs = modelOf(type);
  if (!attrs || typeof value !== 'object' || Array.isArray(value)) return;
  const known = new Map(attrs.map((a) => [a.baseName, a.type]));
  for (const key of Object.keys(value)) {
    const t = known.get(key);
    const p = path ? `${path}.${key}` : key;
    if (t === undefined) {
      unknown.push(p);
      delete value[key];
    } else {
      walk(value[key], t, p, unknown);
    }
  }
}

/** Removes fields the kind does not have from `obj` (in place) and names them, as `spec.foo`. */
export function pruneUnknownFields(r: ResourceType, obj: any): string[] {
  const type = rootType(r);
  const unknown: string[] = [];
  if (type) walk(obj, type, '', unknown);
  return unknown;
}
