import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { CLEANUP_FINALIZER, NODE_LABEL } from '../config';
import { ResolvedClaimGuard } from './resolve';

/**
 * The claim guard: a ValidatingAdmissionPolicy, enforced by the API server itself,
 * so it holds while no agent runs. Once a PV of ours has been bound to a claim (its
 * claimRef carries that claim's UID), nobody may clear or change that claimRef: the
 * PV binder would otherwise offer the PV, with the last tenant's data on its volume, to
 * the next claim. The way to offer such a volume again is to delete its PV, which the
 * agent cleans (or holds) before it makes a new one.
 *
 * Exempt: the PV controller, which clears a claimRef only for a claim that is bound to
 * another volume (it never used this one). The agents are not exempt: they never change
 * a claimRef.
 *
 * Written as plain ApiObjects: cdk8s-plus-28 knows only the v1beta1 API of Kubernetes
 * 1.28, and the policy is GA as admissionregistration.k8s.io/v1 since Kubernetes 1.30.
 */

/** Who clears a claimRef of a claim bound elsewhere: the PV controller, with or without its own ServiceAccount. */
const PV_CONTROLLER_USERS = ['system:serviceaccount:kube-system:persistent-volume-binder', 'system:kube-controller-manager'];

const celString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const celList = (items: readonly string[]) => `[${items.map(celString).join(', ')}]`;
/** A CEL string expression: text as written (adjacent pieces as one literal), `{ cel }` parts evaluated. */
function concat(parts: ReadonlyArray<string | { readonly cel: string }>): string {
  const merged: Array<string | { readonly cel: string }> = [];
  for (const p of parts) {
    const last = merged[merged.length - 1];
    if (typeof p === 'string' && typeof last === 'string') merged[merged.length - 1] = last + p;
    else merged.push(p);
  }
  return merged.map((p) => (typeof p === 'string' ? celString(p) : p.cel)).join(' + ');
}

/** The policy's spec: which updates it looks at, and what it refuses, with what message. */
export function claimGuardPolicySpec(guard: ResolvedClaimGuard): Record<string, unknown> {
  const ours = [
    // A PV's volume source is immutable: one in a directory of ours is ours, whatever its labels, finalizers and class say now.
    ...(guard.volumeDirectories.length > 0 ? [`${celList(guard.volumeDirectories)}.exists(d, oldObject.spec.?local.?path.orValue('').startsWith(d + '/'))`] : []),
    // Every PV an agent makes or adopts carries the node label; a PV it holds, the finalizer.
    `${celString(NODE_LABEL)} in oldObject.metadata.?labels.orValue({})`,
    `${celString(CLEANUP_FINALIZER)} in oldObject.metadata.?finalizers.orValue([])`,
    // A replaced provisioner's PV before the agent adopts it has only its class.
    ...(guard.storageClassNames.length > 0 ? [`oldObject.spec.?storageClassName.orValue('') in ${celList(guard.storageClassNames)}`] : []),
  ];
  // Every field read optionally: a claimRef written by hand may lack any of them, and an error would refuse every update (failurePolicy Fail).
  const was = (field: string) => ({ cel: `oldObject.spec.?claimRef.?${field}.orValue('')` });
  const same = (field: string) => `object.spec.?claimRef.?${field}.orValue('') == ${was(field).cel}`;
  const pv = { cel: 'oldObject.metadata.name' };
  const message = concat([
    'PersistentVolume ', pv, ' was bound to claim ', was('namespace'), '/', was('name'),
    ' (uid ', was('uid'), ') and its volume holds that tenant\'s data until the provisioner cleans it: ',
    'its claimRef may not be cleared or changed, or the next claim would be bound to that data. ',
    'To offer the volume again, delete the PV (kubectl delete pv ', pv, '): the provisioner cleans the volume (reclaim policy Delete) ',
    'or keeps its data (Retain) before it is offered again. See "A PV is stuck Released" in the provisioner\'s docs/operations.md.',
  ]);
  return {
    failurePolicy: 'Fail',
    matchConstraints: {
      // Scope written out: a rule the server defaults (scope '*') makes every kubectl apply patch it again.
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['persistentvolumes'], scope: 'Cluster' }],
    },
    matchConditions: [
      { name: 'a-volume-of-ours', expression: ours.join(' || ') },
      { name: 'bound-to-a-claim', expression: `${was('uid').cel} != ''` },
      { name: 'not-the-pv-controller', expression: `!(request.userInfo.username in ${celList(PV_CONTROLLER_USERS)})` },
    ],
    validations: [{
      expression: ['uid', 'namespace', 'name'].map(same).join(' && '),
      reason: 'Forbidden',
      messageExpression: message,
    }],
  };
}

/** The policy and its binding (Deny: a refused update fails), both named `guard.name`; cluster-scoped. */
export function claimGuardObjects(scope: Construct, guard: ResolvedClaimGuard, labels: Record<string, string>): ApiObject[] {
  const metadata = { name: guard.name, labels };
  const policy = new ApiObject(scope, 'ClaimGuardPolicy', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata,
    spec: claimGuardPolicySpec(guard),
  });
  const binding = new ApiObject(scope, 'ClaimGuardBinding', {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata,
    spec: { policyName: guard.name, validationActions: ['Deny'] },
  });
  return [policy, binding];
}
