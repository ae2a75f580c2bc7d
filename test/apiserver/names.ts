/**
 * Object-meta syntax: names (DNS subdomain, DNS label or path segment, by kind),
 * qualified names (label and annotation keys), label values, owner references.
 */
import { invalidValue, required } from './causes';
import { ResourceType } from './resources';
import { StatusCause } from './status';

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

export function qualifiedNameProblems(field: string, key: string): StatusCause[] {
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

export function metadataProblems(r: ResourceType, meta: any): StatusCause[] {
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
  const controllers = (meta.ownerReferences ?? []).filter((o: any) => o?.controller === true);
  if (controllers.length > 1) {
    out.push(invalidValue('metadata.ownerReferences', meta.ownerReferences, 'Only one reference can have Controller set to true. '
      + `Found "true" in references for ${controllers.map((o: any) => `${o.kind}/${o.name}`).join(' and ')}`));
  }
  (meta.ownerReferences ?? []).forEach((o: any, i: number) => {
    for (const f of ['apiVersion', 'kind', 'name', 'uid']) {
      if (!o?.[f]) out.push(required(`metadata.ownerReferences[${i}].${f}`));
    }
  });
  return out;
}
