/** An ownerReference to the Node, so the garbage collector removes a node's PVs with it. */
import type { V1OwnerReference } from '@kubernetes/client-node';
import type { NodeInfo } from './node-info';

/**
 * `controller: true` for the device dialect, as upstream's SetControllerReference
 * writes it. We leave out blockOwnerDeletion: it would need update rights on
 * nodes/finalizers where OwnerReferencesPermissionEnforcement is on, and only
 * affects foreground deletion of the Node.
 */
export function nodeOwnerReference(node: NodeInfo, options: { controller?: boolean } = {}): V1OwnerReference {
  if (node.uid === '') {
    throw new Error(`node "${node.name}" has no UID; an ownerReference needs it`);
  }
  return { apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid, ...(options.controller ? { controller: true } : {}) };
}
