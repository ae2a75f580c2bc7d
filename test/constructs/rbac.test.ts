import { DEFAULTS, DEVICES, JOB_CLEANING } from './stacks';
import { all, Manifest, one, synth } from './support';

/** `group/resource: verbs` lines of a role's rules, for readable expectations. */
function rules(role: Manifest): string[] {
  return role.rules.map((r: Manifest) =>
    `${r.apiGroups.join(',') || 'core'}/${r.resources.join(',')}${r.resourceNames ? `[${r.resourceNames.join(',')}]` : ''}: ${r.verbs.join(',')}`);
}
const AGENT = 'local-volume-provisioner';

describe('the agent ClusterRole', () => {
  const GUARD = 'admissionregistration.k8s.io/validatingadmissionpolicies,validatingadmissionpolicybindings[local-volume-provisioner-claim-guard]: get';

  test('with the directory dialect: PVs, StorageClasses read and watched, its Node read and watched, the claim guard read, and core Events', () => {
    expect(rules(one(synth(DEFAULTS), 'ClusterRole', AGENT))).toEqual([
      'core/persistentvolumes: get,list,watch,create,delete,patch',
      'storage.k8s.io/storageclasses: get,list,watch',
      'core/nodes: get,watch',
      GUARD,
      'core/events: create,patch',
    ]);
  });

  test('with the device dialect alone: no StorageClasses, its Node read and watched (its spec annotation)', () => {
    expect(rules(one(synth(DEVICES), 'ClusterRole', AGENT))).toEqual([
      'core/persistentvolumes: get,list,watch,create,delete,patch',
      'core/nodes: get,watch',
      GUARD,
      'core/events: create,patch',
    ]);
  });

  test('reads no claim guard when there is none (claimGuard: false)', () => {
    expect(rules(one(synth({ ...DEFAULTS, claimGuard: false }), 'ClusterRole', AGENT))).not.toContain(GUARD);
  });

  test('updates Nodes only when it removes the startup taint', () => {
    expect(rules(one(synth({ ...DEFAULTS, removeNodeNotReadyTaint: true }), 'ClusterRole', AGENT))).toContain('core/nodes: get,watch,update');
  });

  test('never updates Nodes for the taint when only the device dialect runs, which does not remove it', () => {
    expect(rules(one(synth({ ...DEVICES, removeNodeNotReadyTaint: true }), 'ClusterRole', AGENT))).toContain('core/nodes: get,watch');
  });

  test('is bound to the agent ServiceAccount', () => {
    const binding = one(synth(DEFAULTS), 'ClusterRoleBinding', AGENT);
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: AGENT });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: AGENT, namespace: AGENT }]);
  });
});

describe('the agent Role in its namespace', () => {
  test('does not exist when no feature needs namespaced access', () => {
    const manifests = synth(DEFAULTS);
    expect(all(manifests, 'Role')).toEqual([]);
    expect(all(manifests, 'RoleBinding')).toEqual([]);
  });

  test('manages cleanup Jobs, and lists their pods (a failed cleaner\'s last words), only with Job cleaning', () => {
    expect(rules(one(synth(JOB_CLEANING), 'Role', AGENT))).toEqual(['batch/jobs: create,get,delete', 'core/pods: list']);
  });

  test('lists and watches ConfigMaps only with the device dialect', () => {
    expect(rules(one(synth(DEVICES), 'Role', AGENT))).toEqual(['core/configmaps: list,watch']);
  });

  test('is bound in the provisioner namespace', () => {
    const binding = one(synth(JOB_CLEANING), 'RoleBinding', AGENT);
    expect(binding.metadata.namespace).toBe(AGENT);
    expect(binding.roleRef.kind).toBe('Role');
  });
});

describe('node-cleanup RBAC', () => {
  const manifests = synth({ ...DEFAULTS, nodeCleanup: {} });
  const name = 'local-volume-provisioner-node-cleanup';

  test('lists Nodes and PVs, deletes PVs (and lets go their agent\'s cleanup finalizer) and claims it has read, and says so in Events, cluster-wide', () => {
    expect(rules(one(manifests, 'ClusterRole', name))).toEqual([
      'core/nodes: list',
      'core/persistentvolumes: get,list,delete,patch',
      'core/persistentvolumeclaims: get,delete',
      'core/events: create',
    ]);
  });

  test('elects its leader on its own Lease only', () => {
    expect(rules(one(manifests, 'Role', name))).toEqual([
      'coordination.k8s.io/leases: create',
      'coordination.k8s.io/leases[local-volume-provisioner-node-cleanup]: get,update',
    ]);
  });

  test('has a ServiceAccount of its own, so the agents never get claim deletion', () => {
    expect(one(manifests, 'ClusterRoleBinding', name).subjects[0].name).toBe(name);
    expect(rules(one(manifests, 'ClusterRole', AGENT)).join('\n')).not.toMatch(/persistentvolumeclaims|leases/);
  });
});

describe('opting out (Helm rbac.create and serviceAccount.create)', () => {
  test('createRbac: false emits no role or binding', () => {
    const kinds = synth({ ...DEVICES, nodeCleanup: {}, createRbac: false }).map((m) => m.kind);
    expect(kinds.filter((k) => /Role/.test(k))).toEqual([]);
  });

  test('createServiceAccount: false uses the named ServiceAccount without creating it', () => {
    const manifests = synth({ ...DEFAULTS, createServiceAccount: false, serviceAccountName: 'existing' });
    expect(all(manifests, 'ServiceAccount')).toEqual([]);
    expect(one(manifests, 'DaemonSet').spec.template.spec.serviceAccountName).toBe('existing');
    expect(one(manifests, 'ClusterRoleBinding').subjects[0].name).toBe('existing');
  });
});
