import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

/** What an admission policy and its binding are made of: both named `name`, cluster-scoped. */
export interface AdmissionPolicyParts {
  /** The construct ids' prefix: `<id>Policy`, `<id>Binding`. */
  readonly id: string;
  /** `ValidatingAdmissionPolicy` or `MutatingAdmissionPolicy`; the binding's kind is this plus `Binding`. */
  readonly kind: string;
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly spec: object;
  /** The binding's spec besides its policyName. */
  readonly binding?: object;
}

/** An admission policy (admissionregistration.k8s.io/v1) and its binding. */
export function admissionPolicyObjects(scope: Construct, parts: AdmissionPolicyParts): ApiObject[] {
  const metadata = { name: parts.name, labels: parts.labels };
  const policy = new ApiObject(scope, `${parts.id}Policy`, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: parts.kind,
    metadata,
    spec: parts.spec,
  });
  const binding = new ApiObject(scope, `${parts.id}Binding`, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: `${parts.kind}Binding`,
    metadata,
    spec: { policyName: parts.name, ...parts.binding },
  });
  return [policy, binding];
}
