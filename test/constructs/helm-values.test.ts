import { k8s } from 'cdk8s-plus-28';
import { DEFAULTS } from './stacks';
import { all, Manifest, one, synth } from './support';
import { parseProvisionerConfig } from '../../src/config';
import { VolumeMode } from '../../src/constructs';

/**
 * Helm chart values of the Go provisioner (chart v2.9.0) and what the chart renders for
 * them, as ../shared/reference/upstream-deployments.md (section 1) records it: the same
 * value given as a prop renders the same.
 */

const AGENT = 'local-volume-provisioner';
const container = (manifests: Manifest[]) => one(manifests, 'DaemonSet', AGENT).spec.template.spec.containers[0];

describe('rbac.extraRules -> extraRbacRules', () => {
  const extra = [
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list'] },
    { nonResourceUrLs: ['/metrics'], verbs: ['get'] },
  ];

  test('are appended to the agent ClusterRole as given', () => {
    const rules = one(synth({ ...DEFAULTS, extraRbacRules: extra }), 'ClusterRole', AGENT).rules;
    expect(rules.slice(-2)).toEqual([
      { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list'] },
      { nonResourceURLs: ['/metrics'], verbs: ['get'] },
    ]);
    expect(rules.slice(0, -2)).toEqual(one(synth(DEFAULTS), 'ClusterRole', AGENT).rules);
  });

  test('are not given to node cleanup', () => {
    const rules = one(synth({ ...DEFAULTS, nodeCleanup: {}, extraRbacRules: extra }), 'ClusterRole', `${AGENT}-node-cleanup`).rules;
    expect(JSON.stringify(rules)).not.toContain('/metrics');
  });
});

describe('securityContext', () => {
  test('is written as given, with privileged added when it sets none', () => {
    const sc: k8s.SecurityContext = { runAsUser: 1000, capabilities: { add: ['SYS_ADMIN'] } };
    expect(container(synth({ ...DEFAULTS, securityContext: sc })).securityContext)
      .toEqual({ runAsUser: 1000, capabilities: { add: ['SYS_ADMIN'] }, privileged: true });
  });

  test('keeps the privileged it sets', () => {
    expect(container(synth({ ...DEFAULTS, securityContext: { privileged: false } })).securityContext).toEqual({ privileged: false });
  });

  test('takes privileged from the privileged prop when it sets none', () => {
    expect(container(synth({ ...DEFAULTS, privileged: false, securityContext: { runAsUser: 0 } })).securityContext)
      .toEqual({ runAsUser: 0, privileged: false });
  });

  test('an empty one is no securityContext, as in the chart: the construct default applies', () => {
    expect(container(synth({ ...DEFAULTS, securityContext: {} })).securityContext)
      .toEqual(container(synth(DEFAULTS)).securityContext);
  });

  test('applies to the device agent as well', () => {
    const manifests = synth({
      devices: { specs: [{ name: 'nvme', storageClassName: 'local-nvme', volumeMode: VolumeMode.BLOCK, deviceDir: '/dev/disk/by-path', deviceNameFilter: '-nvme-' }] },
      securityContext: { runAsUser: 0 },
    });
    expect(one(manifests, 'DaemonSet', `${AGENT}-devices`).spec.template.spec.containers[0].securityContext).toEqual({ runAsUser: 0, privileged: true });
  });
});

describe('kubeConfigEnv and env', () => {
  test('kubeConfigEnv sets KUBECONFIG after the chart\'s own variables', () => {
    const env = container(synth({ ...DEFAULTS, kubeConfigEnv: '/etc/kubeconfig/config' })).env.map((e: Manifest) => e.name);
    expect(env).toEqual(['MY_NODE_NAME', 'MY_NAMESPACE', 'JOB_CONTAINER_IMAGE', 'KUBECONFIG']);
    expect(container(synth({ ...DEFAULTS, kubeConfigEnv: '/etc/kubeconfig/config' })).env[3]).toEqual({ name: 'KUBECONFIG', value: '/etc/kubeconfig/config' });
  });

  test('env adds variables after those', () => {
    const env = container(synth({ ...DEFAULTS, kubeConfigEnv: '/k', env: [{ name: 'TZ', value: 'UTC' }] })).env;
    expect(env.slice(-2)).toEqual([{ name: 'KUBECONFIG', value: '/k' }, { name: 'TZ', value: 'UTC' }]);
  });

  test('no KUBECONFIG without kubeConfigEnv (the in-cluster ServiceAccount)', () => {
    expect(container(synth(DEFAULTS)).env.map((e: Manifest) => e.name)).not.toContain('KUBECONFIG');
  });
});

describe('serviceAccount.create: false without serviceAccount.name', () => {
  const manifests = synth({ ...DEFAULTS, createServiceAccount: false });

  test('runs the agent as the namespace\'s default ServiceAccount, as the chart does', () => {
    expect(all(manifests, 'ServiceAccount')).toEqual([]);
    expect(one(manifests, 'DaemonSet').spec.template.spec.serviceAccountName).toBe('default');
  });

  test('binds the agent ClusterRole to that ServiceAccount', () => {
    expect(one(manifests, 'ClusterRoleBinding').subjects).toEqual([{ kind: 'ServiceAccount', name: 'default', namespace: AGENT }]);
  });
});

describe('serviceMonitor defaults', () => {
  const monitor = one(synth({ ...DEFAULTS, serviceMonitor: {} }), 'ServiceMonitor');

  test('jobLabel is app.kubernetes.io/name, as the chart writes it', () => {
    expect(monitor.spec.jobLabel).toBe('app.kubernetes.io/name');
  });

  test('the scrape interval is 10s, the chart\'s default', () => {
    expect(monitor.spec.endpoints[0].interval).toBe('10s');
  });

  test('jobLabel \'\' leaves the job label to prometheus-operator', () => {
    expect(one(synth({ ...DEFAULTS, serviceMonitor: { jobLabel: '' } }), 'ServiceMonitor').spec.jobLabel).toBeUndefined();
  });
});

describe('tolerations are copied to jobTolerations, as the chart does', () => {
  const block = { name: 'block-disks', hostDir: '/mnt/block-disks', volumeMode: VolumeMode.BLOCK };
  const jobTolerations = (manifests: Manifest[]) => {
    const parsed = parseProvisionerConfig(one(manifests, 'ConfigMap', `${AGENT}-config`).data);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    return parsed.config.jobTolerations;
  };

  test('the agent tolerations, so a cleanup Job schedules on the tainted node the agent runs on', () => {
    const tolerations = [{ key: 'storage', operator: 'Exists', effect: 'NoSchedule' }];
    expect(jobTolerations(synth({ storageClasses: [block], useJobForCleaning: true, tolerations }))).toEqual(tolerations);
  });

  test('without the startup-taint toleration the agent adds for removeNodeNotReadyTaint', () => {
    const tolerations = [{ key: 'storage', operator: 'Exists' }];
    const manifests = synth({ storageClasses: [block], useJobForCleaning: true, removeNodeNotReadyTaint: true, tolerations });
    expect(one(manifests, 'DaemonSet').spec.template.spec.tolerations).toHaveLength(2);
    expect(jobTolerations(manifests)).toEqual(tolerations);
  });

  test('the default, tolerate every taint, as well', () => {
    expect(jobTolerations(synth({ storageClasses: [block], useJobForCleaning: true }))).toEqual([{ operator: 'Exists' }]);
  });

  test('jobTolerations given win', () => {
    const manifests = synth({ storageClasses: [block], useJobForCleaning: true, tolerations: [{ operator: 'Exists' }], jobTolerations: [{ key: 'jobs', operator: 'Exists' }] });
    expect(jobTolerations(manifests)).toEqual([{ key: 'jobs', operator: 'Exists' }]);
  });

  test('nothing is copied when cleanup Jobs are off', () => {
    expect(jobTolerations(synth({ storageClasses: [block], tolerations: [{ operator: 'Exists' }] }))).toEqual([]);
  });
});
