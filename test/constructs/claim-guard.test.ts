import { DEFAULTS, DEVICES, POOLS } from './stacks';
import { all, one, synth } from './support';

/**
 * The claim guard as synthesized: what it is named, what it looks at, and what it is
 * off without. What it refuses, and what it lets through, is played against a real
 * apiserver in test/e2e/claim-guard.test.ts.
 */
describe('the claim guard', () => {
  const manifests = synth({ ...POOLS, devices: DEVICES.devices });
  const policy = one(manifests, 'ValidatingAdmissionPolicy');
  const binding = one(manifests, 'ValidatingAdmissionPolicyBinding');

  test('is a cluster-scoped policy and its Deny binding, both named after the instance', () => {
    expect(policy.metadata).toMatchObject({ name: 'local-volume-provisioner-claim-guard' });
    expect(policy.metadata.namespace).toBeUndefined();
    expect(binding).toMatchObject({
      apiVersion: 'admissionregistration.k8s.io/v1',
      metadata: { name: 'local-volume-provisioner-claim-guard' },
      spec: { policyName: 'local-volume-provisioner-claim-guard', validationActions: ['Deny'] },
    });
    expect(binding.metadata.namespace).toBeUndefined();
  });

  test('looks only at updates of PVs, failing closed', () => {
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['persistentvolumes'], scope: 'Cluster' },
    ]);
  });

  test('knows the PVs of every class of the instance (directory, pool and device dialect) by their directories, labels, finalizer and classes', () => {
    const ours = policy.spec.matchConditions.find((c: { name: string }) => c.name === 'a-volume-of-ours').expression;
    expect(ours).toContain("in ['fast-disks', 'local-nvme', 'local-pool', 'local-sas']");
    // By the directory of its volume, which no update can change: whatever marks are taken off a PV first, it stays ours.
    expect(ours).toContain("['/dev/disk/by-path', '/mnt/fast-disks', '/mnt/pool', '/var/lib/disks'].exists(d, oldObject.spec.?local.?path.orValue('').startsWith(d + '/'))");
    expect(ours).toContain("'local.storage.k8s.io/node' in oldObject.metadata.?labels.orValue({})");
    expect(ours).toContain("'local.storage.k8s.io/cleanup' in oldObject.metadata.?finalizers.orValue([])");
  });

  test('lets the PV controller through, which clears a claimRef only for a claim bound to another volume, and no one else', () => {
    const exempt = policy.spec.matchConditions.find((c: { name: string }) => c.name === 'not-the-pv-controller').expression;
    expect(exempt).toBe("!(request.userInfo.username in ['system:serviceaccount:kube-system:persistent-volume-binder', 'system:kube-controller-manager'])");
  });

  test('is named to the agents, which may read it and nothing else of its kind', () => {
    for (const ds of all(manifests, 'DaemonSet')) expect(ds.spec.template.spec.containers[0].args).toContain('--claim-guard=local-volume-provisioner-claim-guard');
    expect(one(manifests, 'ClusterRole', 'local-volume-provisioner').rules).toContainEqual({
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingadmissionpolicies', 'validatingadmissionpolicybindings'],
      verbs: ['get'],
      resourceNames: ['local-volume-provisioner-claim-guard'],
    });
  });

  test('claimGuard: false leaves it out, and the agents are told of none', () => {
    const off = synth({ ...DEFAULTS, claimGuard: false });
    expect(off.map((m) => m.kind)).not.toContain('ValidatingAdmissionPolicy');
    expect(off.map((m) => m.kind)).not.toContain('ValidatingAdmissionPolicyBinding');
    expect(one(off, 'DaemonSet').spec.template.spec.containers[0].args.filter((a: string) => a.startsWith('--claim-guard'))).toEqual([]);
  });
});
