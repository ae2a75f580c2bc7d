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

/** IsDNS1123Label: container, volume and port-less names, namespaces. */
export function dnsLabelProblems(field: string, value: string): StatusCause[] {
  const out: StatusCause[] = [];
  if (value.length > 63) out.push(invalidValue(field, value, 'must be no more than 63 characters'));
  if (!LABEL.test(value)) out.push(invalidValue(field, value, LABEL_MSG));
  return out;
}

/** IsDNS1123Subdomain: most object names, and the names objects refer to each other by. */
export function subdomainProblems(field: string, value: string): StatusCause[] {
  const out: StatusCause[] = [];
  if (value.length > 253) out.push(invalidValue(field, value, 'must be no more than 253 characters'));
  if (!SUBDOMAIN.test(value)) out.push(invalidValue(field, value, SUBDOMAIN_MSG));
  return out;
}

/** Name syntax as the kind's registry checks it. */
export function nameProblems(r: ResourceType, name: string, field = 'metadata.name'): StatusCause[] {
  if (PATH_SEGMENT_NAMED.has(r.resource)) {
    if (name === '.' || name === '..') return [invalidValue(field, name, `may not be '${name}'`)];
    for (const bad of ['/', '%']) if (name.includes(bad)) return [invalidValue(field, name, `may not contain '${bad}'`)];
    return [];
  }
  return DNS_LABEL_NAMED.has(r.resource) ? dnsLabelProblems(field, name) : subdomainProblems(field, name);
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

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;
const CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
  + "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/** IsConfigMapKey's messages: ConfigMap and Secret keys, and the keys env vars take from them. */
export function configKeyMessages(key: string): string[] {
  const out: string[] = [];
  if (key.length > 253) out.push('must be no more than 253 characters');
  if (!CONFIG_KEY.test(key)) out.push(CONFIG_KEY_MSG);
  if (key === '.') out.push("must not be '.'");
  else if (key === '..') out.push("must not be '..'");
  else if (key.startsWith('..')) out.push("must not start with '..'");
  return out;
}

/** IsValidLabelValue's messages: label values, toleration values, node selector requirement values. */
export function labelValueMessages(value: string): string[] {
  const out: string[] = [];
  if (value.length > 63) out.push('must be no more than 63 characters');
  if (!LABEL_VALUE.test(value)) out.push(LABEL_VALUE_MSG);
  return out;
}

export function labelValueProblems(field: string, value: string): StatusCause[] {
  return labelValueMessages(value).map((msg) => invalidValue(field, value, msg));
}

/** ValidateLabels: every key a qualified name, every value a label value, all reported at `field`. */
export function labelsProblems(field: string, labels: Record<string, unknown> | undefined): StatusCause[] {
  return Object.entries(labels ?? {}).flatMap(([k, v]) => [...qualifiedNameProblems(field, k), ...labelValueProblems(field, String(v))]);
}

/** ValidateAnnotations: qualified-name keys (compared in lower case), at most 256 KiB in all. */
export function annotationsProblems(field: string, annotations: Record<string, unknown> | undefined): StatusCause[] {
  const out: StatusCause[] = [];
  let bytes = 0;
  for (const [k, v] of Object.entries(annotations ?? {})) {
    out.push(...qualifiedNameProblems(field, k.toLowerCase()));
    bytes += k.length + String(v).length;
  }
  if (bytes > 256 * 1024) out.push({ reason: 'FieldValueTooLong', field, message: 'Too long: must have at most 262144 bytes' });
  return out;
}

export function metadataProblems(r: ResourceType, meta: any): StatusCause[] {
  const out: StatusCause[] = [];
  if (!meta.name) out.push(required('metadata.name', 'name or generateName is required'));
  else out.push(...nameProblems(r, meta.name));
  out.push(...labelsProblems('metadata.labels', meta.labels), ...annotationsProblems('metadata.annotations', meta.annotations));
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
