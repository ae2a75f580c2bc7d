import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { admissionPolicyObjects } from './admission-policy';
import { POOL_CLAIM_LONG_NODE, POOL_CLAIM_NODE_LABEL } from '../config';
import { ResolvedClaimRouting } from './resolve';

/**
 * The claim routing: a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1,
 * Kubernetes 1.36 or later) with which the API server labels every claim of a pool class
 * with the node the scheduler put it on (its `volume.kubernetes.io/selected-node`
 * annotation), on every create and update: relabelled when the annotation changes,
 * unlabelled when it goes, a label written by anyone else put right. Each node's agent
 * then lists and watches only the claims labelled with its node, so a claim written
 * anywhere in the cluster costs the other nodes nothing, however many they are.
 *
 * failurePolicy Fail: a policy that cannot be evaluated refuses the claim's write (said to
 * whoever wrote it) rather than leave it unlabelled, which would leave it unprovisioned
 * without a word. Only claims of the construct's pool classes are matched.
 *
 * Written as plain ApiObjects: cdk8s-plus-28 knows nothing of this API.
 */

const celString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const celList = (items: readonly string[]) => `[${items.map(celString).join(', ')}]`;

/** The policy's spec: which claims it labels, and how. */
export function claimRoutingPolicySpec(routing: ResolvedClaimRouting): Record<string, unknown> {
  const label = celString(POOL_CLAIM_NODE_LABEL);
  const path = `'/metadata/labels/' + jsonpatch.escapeKey(${label})`;
  return {
    failurePolicy: 'Fail',
    // The label depends only on the annotation: once set, another policy's change cannot need it set again, but it costs nothing to ask.
    reinvocationPolicy: 'IfNeeded',
    matchConstraints: {
      // Scope written out: a rule the server defaults makes every kubectl apply patch it again.
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['persistentvolumeclaims'], scope: 'Namespaced' }],
    },
    matchConditions: [
      { name: 'a-claim-of-a-pool-class', expression: `object.spec.?storageClassName.orValue('') in ${celList(routing.poolClasses)}` },
    ],
    variables: [
      { name: 'node', expression: 'object.metadata.?annotations[?\'volume.kubernetes.io/selected-node\'].orValue(\'\')' },
      // As poolClaimNodeLabelValue (src/config/shared-names.ts): a node name longer than a label value gives a shared value.
      { name: 'wanted', expression: `variables.node == '' ? '' : size(variables.node) <= 63 ? variables.node : ${celString(POOL_CLAIM_LONG_NODE)}` },
      { name: 'labelled', expression: `object.metadata.?labels[?${label}].orValue('')` },
    ],
    mutations: [{
      // JSONPatch, not ApplyConfiguration: only a patch can take a label off.
      patchType: 'JSONPatch',
      jsonPatch: {
        expression: [
          'variables.wanted == variables.labelled ? [] :',
          `variables.wanted == '' ? [JSONPatch{op: 'remove', path: ${path}}] :`,
          `!has(object.metadata.labels) ? [JSONPatch{op: 'add', path: '/metadata/labels', value: {${label}: variables.wanted}}] :`,
          `[JSONPatch{op: 'add', path: ${path}, value: variables.wanted}]`,
        ].join(' '),
      },
    }],
  };
}

/** The policy and its binding, both named `routing.name`; cluster-scoped. */
export function claimRoutingObjects(scope: Construct, routing: ResolvedClaimRouting, labels: Record<string, string>): ApiObject[] {
  return admissionPolicyObjects(scope, { id: 'ClaimRouting', kind: 'MutatingAdmissionPolicy', name: routing.name, labels, spec: claimRoutingPolicySpec(routing) });
}
