/**
 * A PV bound in advance to one claim, by namespace and name: the PV binder binds it to that
 * claim and to no other (an administrator giving a volume's data to that claim only).
 */
import type { V1ObjectReference } from '@kubernetes/client-node';

export function preBoundClaimRef(claim: string): V1ObjectReference {
  const [namespace, name] = claim.split('/');
  return { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace, name };
}
