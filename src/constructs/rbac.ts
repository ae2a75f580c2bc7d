import { RbacFeatures } from './resolve';
import { CLAIM_ROUTING_LEASE, NODE_CLEANUP_LEASE } from '../config';

/**
 * Least-privilege RBAC rules, derived from the features that are on: exactly the
 * API calls the runtime makes (src/runtime/kube/api-client.ts and the reflectors'
 * watches), each rule naming the part of the runtime that needs it. A rule no
 * enabled feature uses is not emitted; test/constructs/rbac-enforced.test.ts
 * proves every emitted verb is needed.
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

/** The node agents (directory and device dialects share one ServiceAccount). */
export function agentRules(f: RbacFeatures): RoleRules {
  const nodeVerbs = [
    // Its own Node, read by name: the node-UID provisioner name, the hostname label, node labels
    // for PVs, ownerReferences, and the device dialect's spec annotation on every pass.
    'get',
    // Both dialects watch their one Node (a metadata.name field selector): the device dialect so a spec
    // annotation applies at once, the directory dialect so label changes reach new PVs without re-reading it.
    'watch',
    // The directory dialect removes the startup taint with a full update of its Node.
    ...(f.directoryDialect && f.removeNodeNotReadyTaint ? ['update'] : []),
  ];
  return {
    cluster: [
      // Its PVs: created, re-read before a cleanup, deleted; listed and watched by its node label
      // (the node PV cache); patched to label (adopt) the PVs of older provisioners.
      { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'create', 'delete', 'patch'] },
      // The directory dialect lists and watches the StorageClasses (reclaimPolicy, mountOptions; a cluster has
      // few), so a pass reads them with no request; it reads a class by name where list/watch is not granted.
      ...(f.directoryDialect ? [{ apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] }] : []),
      { apiGroups: [''], resources: ['nodes'], verbs: nodeVerbs },
      // The claim guard, read by name: each agent checks it is in force and says so when it is not.
      ...(f.claimGuard ? [{
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
        verbs: ['get'],
        resourceNames: [f.claimGuard],
      }] : []),
      // The claim routing, read by name: each agent checks it is in force, and watches every claim where it is not.
      ...(f.claimRouting ? [{
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'],
        verbs: ['get'],
        resourceNames: [f.claimRouting],
      }] : []),
      // core/v1 Events (what `kubectl describe` shows), created and then counted up by patch.
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      // Pool classes: the claims put on its node are listed and watched (every claim, where the claim routing is not
      // in force: the scheduler may put one of any namespace on this node); the claim a volume was made for is read by
      // name before a volume with no PV is taken for a stray; a claim that no longer fits is given back to the
      // scheduler by patching off its selected-node annotation, and one made before the claim routing is labelled.
      ...(f.pools ? [
        { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'patch'] },
        // A resized pool volume: the claim's status says its new capacity, as a resizer writes it.
        { apiGroups: [''], resources: ['persistentvolumeclaims/status'], verbs: ['patch'] },
      ] : []),
      // Snapshots, where pool volumes are CSI volumes: each agent lists and watches its node's VolumeSnapshotContents (by
      // the snapshot controller's managed-by label), writes their status as the CSI snapshotter sidecar does and removes
      // their finalizer once their snapshot is deleted, reads one by name (a restore's source, a snapshot whose content may
      // be gone); a restore reads its VolumeSnapshot by name.
      ...(f.snapshots ? [
        { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotcontents'], verbs: ['get', 'list', 'watch', 'patch'] },
        { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshotcontents/status'], verbs: ['patch'] },
        { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ['get'] },
      ] : []),
    ],
    namespaced: [
      // The claim routing: one agent at a time labels the claims made before it was installed (leader election:
      // the Lease is created once, then read and renewed by name only).
      ...(f.claimRouting ? [
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: [CLAIM_ROUTING_LEASE] },
      ] : []),
      // Pool classes: each node's CSIStorageCapacity objects, read by name, made, updated as the pool fills and
      // empties, and deleted with a pool class; listed (by the node's label) once at start, for those a run left.
      ...(f.pools ? [{ apiGroups: ['storage.k8s.io'], resources: ['csistoragecapacities'], verbs: ['get', 'list', 'create', 'update', 'delete'] }] : []),
      // Cleanup Jobs `cleanup-<pv>` live in the provisioner's namespace only; read by name while they run.
      ...(f.jobCleaning ? [
        { apiGroups: ['batch'], resources: ['jobs'], verbs: ['create', 'get', 'delete'] },
        // A failed Job's pod, for its cleaner's last words (the Event's message).
        { apiGroups: [''], resources: ['pods'], verbs: ['list'] },
      ] : []),
      // The device dialect's PV spec ConfigMaps, listed and watched so an edit applies at once.
      ...(f.deviceDialect ? [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] }] : []),
    ],
  };
}

/** The node-cleanup Deployment, which has a ServiceAccount of its own. */
export function nodeCleanupRules(): RoleRules {
  return {
    cluster: [
      // Which nodes are gone: every pass lists them (by name and hostname label).
      { apiGroups: [''], resources: ['nodes'], verbs: ['list'] },
      // Every pass lists the PVs; a PV is re-read before its claim is deleted; PVs of gone nodes are deleted,
      // and the agent's cleanup finalizer removed from them (patch): the node's volume record guards the volume.
      { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'delete', 'patch'] },
      // The claim a PV of a gone node names is read, then deleted with a UID precondition.
      { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'delete'] },
      // StaleVolumeDeleted on a PV, StaleClaimDeleted on a claim, each written once (upstream's RBAC: create only).
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
    ],
    namespaced: [
      // Leader election: the Lease is created once, then read and renewed by name only.
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'], resourceNames: [NODE_CLEANUP_LEASE] },
    ],
  };
}
