import { Testing } from 'cdk8s';
import { DEFAULTS, DEVICES, POOLS } from './stacks';
import { all, chartWith, one, synth } from './support';

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

  const condition = (name: string): string => policy.spec.matchConditions.find((c: { name: string }) => c.name === name).expression;
  /** The two branches of a-volume-of-ours: what is ours on CREATE, and on UPDATE. */
  const [oursOnCreate, oursOnUpdate] = (() => {
    const m = /^request\.operation == 'CREATE' \? \((.*)\) : \((.*)\)$/.exec(condition('a-volume-of-ours'));
    return [m![1], m![2]];
  })();
  const DIRECTORIES = "['/dev/disk/by-path/', '/mnt/fast-disks/', '/mnt/pool/', '/var/lib/disks/']";
  /** The path test, as written for `pv` (object on CREATE, oldObject on UPDATE). */
  const pathOf = (pv: string) => `[${pv}.spec.?local.?path.orValue(${pv}.spec.?hostPath.?path.orValue(''))].exists(p, p != '' && (p.split('/').exists(c, c == '..') `
    + `|| ['/' + p.split('/').filter(c, c != '' && c != '.').map(c, c + '/').join('')].exists(r, ${DIRECTORIES}.exists(d, r.startsWith(d) || d.startsWith(r)))))`;

  test('looks at creates and updates of PVs only, failing closed', () => {
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['persistentvolumes'], scope: 'Cluster' },
    ]);
    expect(policy.spec.matchConditions.map((c: { name: string }) => c.name)).toEqual([
      'a-volume-of-ours', 'update-of-a-pv-bound-to-a-claim', 'update-not-by-the-pv-controller', 'create-not-by-an-agent',
    ]);
  });

  test('on update, knows the PVs of every class of the instance (directory, pool and device dialect) by their path, labels, finalizer and classes', () => {
    // By the directory of its volume, which no update can change: whatever marks are taken off a PV first, it stays ours.
    expect(oursOnUpdate).toBe([
      pathOf('oldObject'),
      "oldObject.spec.?csi.?driver.orValue('') == 'pool.local-volume-provisioner.io'",
      "'local.storage.k8s.io/node' in oldObject.metadata.?labels.orValue({})",
      "'local.storage.k8s.io/cleanup' in oldObject.metadata.?finalizers.orValue([])",
      "oldObject.spec.?storageClassName.orValue('') in ['fast-disks', 'local-nvme', 'local-pool', 'local-sas']",
    ].join(' || '));
  });

  test('on create, knows a PV of ours by the volume it names (local or hostPath, however the path is written; a CSI PV of the agents\' driver) or by its class, not by marks any instance writes', () => {
    expect(oursOnCreate).toBe(`${pathOf('object')} || object.spec.?csi.?driver.orValue('') == 'pool.local-volume-provisioner.io' `
      + "|| object.spec.?storageClassName.orValue('') in ['fast-disks', 'local-nvme', 'local-pool', 'local-sas']");
    // Every instance's agents (and the Go provisioner) write the same label, finalizer and provisioned-by: another instance's PVs carry them.
    expect(oursOnCreate).not.toContain('local.storage.k8s.io/node');
    expect(oursOnCreate).not.toContain('finalizers');
    expect(oursOnCreate).not.toContain('provisioned-by');
    // No oldObject on a create: the update branch is evaluated on updates only.
    expect(oursOnCreate).not.toContain('oldObject');
  });

  test('reads every field optionally: no PV, however written, makes an expression fail (which, failing closed, would refuse it)', () => {
    const expressions: string[] = [
      ...policy.spec.matchConditions.map((c: { expression: string }) => c.expression),
      ...policy.spec.validations.flatMap((v: { expression: string; messageExpression: string }) => [v.expression, v.messageExpression]),
    ];
    for (const e of expressions) {
      // Each field under spec and metadata is reached by ?. (a name the server always has, oldObject.metadata.name, aside).
      expect(e.replace(/oldObject\.metadata\.name/g, '')).not.toMatch(/(object|oldObject)\.(spec|metadata)\.[a-zA-Z]/);
    }
  });

  test('on update, lets the PV controller through, which clears a claimRef only for a claim bound to another volume, and no one else', () => {
    expect(condition('update-of-a-pv-bound-to-a-claim')).toBe("request.operation != 'UPDATE' || oldObject.spec.?claimRef.?uid.orValue('') != ''");
    expect(condition('update-not-by-the-pv-controller'))
      .toBe("request.operation != 'UPDATE' || !(request.userInfo.username in ['system:serviceaccount:kube-system:persistent-volume-binder', 'system:kube-controller-manager'])");
    expect(policy.spec.validations[0]).toMatchObject({ expression: expect.stringMatching(/^request\.operation != 'UPDATE' \|\| \(object\.spec\.\?claimRef\.\?uid/), reason: 'Forbidden' });
  });

  test('on create, lets through the agents\' ServiceAccount (both dialects run as it), and no one else: not the PV controller, not node cleanup', () => {
    expect(condition('create-not-by-an-agent'))
      .toBe("request.operation != 'CREATE' || !(request.userInfo.username in ['system:serviceaccount:local-volume-provisioner:local-volume-provisioner'])");
    const accounts = all(manifests, 'DaemonSet').map((ds) => ds.spec.template.spec.serviceAccountName);
    expect(accounts).toEqual(['local-volume-provisioner', 'local-volume-provisioner']);
    expect(policy.spec.validations[1]).toMatchObject({ expression: "request.operation != 'CREATE'", reason: 'Forbidden' });
  });

  test('the agents\' user follows the ServiceAccount and namespace props, the chart\'s default ServiceAccount included', () => {
    const created = (props: object): string => one(synth({ ...DEFAULTS, ...props }), 'ValidatingAdmissionPolicy')
      .spec.matchConditions.find((c: { name: string }) => c.name === 'create-not-by-an-agent').expression;
    expect(created({ name: 'lvp', namespace: 'storage', serviceAccountName: 'agents' })).toContain("['system:serviceaccount:storage:agents']");
    expect(created({ namespace: 'storage', createServiceAccount: false })).toContain("['system:serviceaccount:storage:default']");
  });

  test('node cleanup, with a ServiceAccount of its own, may not create PVs at all', () => {
    const withCleanup = synth({ ...DEFAULTS, nodeCleanup: { storageClassNames: ['fast-disks'] } });
    const role = one(withCleanup, 'ClusterRole', 'local-volume-provisioner-node-cleanup');
    expect(role.rules.filter((r: { resources: string[]; verbs: string[] }) => r.resources.includes('persistentvolumes') && r.verbs.includes('create'))).toEqual([]);
  });

  test('a refused create names the PV, its path and class, who may create it, and what the administrator does instead', () => {
    const message: string = policy.spec.validations[1].messageExpression;
    expect(message).toMatch(/^'PersistentVolume ' \+ object\.metadata\.\?name\.orValue\(''\) \+ ' \(path ' \+ object\.spec\.\?local\.\?path/);
    expect(message).toContain('only its agents (system:serviceaccount:local-volume-provisioner:local-volume-provisioner) may create such a PV');
    expect(message).toContain('local-volume-provisioner volumes accept \' + object.spec.?local.?path.orValue(object.spec.?hostPath.?path.orValue(\'\')) + \' --for NAMESPACE/CLAIM');
    expect(message).toContain('Bring a retained volume back');
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

  test('an agent that authenticates with a kubeconfig is warned of at synth: the guard would refuse its creates', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    const warningsOf = (props: object): string[] => {
      warn.mockClear();
      Testing.synth(chartWith({ ...DEFAULTS, image: 'registry.example.com/lvp:1', ...props }));
      return warn.mock.calls.map((c) => String(c[0]));
    };
    try {
      expect(warningsOf({ kubeConfigEnv: '/etc/kubeconfig/config' })).toEqual([expect.stringContaining(
        'kubeConfigEnv: the agents then authenticate as the kubeconfig\'s user, but the claim guard (local-volume-provisioner-claim-guard) lets only '
        + 'system:serviceaccount:local-volume-provisioner:local-volume-provisioner create PVs',
      )]);
      expect(warningsOf({ kubeConfigEnv: '/etc/kubeconfig/config', claimGuard: false })).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  test('claimGuard: false leaves it out, and the agents are told of none', () => {
    const off = synth({ ...DEFAULTS, claimGuard: false });
    expect(off.map((m) => m.kind)).not.toContain('ValidatingAdmissionPolicy');
    expect(off.map((m) => m.kind)).not.toContain('ValidatingAdmissionPolicyBinding');
    expect(one(off, 'DaemonSet').spec.template.spec.containers[0].args.filter((a: string) => a.startsWith('--claim-guard'))).toEqual([]);
  });
});
