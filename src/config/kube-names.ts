/**
 * The Kubernetes name rules the API server would enforce on the objects we build
 * from the config (StorageClass names, label keys and values). Checking them here
 * turns a PV create failing on every pass into one clear config error.
 * Each returns the reason a value is invalid, or undefined.
 */

const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** The longest name of most Kubernetes objects (PVs, StorageClasses). */
export const DNS_SUBDOMAIN_MAX_LENGTH = 253;

/** RFC 1123 subdomain (object names such as PVs and StorageClasses, label key prefixes). */
export function dnsSubdomainProblem(value: string): string | undefined {
  if (value.length > DNS_SUBDOMAIN_MAX_LENGTH) return `must be at most ${DNS_SUBDOMAIN_MAX_LENGTH} characters`;
  if (!DNS_SUBDOMAIN.test(value)) {
    return "must be a DNS subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit";
  }
  return undefined;
}

/** Label keys and node selector keys: `[prefix/]name`. */
export function qualifiedNameProblem(value: string): string | undefined {
  const slash = value.lastIndexOf('/');
  const [prefix, name] = slash === -1 ? [undefined, value] : [value.slice(0, slash), value.slice(slash + 1)];
  if (prefix !== undefined) {
    if (prefix === '') return 'has an empty prefix before "/"';
    const p = dnsSubdomainProblem(prefix);
    if (p) return `has an invalid prefix: ${p}`;
  }
  if (name === '') return 'must have a name';
  if (name.length > 63) return 'must have a name of at most 63 characters';
  if (!QUALIFIED_NAME_PART.test(name)) {
    return "must be a qualified name: letters, digits, '-', '_' and '.', starting and ending with a letter or digit, optionally after a DNS subdomain prefix and '/'";
  }
  return undefined;
}

/** Label values: empty, or up to 63 characters of the qualified-name alphabet. */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63) return 'must be at most 63 characters';
  if (!QUALIFIED_NAME_PART.test(value)) {
    return "must be a label value: empty, or letters, digits, '-', '_' and '.', starting and ending with a letter or digit";
  }
  return undefined;
}
