import { Duration } from 'cdk8s';
import { DEFAULTS, DEVICES } from './stacks';
import { synth } from './support';
import { DeviceFsType, LocalVolumeProvisionerProps, RelabelAction, VolumeMode } from '../../src/constructs';

/** Bad props fail at synth time, each error naming the prop and what is wrong. */
function errorOf(props: LocalVolumeProvisionerProps): string {
  try {
    synth(props);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('synth succeeded');
}

const spec = DEVICES.devices!.specs[0];

test.each<[string, LocalVolumeProvisionerProps, RegExp]>([
  ['a duplicate class name',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a' }, { name: 'a', hostDir: '/mnt/b' }] },
    /storageClasses\[1\]\.name: "a" is also the name of storageClasses\[0\]/],
  ['a relative hostDir',
    { storageClasses: [{ name: 'a', hostDir: 'mnt/a' }] },
    /storageClasses\[0\]\.hostDir: "mnt\/a" is not an absolute path/],
  ['a relative mountDir',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a', mountDir: 'a' }] },
    /storageClasses\[0\]\.mountDir: "a" is not an absolute path/],
  ['a relative stateDirectory',
    { ...DEFAULTS, stateDirectory: 'var/lib/lvp' },
    /stateDirectory: "var\/lib\/lvp" is not an absolute path/],
  ['a stateDirectory that is also a class\'s mountDir',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a', mountDir: '/var/lib/lvp' }], stateDirectory: '/var/lib/lvp' },
    /storageClasses\[0\]\.mountDir: "\/var\/lib\/lvp" is also the mountPath of stateDirectory/],
  ['a path that is not normalised',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/../a/' }] },
    /storageClasses\[0\]\.hostDir: "\/mnt\/..\/a\/" is not a normalised path/],
  ['two classes on one directory',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a' }, { name: 'b', hostDir: '/mnt/a' }] },
    /storageClasses\[1\]\.mountDir: "\/mnt\/a" overlaps the mountDir "\/mnt\/a" of storageClasses\[0\]/],
  ['a class directory inside another',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a' }, { name: 'b', hostDir: '/mnt/a/ssd' }] },
    /storageClasses\[1\]\.mountDir: "\/mnt\/a\/ssd" overlaps the mountDir "\/mnt\/a"/],
  ['two host directories that clash behind different mountDirs',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a' }, { name: 'b', hostDir: '/mnt/a', mountDir: '/b' }] },
    /storageClasses\[1\]\.hostDir: "\/mnt\/a" overlaps the hostDir "\/mnt\/a" of storageClasses\[0\]/],
  ['a mountDir over the config directory',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a', mountDir: '/etc/provisioner' }] },
    /storageClasses\[0\]\.mountDir: "\/etc\/provisioner" overlaps \/etc\/provisioner\/config/],
  ['an invalid glob',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a', namePattern: 'ssd[' }] },
    /storageClasses\[0\]\.namePattern: glob "ssd\[" is malformed/],
  ['fsType with Block',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a', volumeMode: VolumeMode.BLOCK, fsType: 'ext4' }] },
    /storageClasses\[0\]\.fsType: "ext4" is not allowed with volumeMode Block/],
  ['a class name that is not a Kubernetes name',
    { storageClasses: [{ name: 'Fast_Disks', hostDir: '/mnt/a' }] },
    /storageClasses\[0\]\.name: "Fast_Disks" is not a valid StorageClass name/],
  ['an empty cleaner command',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a', blockCleanerCommand: [] }] },
    /storageClasses\[0\]\.blockCleanerCommand: must not be empty/],
  ['an invalid device name filter',
    { devices: { specs: [{ ...spec, deviceNameFilter: '(' }] } },
    /devices\.specs\[0\]\.deviceNameFilter: "\(" is not a valid regular expression/],
  ['fsType with Block in a device spec',
    { devices: { specs: [{ ...spec, fsType: DeviceFsType.EXT4 }] } },
    /devices\.specs\[0\]\.fsType: "ext4" is not allowed with volumeMode Block/],
  ['a relative deviceDir',
    { devices: { specs: [{ ...spec, deviceDir: 'dev/disk' }] } },
    /devices\.specs\[0\]\.deviceDir: "dev\/disk" is not an absolute path/],
  ['a wipe that is not one of the two (a JavaScript or jsii caller)',
    { devices: { specs: [{ ...spec, wipe: 'partial' as never }] } },
    /devices\.specs\[0\]\.wipe: "partial" is not one of full, upstream-ranges/],
  ['a spec ConfigMap name that is not a Kubernetes name',
    { devices: { specs: [{ ...spec, name: 'NVMe' }] } },
    /devices\.specs\[0\]\.name: must be a DNS subdomain/],
  ['a default spec that does not exist',
    { devices: { specs: [spec], defaultSpec: 'nvme' } },
    /devices\.defaultSpec: "nvme" is not the name of any of devices\.specs/],
  ['a device class that clashes with a directory class',
    { ...DEFAULTS, devices: { specs: [{ ...spec, storageClassName: 'fast-disks' }] } },
    /devices\.specs\[0\]\.storageClassName: "fast-disks" is also the name of storageClasses\[0\]; a StorageClass serves one dialect/],
  ['two default StorageClasses',
    { storageClasses: [{ name: 'a', hostDir: '/mnt/a', storageClass: { isDefaultClass: true } }, { name: 'b', hostDir: '/mnt/b', storageClass: { isDefaultClass: true } }] },
    /more than one StorageClass has isDefaultClass: a, b/],
  ['a name that is not a Service name',
    { ...DEFAULTS, name: 'LVP' },
    /name: "LVP" is not a valid Service name/],
  ['an invalid namespace',
    { ...DEFAULTS, namespace: 'storage.system' },
    /namespace: "storage.system" is not a valid namespace name/],
  ['a sub-millisecond duration',
    { ...DEFAULTS, discoveryPeriod: Duration.millis(0.5) },
    /discoveryPeriod: is not a whole number of milliseconds/],
  ['a zero discovery period',
    { ...DEFAULTS, discoveryPeriod: Duration.seconds(0) },
    /discoveryPeriod: must be at least 1 ms, got 0 ms/],
  ['a scrape timeout longer than the interval',
    { ...DEFAULTS, serviceMonitor: { interval: Duration.seconds(10), scrapeTimeout: Duration.seconds(30) } },
    /serviceMonitor\.scrapeTimeout: must not be longer than serviceMonitor\.interval/],
  ['a sub-second scrape interval',
    { ...DEFAULTS, serviceMonitor: { interval: Duration.millis(500) } },
    /serviceMonitor\.interval: must be at least 1000 ms/],
  ['an invalid relabeling regex',
    { ...DEFAULTS, serviceMonitor: { relabelings: [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], regex: '(', action: RelabelAction.KEEP }] } },
    /serviceMonitor\.relabelings\[0\]\.regex: "\(" is not a valid regular expression/],
  ['a relabeling regex Prometheus (RE2) rejects though JavaScript takes it',
    { ...DEFAULTS, serviceMonitor: { relabelings: [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], regex: '(a)\\1', action: RelabelAction.KEEP }] } },
    /serviceMonitor\.relabelings\[0\]\.regex: "\(a\)\\1" is not a valid regular expression \(error parsing regexp: invalid escape sequence/],
  ['a ServiceMonitor without the metrics Service',
    { ...DEFAULTS, metricsService: false, serviceMonitor: {} },
    /serviceMonitor: needs the metrics Service/],
  ['a node-cleanup class that is not configured',
    { ...DEFAULTS, nodeCleanup: { storageClassNames: ['fast-disk'] } },
    /nodeCleanup\.storageClassNames\[0\]: "fast-disk" is not a class of this provisioner \(fast-disks\)/],
  ['an invalid pod label',
    { ...DEFAULTS, podLabels: { 'team name': 'storage' } },
    /podLabels: label key "team name"/],
  ['a port out of range',
    { ...DEFAULTS, metricsPort: 70000 },
    /metricsPort: 70000 is not a whole number from 1 to 65535/],
  ['no class at all',
    {},
    /storageClasses: no class configured/],
  ['an extra RBAC rule without verbs',
    { ...DEFAULTS, extraRbacRules: [{ apiGroups: [''], resources: ['pods'], verbs: [] }] },
    /extraRbacRules\[0\]\.verbs: must name at least one verb/],
  ['an extra RBAC rule without an API group',
    { ...DEFAULTS, extraRbacRules: [{ resources: ['pods'], verbs: ['get'] }] },
    /extraRbacRules\[0\]\.apiGroups: must name at least one API group/],
  ['an extra RBAC rule on both resources and non-resource URLs',
    { ...DEFAULTS, extraRbacRules: [{ apiGroups: [''], resources: ['pods'], nonResourceUrLs: ['/metrics'], verbs: ['get'] }] },
    /extraRbacRules\[0\]\.nonResourceUrLs: a rule applies to non-resource URLs or to resources, not both/],
  ['a toleration of every key with operator Equal',
    { ...DEFAULTS, tolerations: [{ operator: 'Equal', value: 'x' }] },
    /tolerations\[0\]\.operator: must be Exists when key is empty/],
  ['a node-cleanup toleration with an unknown effect',
    { ...DEFAULTS, nodeCleanup: { tolerations: [{ key: 'a', operator: 'Exists', effect: 'NoRun' }] } },
    /nodeCleanup\.tolerations\[0\]\.effect: "NoRun" is not one of NoSchedule, PreferNoSchedule, NoExecute/],
  ['a securityContext.privileged that contradicts privileged',
    { ...DEFAULTS, privileged: true, securityContext: { privileged: false } },
    /securityContext\.privileged: false contradicts privileged: true/],
  ['a privileged container that may not escalate privileges',
    { ...DEFAULTS, securityContext: { allowPrivilegeEscalation: false } },
    /securityContext\.allowPrivilegeEscalation: cannot be false in a privileged container/],
  ['an env variable the construct sets',
    { ...DEFAULTS, env: [{ name: 'MY_NODE_NAME', value: 'x' }] },
    /env\[0\]\.name: "MY_NODE_NAME" is already set by the construct/],
  ['KUBECONFIG in env as well as kubeConfigEnv',
    { ...DEFAULTS, kubeConfigEnv: '/k', env: [{ name: 'KUBECONFIG', value: '/j' }] },
    /env\[0\]\.name: "KUBECONFIG" is already set by kubeConfigEnv/],
  ['an env variable given twice',
    { ...DEFAULTS, env: [{ name: 'TZ', value: 'UTC' }, { name: 'TZ', value: 'CET' }] },
    /env\[1\]\.name: "TZ" is already set by env\[0\]/],
  ['an empty kubeConfigEnv',
    { ...DEFAULTS, kubeConfigEnv: '' },
    /kubeConfigEnv: must not be empty/],
  ['node cleanup without a ServiceAccount name it could use',
    { ...DEFAULTS, createServiceAccount: false, nodeCleanup: {} },
    /serviceAccountName: is needed with nodeCleanup and createServiceAccount: false/],
])('%s fails at synth, naming the prop', (_case, props, expected) => {
  expect(errorOf(props)).toMatch(expected);
});

/** The problem lines of a failed synth, without the heading. */
function problemsOf(props: LocalVolumeProvisionerProps): string[] {
  return errorOf(props).split('\n').slice(1).map((l) => l.trim());
}

describe('each mistake is reported once, against the prop that holds it', () => {
  test('a relative hostDir (whose mountDir defaults to it)', () => {
    expect(problemsOf({ storageClasses: [{ name: 'a', hostDir: 'mnt/a' }] }))
      .toEqual(['storageClasses[0].hostDir: "mnt/a" is not an absolute path']);
  });

  test('a relative mountDir', () => {
    expect(problemsOf({ storageClasses: [{ name: 'a', hostDir: '/mnt/a', mountDir: 'a' }] }))
      .toEqual(['storageClasses[0].mountDir: "a" is not an absolute path']);
  });

  test('fsType with volumeMode Block', () => {
    expect(problemsOf({ storageClasses: [{ name: 'a', hostDir: '/mnt/a', volumeMode: VolumeMode.BLOCK, fsType: 'ext4' }] }))
      .toEqual(['storageClasses[0].fsType: "ext4" is not allowed with volumeMode Block (a raw block volume has no filesystem)']);
  });

  test('a relative deviceDir', () => {
    expect(problemsOf({ devices: { specs: [{ ...spec, deviceDir: 'dev/disk' }] } }))
      .toEqual(['devices.specs[0].deviceDir: "dev/disk" is not an absolute path']);
  });

  test('two directory classes of one name, with no device dialect to blame', () => {
    expect(problemsOf({ storageClasses: [{ name: 'a', hostDir: '/mnt/a' }, { name: 'a', hostDir: '/mnt/b' }] }))
      .toEqual(['storageClasses[1].name: "a" is also the name of storageClasses[0]']);
  });

  test('a negative count, without an upper bound nobody set', () => {
    expect(problemsOf({ storageClasses: [{ name: 'a', hostDir: '/mnt/a', expectedVolumesPerNode: -1 }] }))
      .toEqual(['storageClasses[0].expectedVolumesPerNode: -1 is not a whole number of at least 0']);
  });
});

test('a class that fails to resolve is not also reported as missing', () => {
  expect(errorOf({ storageClasses: [{ name: 'a', hostDir: '/mnt/a', namePattern: '[' }] })).not.toMatch(/no class configured/);
});

test('every bad prop is reported at once', () => {
  const message = errorOf({ storageClasses: [{ name: 'a', hostDir: 'a' }], metricsPort: 0, namespace: 'X' });
  expect(message).toMatch(/^LocalVolumeProvisioner: invalid props:/);
  expect(message).toContain('storageClasses[0].hostDir');
  expect(message).toContain('metricsPort');
  expect(message).toContain('namespace');
});
