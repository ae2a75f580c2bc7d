/** The Kubernetes API verb of a request, as RBAC and audit logs name it. */
export type ApiVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const HTTP_METHOD: Readonly<Record<ApiVerb, HttpMethod>> = {
  get: 'GET',
  list: 'GET',
  watch: 'GET',
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
};

/** What a request does to which object; used for rate-limit metrics and in error messages. */
export interface RequestTarget {
  readonly verb: ApiVerb;
  /** Plural resource name as in the URL, e.g. `persistentvolumes`. */
  readonly resource: string;
  readonly name?: string;
  readonly namespace?: string;
}

/** `create persistentvolumes "local-pv-1a2b"`, `get jobs "default/cleanup-x"`, `list persistentvolumes`. */
export function describeTarget(target: RequestTarget): string {
  if (!target.name) return `${target.verb} ${target.resource}`;
  const object = target.namespace ? `${target.namespace}/${target.name}` : target.name;
  return `${target.verb} ${target.resource} "${object}"`;
}
