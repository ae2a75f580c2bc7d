/**
 * Discovery documents as the real server serves them: `/api`, `/apis`,
 * `/api/v1`, `/apis/<group>/<version>` and `/version`. Only the legacy
 * (unaggregated) form: kubectl falls back to it when the response is plain JSON.
 */
import { RESOURCES, groupVersion, groupVersions } from './resources';


export function apiVersions(serverAddress: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

export function apiGroupList(): object {
  const groups = new Map<string, string[]>();
  for (const gv of groupVersions()) {
    if (!gv.group) continue;
    groups.set(gv.group, [...(groups.get(gv.group) ?? []), gv.version]);
  }
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups].map(([name, versions]) => ({
      name,
      versions: versions.map((version) => ({ groupVersion: `${name}/${version}`, version })),
      preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
    })),
  };
}

export function apiGroup(group: string): object | undefined {
  const versions = groupVersions().filter((gv) => gv.group === group && group);
  if (!versions.length) return undefined;
  const v = versions.map((x) => ({ groupVersion: `${group}/${x.version}`, version: x.version }));
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions: v, preferredVersion: v[0] };
}

/** The APIResourceList of one group version, or undefined when it is not served. */
export function apiResourceList(gv: string): object | undefined {
  const served = RESOURCES.filter((r) => groupVersion(r) === gv);
  if (!served.length) return undefined;
  const resources: object[] = [];
  for (const r of served) {
    resources.push({
      name: r.resource,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: r.verbs,
      ...(r.shortNames.length ? { shortNames: r.shortNames } : {}),
      ...(r.categories.length ? { categories: r.categories } : {}),
    });
    if (r.hasStatus) {
      resources.push({ name: `${r.resource}/status`, singularName: '', namespaced: r.namespaced, kind: r.kind, verbs: ['get', 'patch', 'update'] });
    }
    if (r.kind === 'Namespace') {
      resources.push({ name: 'namespaces/finalize', singularName: '', namespaced: false, kind: 'Namespace', verbs: ['update'] });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv, resources };
}

export function versionInfo(): object {
  return {
    major: '1',
    minor: '33',
    gitVersion: 'v1.33.0',
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '2025-04-23T00:00:00Z',
    goVersion: 'go1.24.2',
    compiler: 'gc',
    platform: 'linux/amd64',
  };
}
