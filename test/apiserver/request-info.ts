/**
 * Request info as the real server's resolver derives it: from `/api/v1/...` and
 * `/apis/<group>/<version>/...` the verb, resource, subresource, namespace and name.
 */
import { RequestAttributes } from './rbac';
import { ResourceType, findResource } from './resources';

export interface ResourceRequest extends RequestAttributes {
  readonly type: ResourceType;
  readonly resource: string;
  readonly collection: boolean;
}

const SUBRESOURCES = new Set(['status', 'finalize']);

/** Resolves `/api/v1/...` and `/apis/<g>/<v>/...` into request attributes; undefined for other paths. */
export function resolve(method: string, parts: string[], query: URLSearchParams): ResourceRequest | 'unknown' | undefined {
  let gv: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    gv = parts[1];
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    gv = `${parts[1]}/${parts[2]}`;
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && !(rest.length === 3 && SUBRESOURCES.has(rest[2]))) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource, ...extra] = rest;
  const type = findResource(gv, resource);
  if (!type || extra.length || (subresource && !SUBRESOURCES.has(subresource))) return 'unknown';
  if (subresource === 'status' && !type.hasStatus) return 'unknown';
  if (subresource === 'finalize' && type.kind !== 'Namespace') return 'unknown';
  if (!type.namespaced && namespace !== undefined) return 'unknown';
  const collection = name === undefined;
  const watch = query.get('watch') === 'true' || query.get('watch') === '1';
  // Namespaced resources are served across namespaces only for list and watch.
  if (type.namespaced && namespace === undefined && !(collection && method === 'GET')) return 'unknown';
  const verb = {
    GET: collection ? (watch ? 'watch' : 'list') : 'get',
    POST: 'create',
    PUT: 'update',
    PATCH: 'patch',
    DELETE: collection ? 'deletecollection' : 'delete',
  }[method];
  if (!verb) return 'unknown';
  return { type, verb, apiGroup: type.group, resource, subresource, namespace: type.namespaced ? namespace : undefined, name, collection };
}
