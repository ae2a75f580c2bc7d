/**
 * Decoding rules of the real server for built-in kinds: fields the Go types do
 * not have are dropped (with a warning, or a 400 under `fieldValidation=Strict`),
 * and times are re-encoded as the Go types encode them — metav1.Time to whole
 * seconds, metav1.MicroTime to microseconds — so a client that sends
 * milliseconds reads back what a real cluster would return. The field lists come
 * from client-node's generated models, which mirror the Go types field for field.
 */
import * as models from '@kubernetes/client-node';
import { ResourceType } from './resources';
import { badRequest } from './status';

interface Attribute {
  readonly baseName: string;
  readonly type: string;
}

type ModelClass = { getAttributeTypeMap(): Attribute[] };

const catalog = models as unknown as Record<string, ModelClass | undefined>;

const fieldTypes = new Map<string, Map<string, string> | undefined>();

/** Field name to field type of a model, or undefined for leaf types (string, Date, IntOrString...). */
function fieldsOf(type: string): Map<string, string> | undefined {
  if (!fieldTypes.has(type)) {
    const cls = catalog[type];
    const attrs = typeof cls?.getAttributeTypeMap === 'function' ? cls.getAttributeTypeMap() : undefined;
    fieldTypes.set(type, attrs && new Map(attrs.map((a) => [a.baseName, a.type])));
  }
  return fieldTypes.get(type);
}

/** The client-node model class naming this resource's type (custom resources have none). */
function rootType(r: ResourceType): string | undefined {
  if (r.custom) return undefined;
  if (r.kind === 'Event') return r.group ? 'EventsV1Event' : 'CoreV1Event';
  return `V1${r.kind}`;
}

/** Re-encodes a time as metav1.Time (seconds) or MicroTime (microseconds); throws for a string that is not RFC 3339. */
function encodeTime(value: unknown, micro: boolean, path: string): string {
  const m = typeof value === 'string' ? /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/.exec(value) : null;
  if (!m) throw badRequest(`json: cannot unmarshal ${JSON.stringify(value)} into Go struct field .${path} of type ${micro ? 'v1.MicroTime' : 'v1.Time'}`);
  const utc = new Date(`${m[1]}${m[3]}`).toISOString().slice(0, 19);
  return micro ? `${utc}.${((m[2] ?? '.').slice(1) + '000000').slice(0, 6)}Z` : `${utc}Z`;
}

function walk(value: any, type: string, path: string, unknown: string[]): any {
  if (value === null || value === undefined) return value;
  if (type === 'Date' || type === 'V1MicroTime') return encodeTime(value, type === 'V1MicroTime', path);
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((v, i) => { value[i] = walk(v, array[1], `${path}[${i}]`, unknown); });
    return value;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === 'object') for (const [k, v] of Object.entries(value)) value[k] = walk(v, map[1], `${path}[${k}]`, unknown);
    return value;
  }
  const known = fieldsOf(type);
  if (!known || typeof value !== 'object' || Array.isArray(value)) return value;
  for (const key of Object.keys(value)) {
    const t = known.get(key);
    const p = path ? `${path}.${key}` : key;
    if (t === undefined) {
      unknown.push(p);
      delete value[key];
    } else {
      value[key] = walk(value[key], t, p, unknown);
    }
  }
  return value;
}

/**
 * Removes fields the kind does not have from `obj` and re-encodes its times (in
 * place); returns the removed fields' paths, as `spec.foo`. A Secret's
 * stringData is merged into its data, as the v1 conversion merges it (the
 * stored object has no stringData).
 */
export function decodeFields(r: ResourceType, obj: any): string[] {
  const type = rootType(r);
  const unknown: string[] = [];
  if (type) walk(obj, type, '', unknown);
  if (type === 'V1Secret' && obj.stringData) {
    obj.data = { ...obj.data };
    for (const [k, v] of Object.entries(obj.stringData)) obj.data[k] = Buffer.from(String(v), 'utf8').toString('base64');
    delete obj.stringData;
  }
  return unknown;
}
