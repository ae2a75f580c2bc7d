/**
 * RBAC authorization as the real authorizer evaluates it: ClusterRoleBindings
 * grant their ClusterRole everywhere, RoleBindings grant a Role or ClusterRole in
 * their namespace; rules match verbs, API groups, resources (with
 * `resource/subresource`), resourceNames and nonResourceURLs, with `*`
 * wildcards. Discovery and health URLs are open through the bootstrap policy
 * (bootstrap.ts); members of system:masters pass without rules, as the real
 * server's privileged-group authorizer lets them.
 */
import { UserInfo } from './auth';
import { findResource } from './resources';
import { Store } from './store';

export interface RequestAttributes {
  readonly verb: string;
  readonly apiGroup?: string;
  readonly resource?: string;
  readonly subresource?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Set for non-resource requests (discovery, health). */
  readonly path?: string;
}

export interface Denial extends RequestAttributes {
  readonly user: string;
}

const ROLES = findResource('rbac.authorization.k8s.io/v1', 'roles')!;
const ROLE_BINDINGS = findResource('rbac.authorization.k8s.io/v1', 'rolebindings')!;
const CLUSTER_ROLES = findResource('rbac.authorization.k8s.io/v1', 'clusterroles')!;
const CLUSTER_ROLE_BINDINGS = findResource('rbac.authorization.k8s.io/v1', 'clusterrolebindings')!;

const has = (list: string[] | undefined, v: string) => !!list && (list.includes('*') || list.includes(v));

function subjectMatches(s: any, user: UserInfo, bindingNamespace?: string): boolean {
  switch (s?.kind) {
    case 'User': return s.name === user.username;
    case 'Group': return user.groups.includes(s.name);
    case 'ServiceAccount': return user.username === `system:serviceaccount:${s.namespace ?? bindingNamespace}:${s.name}`;
    default: return false;
  }
}

function ruleAllows(rule: any, a: RequestAttributes): boolean {
  if (!has(rule.verbs, a.verb)) return false;
  if (a.path !== undefined) {
    return (rule.nonResourceURLs ?? []).some((u: string) => u === '*' || u === a.path || (u.endsWith('*') && a.path!.startsWith(u.slice(0, -1))));
  }
  if (!has(rule.apiGroups, a.apiGroup ?? '')) return false;
  const full = a.subresource ? `${a.resource}/${a.subresource}` : a.resource!;
  const resources: string[] = rule.resources ?? [];
  const resourceOk = resources.includes('*') || resources.includes(full)
    || (a.subresource !== undefined && resources.includes(`*/${a.subresource}`));
  if (!resourceOk) return false;
  const names: string[] = rule.resourceNames ?? [];
  return names.length === 0 || (a.name !== undefined && names.includes(a.name));
}

export class RbacAuthorizer {
  /** Every request that was denied, in order. */
  readonly denials: Denial[] = [];

  constructor(private readonly store: Store) {}

  private rulesOf(roleRef: any, namespace?: string): any[] {
    if (roleRef?.kind === 'ClusterRole') return this.store.get(CLUSTER_ROLES, undefined, roleRef.name)?.obj.rules ?? [];
    if (roleRef?.kind === 'Role' && namespace) return this.store.get(ROLES, namespace, roleRef.name)?.obj.rules ?? [];
    return [];
  }

  allows(user: UserInfo, a: RequestAttributes): boolean {
    if (user.groups.includes('system:masters')) return true;
    const grants = (binding: any, namespace?: string) =>
      (binding.subjects ?? []).some((s: any) => subjectMatches(s, user, namespace))
      && this.rulesOf(binding.roleRef, namespace).some((r) => ruleAllows(r, a));
    for (const b of this.store.all(CLUSTER_ROLE_BINDINGS)) if (grants(b.obj)) return true;
    if (a.namespace && a.path === undefined) {
      for (const b of this.store.list(ROLE_BINDINGS, a.namespace)) if (grants(b.obj, a.namespace)) return true;
    }
    return false;
  }

  /** Records and words a denial as the real server does. */
  deny(user: UserInfo, a: RequestAttributes): string {
    const { verb, apiGroup, resource, subresource, namespace, name, path } = a;
    const record = { user: user.username, verb, apiGroup, resource, subresource, namespace, name, path };
    this.denials.push(Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as unknown as Denial);
    if (a.path !== undefined) return `User "${user.username}" cannot ${a.verb} path "${a.path}"`;
    const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
    return `User "${user.username}" cannot ${a.verb} resource "${res}" in API group "${a.apiGroup ?? ''}" ${scope}`;
  }
}
