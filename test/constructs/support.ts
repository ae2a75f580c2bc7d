import { PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Chart, Testing } from 'cdk8s';
import { ValidatingAdmissionPolicy } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy';
import { ValidatingAdmissionPolicyBinding } from 'kubernetes-models/admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Role } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { CSIDriver } from 'kubernetes-models/storage.k8s.io/v1/CSIDriver';
import { StorageClass } from 'kubernetes-models/storage.k8s.io/v1/StorageClass';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { LocalVolumeProvisioner, LocalVolumeProvisionerProps } from '../../src/constructs';

/** A synthesized Kubernetes object, loosely typed for assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Manifest = Record<string, any>;

/**
 * Synthesizes one provisioner in a fresh chart. The default image's warning (the subject
 * of image-warning.test.ts) is kept out of the test output; any other warning shows.
 */
export function synth(props: LocalVolumeProvisionerProps = {}, chartNamespace?: string): Manifest[] {
  const warn = console.warn;
  const spy = jest.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
    if (!String(args[0]).includes(': image: not given')) warn(...args);
  });
  try {
    return Testing.synth(chartWith(props, chartNamespace));
  } finally {
    spy.mockRestore();
  }
}

export function chartWith(props: LocalVolumeProvisionerProps, chartNamespace?: string): Chart {
  const chart = new Chart(Testing.app(), 'test', { namespace: chartNamespace });
  new LocalVolumeProvisioner(chart, 'lvp', props);
  return chart;
}

/** The one object of a kind (and name, when given); fails when there is not exactly one. */
export function one(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (found.length !== 1) {
    throw new Error(`expected one ${kind}${name ? ` named ${name}` : ''}, found ${found.length}: ${found.map((m) => m.metadata.name).join(', ')}`);
  }
  return found[0];
}

export function all(manifests: Manifest[], kind: string): Manifest[] {
  return manifests.filter((m) => m.kind === kind);
}

/** The smallest useful props: one directory class. */
export const ONE_CLASS: LocalVolumeProvisionerProps = {
  storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }],
};

/** Schema models for every kind the construct emits (Kubernetes and prometheus-operator). */
const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ServiceAccount': ServiceAccount,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'apps/v1/DaemonSet': DaemonSet,
  'apps/v1/Deployment': Deployment,
  'rbac.authorization.k8s.io/v1/ClusterRole': ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': ClusterRoleBinding,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
  'storage.k8s.io/v1/StorageClass': StorageClass,
  'storage.k8s.io/v1/CSIDriver': CSIDriver,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': ValidatingAdmissionPolicy,
  'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': ValidatingAdmissionPolicyBinding,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
};

/** Kinds newer than kubernetes-models knows (Kubernetes 1.36): the real kube-apiserver validates them (apiserver-accepts.test.ts). */
const VALIDATED_BY_THE_APISERVER_ONLY = new Set([
  'admissionregistration.k8s.io/v1/MutatingAdmissionPolicy',
  'admissionregistration.k8s.io/v1/MutatingAdmissionPolicyBinding',
]);

/**
 * Validates each object against its schema; returns one line per invalid object
 * (empty when all are valid), so a failure names the object and the field.
 */
export function schemaErrors(manifests: Manifest[]): string[] {
  const errors: string[] = [];
  for (const m of manifests) {
    const key = `${m.apiVersion}/${m.kind}`;
    const Model = MODELS[key];
    if (VALIDATED_BY_THE_APISERVER_ONLY.has(key)) continue;
    if (!Model) {
      errors.push(`${key} ${m.metadata?.name}: no schema model known for this kind`);
      continue;
    }
    try {
      new Model(m as never).validate();
    } catch (e) {
      errors.push(`${key} ${m.metadata?.name}: ${(e as Error).message}`);
    }
  }
  return errors;
}
