import { NODE_CLEANUP_LEASE, RbacFeatures } from './resolve-props';

/**
 * Least-privilege RBAC rules, derived from the features that are on. Each rule says
 * which part of the runtime needs it; a rule no enabled feature needs is not emitted.
 */

export interface PolicyRule {
  readonly apiGroups: string[];
  readonly resources: string[];
  readonly verbs: string[];
  readonly resourceNames?: string[];
}

export interface RoleRules {
  /** Cluster-scoped (ClusterRole) rules. */
  readonly cluster: PolicyRule[];
  /** Rules in the provisioner's namespace (Role); empty means no Role at all. */
  readonly namespaced: PolicyRule[];
}

/** Events, written by every component (core for `kubectl describe`, events.k8s.io for the new API). */
const EVENT_RULES: PolicyRule[] = [
  { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/** The node agents (directory and device dialects share one ServiceAccount). */
export function agentRules(f: RbacFeatures): RoleRules {
  const nodeVerbs = [
    // Its own Node: the node-UID provisioner name, the hostname label, node labels for PVs, ownerReferences.
    'get',
    // The device dialect follows its Node's spec annotation with a watch.
    ...(f.deviceDialect ? ['list', 'watch'] : []),
    // Removing the startup taint is an update of the Node.
    ...(f.removeNodeNotReadyTaint ? ['update', 'patch'] : []),
  ];
  return {
    cluster: [
      // Create and delete its PVs; watch them (own-node label); patch/update to label PVs it adopts.
      { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch', 'update'] },
      // reclaimPolicy and mountOptions of each class come from the StorageClass.
      { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['nodes'], verbs: nodeVerbs },
      ...EVENT_RULES,
    ],
    namespaced: [
      // Cleanup Jobs `cleanup-<pv>` live in the provisioner's namespace only.
      ...(f.jobCleaning ? [{ apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'get', 'list', 'watch', 'delete'] }] : []),
      // The device dialect's PV spec ConfigMaps, re-read when they change.
      ...(f.deviceDialect ? [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }] : []),
    ],
  };
}

/** The node-cleanup Deployment, which has a ServiceAccount of its own. */
export function nodeCleanupRules(): RoleRules {
  return {
    cluster: [
      // Which nodes are gone: by name and by hostname label.
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'delete'] },
      // Claims of opted-in classes bound to PVs of gone nodes; re-read for the UID check before deleting.
      { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'delete'] },
      ...EVENT_RULES,
    ],
    namespaced: [
      // Leader election: the Lease is created once, then read and renewed by name only.
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: [NODE_CLEANUP_LEASE] },
    ],
  };
}
