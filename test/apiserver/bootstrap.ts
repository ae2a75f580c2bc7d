/**
 * What a new cluster holds before anyone writes to it: the system namespaces and
 * the bootstrap RBAC policy that non-resource requests rely on (discovery and
 * health for every user, self access reviews for every authenticated user) plus
 * cluster-admin for system:masters.
 */

const RBAC = 'rbac.authorization.k8s.io';

const clusterRole = (name: string, rules: object[]) => ({
  apiVersion: `${RBAC}/v1`,
  kind: 'ClusterRole',
  metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' }, annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } },
  rules,
});

const bindToGroups = (name: string, groups: string[]) => ({
  apiVersion: `${RBAC}/v1`,
  kind: 'ClusterRoleBinding',
  metadata: { name, labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' }, annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' } },
  roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name },
  subjects: groups.map((g) => ({ apiGroup: RBAC, kind: 'Group', name: g })),
});

/** The objects, in creation order. */
export const BOOTSTRAP_OBJECTS: readonly object[] = [
  ...['default', 'kube-system', 'kube-public', 'kube-node-lease'].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
  clusterRole('cluster-admin', [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }, { nonResourceURLs: ['*'], verbs: ['*'] }]),
  bindToGroups('cluster-admin', ['system:masters']),
  clusterRole('system:discovery', [{
    nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/'],
    verbs: ['get'],
  }]),
  bindToGroups('system:discovery', ['system:authenticated']),
  clusterRole('system:public-info-viewer', [{ nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'], verbs: ['get'] }]),
  bindToGroups('system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
  // Lets every user ask what it may do (kubectl auth can-i, a controller probing its permissions).
  clusterRole('system:basic-user', [{
    apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'], verbs: ['create'],
  }]),
  bindToGroups('system:basic-user', ['system:authenticated']),
];
