/** Kubernetes object names (PVs among them) are DNS-1123 subdomains. */

export const DNS_SUBDOMAIN_MAX_LENGTH = 253;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** True when the API server accepts `name` as a PV name. */
export function isDnsSubdomain(name: string): boolean {
  return name.length <= DNS_SUBDOMAIN_MAX_LENGTH && DNS_SUBDOMAIN.test(name);
}
