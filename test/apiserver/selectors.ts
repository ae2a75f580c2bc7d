/**
 * Label and field selectors, parsed once per request into predicates. Grammar as
 * in k8s.io/apimachinery pkg/labels and pkg/fields; unparsable selectors and
 * unsupported field labels are 400 BadRequest, as the real server answers.
 */
import { ResourceType } from './resources';
import { badRequest } from './status';

export type Predicate = (obj: any) => boolean;

const always: Predicate = () => true;

/** Splits on commas that are not inside parentheses. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  parts.push(cur);
  return parts.map((p) => p.trim());
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

function requirement(text: string): Predicate {
  const fail = (why: string) => badRequest(`unable to parse requirement: ${why}`);
  const checkKey = (k: string) => {
    if (!LABEL_KEY.test(k)) throw fail(`key: Invalid value: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`);
    return k;
  };
  const checkValue = (v: string) => {
    if (!LABEL_VALUE.test(v)) throw fail(`values[0][${v}]: Invalid value: "${v}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`);
    return v;
  };
  let m = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(text);
  if (m) {
    const key = checkKey(m[1]);
    const values = new Set(m[3].split(',').map((v) => checkValue(v.trim())));
    if (m[2] === 'in') return (l) => l[key] !== undefined && values.has(l[key]);
    return (l) => l[key] === undefined || !values.has(l[key]);
  }
  m = /^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(\S*)$/.exec(text);
  if (m) {
    const key = checkKey(m[1]);
    const op = m[2];
    if (op === '<' || op === '>') {
      const n = Number(m[3]);
      if (!/^-?\d+$/.test(m[3])) throw fail('for \'Gt\', \'Lt\' operators, the value must be an integer');
      return (l) => l[key] !== undefined && /^-?\d+$/.test(l[key]) && (op === '<' ? Number(l[key]) < n : Number(l[key]) > n);
    }
    const value = checkValue(m[3]);
    if (op === '!=') return (l) => l[key] !== value;
    return (l) => l[key] === value;
  }
  m = /^(!?)\s*([^=!<>\s(),]+)$/.exec(text);
  if (m) {
    const key = checkKey(m[2]);
    return m[1] ? (l) => l[key] === undefined : (l) => l[key] !== undefined;
  }
  return (() => {
    throw fail(`found '${text}', expected: !, identifier, or 'end of string'`);
  })();
}

/** A predicate on an object's labels; throws 400 for an unparsable selector. */
export function parseLabelSelector(selector: string | undefined): Predicate {
  if (!selector || !selector.trim()) return always;
  const reqs = splitTopLevel(selector).map(requirement);
  return (obj) => {
    const labels = obj.metadata?.labels ?? {};
    return reqs.every((r) => r(labels));
  };
}

function unescapeField(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

/** A predicate on the field labels the resource supports; throws 400 for anything else. */
export function parseFieldSelector(selector: string | undefined, r: ResourceType): Predicate {
  if (!selector || !selector.trim()) return always;
  const reqs: Predicate[] = [];
  for (const term of selector.split(/(?<!\\),/)) {
    const m = /^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(term);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const [, field, op, raw] = m;
    const value = unescapeField(raw);
    let get: ((o: any) => string | undefined) | undefined;
    if (field === 'metadata.name') get = (o) => o.metadata?.name;
    else if (field === 'metadata.namespace' && r.namespaced) get = (o) => o.metadata?.namespace;
    else get = r.fields[field];
    if (!get) throw badRequest(`field label not supported: ${field}`);
    const g = get;
    reqs.push(op === '!=' ? (o) => (g(o) ?? '') !== value : (o) => (g(o) ?? '') === value);
  }
  return (obj) => reqs.every((p) => p(obj));
}

/** The object's name when the field selector pins exactly one (`metadata.name=x`), which lets a list skip the scan. */
export function pinnedName(selector: string | undefined): string | undefined {
  if (!selector) return undefined;
  const terms = selector.split(/(?<!\\),/);
  for (const t of terms) {
    const m = /^\s*metadata\.name\s*==?\s*(.*?)\s*$/.exec(t);
    if (m) return unescapeField(m[1]);
  }
  return undefined;
}
