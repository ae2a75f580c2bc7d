import { k8s } from 'cdk8s-plus-28';
import { DEFAULTS, DEVICES } from './stacks';
import { one, synth } from './support';
import { LocalVolumeProvisionerProps } from '../../src/constructs';

/**
 * What the API server refuses in a pod template (Kubernetes pkg/apis/core/validation),
 * and what kubelet could never run, fails at synth with the prop named, instead of at
 * `kubectl apply` with a field of the DaemonSet named.
 */
function problemsOf(props: LocalVolumeProvisionerProps): string[] {
  try {
    synth(props);
  } catch (e) {
    return (e as Error).message.split('\n').slice(1).map((l) => l.trim());
  }
  throw new Error('synth succeeded');
}

const udev: k8s.Volume = { name: 'udev', hostPath: { path: '/run/udev', type: 'Directory' } };
const metricsPort = k8s.IntOrString.fromString('metrics');

describe('pod volumes have unique names', () => {
  test.each<[string, LocalVolumeProvisionerProps, string]>([
    ['the host /dev volume', { ...DEFAULTS, extraVolumes: [{ ...udev, name: 'dev' }] },
      'extraVolumes[0].name: "dev" is also the name of the host /dev (mountDevVolume)'],
    ['the ConfigMap volume', { ...DEFAULTS, extraVolumes: [{ ...udev, name: 'config' }] },
      'extraVolumes[0].name: "config" is also the name of the agent\'s ConfigMap'],
    ['another extra volume', { ...DEFAULTS, extraVolumes: [udev, { ...udev, hostPath: { path: '/run/udev2' } }] },
      'extraVolumes[1].name: "udev" is also the name of extraVolumes[0].name'],
  ])('an extra volume named as %s is refused', (_case, props, expected) => {
    expect(problemsOf(props)).toEqual([expected]);
  });

  test('a volume named as ours is accepted when that volume is not in the pod (mountDevVolume: false)', () => {
    expect(() => synth({ ...DEFAULTS, mountDevVolume: false, extraVolumes: [{ ...udev, name: 'dev' }] })).not.toThrow();
  });
});

describe('mount paths are unique in the agent container', () => {
  test.each<[string, LocalVolumeProvisionerProps, string]>([
    ['the host /dev', { ...DEFAULTS, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '/dev' }] },
      'extraVolumeMounts[0].mountPath: "/dev" is also the mountPath of the host /dev (mountDevVolume)'],
    ['a class directory', { ...DEFAULTS, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '/mnt/fast-disks' }] },
      'extraVolumeMounts[0].mountPath: "/mnt/fast-disks" is also the mountPath of storageClasses[0].hostDir'],
    ['the config directory', { ...DEFAULTS, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '/etc/provisioner/config' }] },
      'extraVolumeMounts[0].mountPath: "/etc/provisioner/config" is also the mountPath of the agent\'s ConfigMap'],
    ['another extra mount', { ...DEFAULTS, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '/run/udev' }, { name: 'udev', mountPath: '/run/udev' }] },
      'extraVolumeMounts[1].mountPath: "/run/udev" is also the mountPath of extraVolumeMounts[0].mountPath'],
    ['a device directory', { ...DEVICES, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '/var/lib/disks' }] },
      'extraVolumeMounts[0].mountPath: "/var/lib/disks" is also the mountPath of devices.specs[1].deviceDir'],
  ])('an extra mount at %s is refused', (_case, props, expected) => {
    expect(problemsOf(props)).toEqual([expected]);
  });

  test('a class mountDir at /dev is refused, naming the class', () => {
    expect(problemsOf({ storageClasses: [{ name: 'a', hostDir: '/mnt/a', mountDir: '/dev' }] }))
      .toEqual(['storageClasses[0].mountDir: "/dev" is also the mountPath of the host /dev (mountDevVolume)']);
  });
});

describe('volume mounts refer to a volume of the pod', () => {
  test('an extra mount of an unknown volume is refused', () => {
    expect(problemsOf({ ...DEFAULTS, extraVolumeMounts: [{ name: 'udev', mountPath: '/run/udev' }] }))
      .toEqual([expect.stringMatching(/^extraVolumeMounts\[0\]\.name: "udev" is not a volume of the directory agent's pod \(config, state, dev, class-fast-disks-[0-9a-f]{8}\)$/)]);
  });

  test('an extra mount of the directory agent\'s ConfigMap volume is refused in the device agent\'s pod', () => {
    expect(problemsOf({ ...DEFAULTS, ...DEVICES, extraVolumeMounts: [{ name: 'config', mountPath: '/config' }] }))
      .toEqual([expect.stringMatching(/^extraVolumeMounts\[0\]\.name: "config" is not a volume of the device agent's pod/)]);
  });

  test('an extra mount of one of the construct\'s volumes is accepted', () => {
    const ds = one(synth({ ...DEFAULTS, extraVolumeMounts: [{ name: 'dev', mountPath: '/host/disk', subPath: 'disk' }] }), 'DaemonSet');
    expect(ds.spec.template.spec.containers[0].volumeMounts).toContainEqual({ name: 'dev', mountPath: '/host/disk', subPath: 'disk' });
  });
});

describe('volumes and mounts the server refuses', () => {
  test.each<[string, LocalVolumeProvisionerProps, string]>([
    ['a volume name that is not a DNS label', { ...DEFAULTS, extraVolumes: [{ ...udev, name: 'Run_Udev' }] },
      'extraVolumes[0].name: "Run_Udev" is not a valid volume name: at most 63 lower-case letters, digits and \'-\', starting and ending with a letter or digit'],
    ['a volume without a source', { ...DEFAULTS, extraVolumes: [{ name: 'udev' }] },
      'extraVolumes[0]: has no volume source (hostPath, configMap, secret, emptyDir, ...)'],
    ['a volume with two sources', { ...DEFAULTS, extraVolumes: [{ ...udev, emptyDir: {} }] },
      'extraVolumes[0]: has more than one volume source (hostPath, emptyDir)'],
    ['an unknown hostPath type', { ...DEFAULTS, extraVolumes: [{ name: 'udev', hostPath: { path: '/run/udev', type: 'Dir' } }] },
      'extraVolumes[0].hostPath.type: "Dir" is not one of DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice, BlockDevice'],
    ['a hostPath with ..', { ...DEFAULTS, extraVolumes: [{ name: 'udev', hostPath: { path: '/run/../etc' } }] },
      'extraVolumes[0].hostPath.path: "/run/../etc" must not contain \'..\''],
    ['an unknown mount propagation', { ...DEFAULTS, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '/run/udev', mountPropagation: 'HostToContainers' }] },
      'extraVolumeMounts[0].mountPropagation: "HostToContainers" is not one of None, HostToContainer, Bidirectional'],
    ['Bidirectional propagation in an unprivileged agent', { ...DEFAULTS, privileged: false, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '/run/udev', mountPropagation: 'Bidirectional' }] },
      'extraVolumeMounts[0].mountPropagation: Bidirectional is only allowed in a privileged container'],
    ['an absolute subPath', { ...DEFAULTS, extraVolumeMounts: [{ name: 'dev', mountPath: '/host/disk', subPath: '/disk' }] },
      'extraVolumeMounts[0].subPath: "/disk" must be a relative path without \'..\''],
    ['an empty mountPath', { ...DEFAULTS, extraVolumes: [udev], extraVolumeMounts: [{ name: 'udev', mountPath: '' }] },
      'extraVolumeMounts[0].mountPath: must not be empty'],
  ])('%s', (_case, props, expected) => {
    expect(problemsOf(props)).toEqual([expected]);
  });
});

describe('containers', () => {
  test.each<[string, LocalVolumeProvisionerProps, string]>([
    ['an empty image', { ...DEFAULTS, image: '' }, 'image: must not be empty'],
    ['an image with spaces around it', { ...DEFAULTS, image: ' registry.example.com/lvp:1 ' }, 'image: " registry.example.com/lvp:1 " has leading or trailing spaces'],
    ['an init container named as the agent container', { ...DEFAULTS, initContainers: [{ name: 'provisioner', image: 'busybox:1.36' }] },
      'initContainers[0].name: "provisioner" is also the name of the agent container'],
    ['two init containers of one name', { ...DEFAULTS, initContainers: [{ name: 'wait', image: 'busybox:1.36' }, { name: 'wait', image: 'busybox:1.36' }] },
      'initContainers[1].name: "wait" is also the name of initContainers[0].name'],
    ['an init container without an image', { ...DEFAULTS, initContainers: [{ name: 'wait' }] }, 'initContainers[0].image: must not be empty'],
    ['an init container name that is not a DNS label', { ...DEFAULTS, initContainers: [{ name: 'Wait', image: 'busybox:1.36' }] },
      'initContainers[0].name: "Wait" is not a valid container name: at most 63 lower-case letters, digits and \'-\', starting and ending with a letter or digit'],
    ['an init container mount of an unknown volume', { ...DEFAULTS, initContainers: [{ name: 'wait', image: 'busybox:1.36', volumeMounts: [{ name: 'disks', mountPath: '/mnt' }] }] },
      'initContainers[0].volumeMounts[0].name: "disks" is not a volume of the directory agent\'s pod (config, state, dev, class-fast-disks-f171f91e)'],
    ['an env name with a space', { ...DEFAULTS, env: [{ name: 'MY VAR', value: 'x' }] },
      'env[0].name: "MY VAR" is not a valid environment variable name: letters, digits, \'_\', \'-\' and \'.\', not starting with a digit'],
    ['an env variable with value and valueFrom', { ...DEFAULTS, env: [{ name: 'NODE', value: 'x', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }] },
      'env[0]: has both value and valueFrom; give one'],
  ])('%s is refused', (_case, props, expected) => {
    expect(problemsOf(props)).toEqual([expected]);
  });
});

describe('probes', () => {
  test.each<[string, LocalVolumeProvisionerProps, string]>([
    ['a port name the container does not have', { ...DEFAULTS, livenessProbe: { httpGet: { path: '/healthz', port: k8s.IntOrString.fromString('http') } } },
      'livenessProbe.httpGet.port: "http" is not a port of the container (metrics)'],
    ['a port name that is not a port name', { ...DEFAULTS, readinessProbe: { tcpSocket: { port: k8s.IntOrString.fromString('Metrics') } } },
      'readinessProbe.tcpSocket.port: "Metrics" is not a valid port name: at most 15 lower-case letters, digits and \'-\', with at least one letter, no \'--\', not starting or ending with \'-\''],
    ['a port number out of range', { ...DEFAULTS, livenessProbe: { tcpSocket: { port: k8s.IntOrString.fromNumber(0) } } },
      'livenessProbe.tcpSocket.port: 0 is not a whole number from 1 to 65535'],
    ['no handler', { ...DEFAULTS, startupProbe: { periodSeconds: 5 } }, 'startupProbe: has no handler (exec, httpGet, tcpSocket or grpc)'],
    ['two handlers', { ...DEFAULTS, livenessProbe: { exec: { command: ['true'] }, httpGet: { path: '/healthz', port: metricsPort } } },
      'livenessProbe: has more than one handler (exec, httpGet)'],
    ['a liveness success threshold other than 1', { ...DEFAULTS, livenessProbe: { httpGet: { path: '/healthz', port: metricsPort }, successThreshold: 2 } },
      'livenessProbe.successThreshold: must be 1 for a liveness probe'],
    ['a negative period', { ...DEFAULTS, readinessProbe: { httpGet: { path: '/readyz', port: metricsPort }, periodSeconds: -1 } },
      'readinessProbe.periodSeconds: -1 is not a whole number of at least 0'],
    ['a termination grace period on a readiness probe', { ...DEFAULTS, readinessProbe: { httpGet: { path: '/readyz', port: metricsPort }, terminationGracePeriodSeconds: 5 } },
      'readinessProbe.terminationGracePeriodSeconds: must not be set on a readiness probe'],
  ])('%s is refused', (_case, props, expected) => {
    expect(problemsOf(props)).toEqual([expected]);
  });

  test('a probe on the metrics port by number is accepted', () => {
    expect(() => synth({ ...DEFAULTS, metricsPort: 9100, livenessProbe: { tcpSocket: { port: k8s.IntOrString.fromNumber(9100) } } })).not.toThrow();
  });
});
