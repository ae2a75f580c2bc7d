import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { DEFAULTS, DEVICES, FULL } from './stacks';
import { Manifest, one, synth } from './support';
import { DEFAULT_IMAGE, LogLevel } from '../../src/constructs';

function agent(manifests: Manifest[], name = 'local-volume-provisioner'): Manifest {
  return one(manifests, 'DaemonSet', name);
}
function podSpec(ds: Manifest): Manifest {
  return ds.spec.template.spec;
}
function container(ds: Manifest): Manifest {
  return podSpec(ds).containers[0];
}
function mountAt(ds: Manifest, path: string): Manifest | undefined {
  return container(ds).volumeMounts.find((m: Manifest) => m.mountPath === path);
}
function volume(ds: Manifest, name: string): Manifest | undefined {
  return podSpec(ds).volumes.find((v: Manifest) => v.name === name);
}

describe('the directory agent DaemonSet', () => {
  const ds = agent(synth({
    storageClasses: [
      { name: 'fast-disks', hostDir: '/mnt/fast-disks' },
      { name: 'slow-disks', hostDir: '/mnt/slow-disks', mountDir: '/discovery/slow' },
    ],
  }));

  test('runs the agent privileged, as root, with a writable root filesystem', () => {
    expect(container(ds).securityContext).toEqual({ privileged: true, runAsUser: 0, runAsNonRoot: false, readOnlyRootFilesystem: false });
  });

  test('mounts each class hostDir at its mountDir with HostToContainer propagation', () => {
    const fast = mountAt(ds, '/mnt/fast-disks')!;
    const slow = mountAt(ds, '/discovery/slow')!;
    expect(fast.mountPropagation).toBe('HostToContainer');
    expect(slow.mountPropagation).toBe('HostToContainer');
    expect(volume(ds, fast.name)!.hostPath.path).toBe('/mnt/fast-disks');
    expect(volume(ds, slow.name)!.hostPath.path).toBe('/mnt/slow-disks');
  });

  test('mounts the host /dev', () => {
    const dev = mountAt(ds, '/dev')!;
    expect(volume(ds, dev.name)!.hostPath).toEqual({ path: '/dev', type: 'Directory' });
  });

  test('can leave /dev out (mountDevVolume: false)', () => {
    expect(mountAt(agent(synth({ ...DEFAULTS, mountDevVolume: false })), '/dev')).toBeUndefined();
  });

  test('mounts the config ConfigMap read-only at /etc/provisioner/config', () => {
    const config = mountAt(ds, '/etc/provisioner/config')!;
    expect(config.readOnly).toBe(true);
    expect(volume(ds, config.name)!.configMap.name).toBe('local-volume-provisioner-config');
  });

  test('passes the node name and namespace from the downward API, and the image for cleanup Jobs', () => {
    expect(container(ds).env).toEqual([
      { name: 'MY_NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
      { name: 'MY_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'JOB_CONTAINER_IMAGE', value: DEFAULT_IMAGE },
    ]);
  });

  test('runs the `run` subcommand with the Go provisioner flags', () => {
    expect(container(ds).args).toEqual([
      'run', '--listen-address=:8080', '--metrics-path=/metrics', '--discovery-period=10s', '--config-sync-period=5s',
      '--config-dir=/etc/provisioner/config', '--state-dir=/var/lib/local-volume-provisioner', '--claim-guard=local-volume-provisioner-claim-guard',
      '--kube-api-qps=100', '--kube-api-burst=200', '--log-level=info',
    ]);
  });

  test('passes --project-scan-period only when projectScanPeriod is given (the agent\'s default otherwise)', () => {
    expect(container(agent(synth({ storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }], projectScanPeriod: Duration.seconds(15) }))).args)
      .toContain('--project-scan-period=15s');
    expect(container(ds).args.some((a: string) => a.startsWith('--project-scan-period'))).toBe(false);
  });

  test('exposes port metrics 8080 and probes /healthz (liveness) and /readyz (readiness) on it', () => {
    expect(container(ds).ports).toEqual([{ name: 'metrics', containerPort: 8080, protocol: 'TCP' }]);
    expect(container(ds).livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container(ds).readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
  });

  test('overrides the cdk8s-plus defaults that are wrong for a node agent', () => {
    const c = container(ds);
    expect(c.imagePullPolicy).toBe('IfNotPresent');
    expect(podSpec(ds).automountServiceAccountToken).toBe(true);
    expect(c.startupProbe).toBeUndefined();
    expect(c.resources).toEqual({ requests: { cpu: '50m', memory: '192Mi' }, limits: { memory: '512Mi' } });
  });

  test('schedules on every Linux node, tolerating every taint, at the cluster\'s default priority (as the chart)', () => {
    expect(podSpec(ds).nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(podSpec(ds).tolerations).toEqual([{ operator: 'Exists' }]);
    expect(podSpec(ds).priorityClassName).toBeUndefined();
  });

  test('shares the host PID namespace by default, so a volume a pod still uses is seen and not emptied', () => {
    expect(podSpec(ds).hostPID).toBe(true);
  });

  test('uses the default image, which is the one image/Dockerfile builds', () => {
    expect(container(ds).image).toBe(DEFAULT_IMAGE);
    const version = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')).version;
    expect(DEFAULT_IMAGE).toBe(`ghcr.io/local-volume-provisioner/local-volume-provisioner:${version}`);
  });

  test('rolls RollingUpdate one node at a time by default', () => {
    expect(ds.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } });
  });
});

describe('the config hash annotation', () => {
  const hashOf = (manifests: Manifest[]) => agent(manifests).spec.template.metadata.annotations['checksum/config'];

  test('is the sha256 of the mounted ConfigMap data, in key order', () => {
    const manifests = synth(DEFAULTS);
    const data = one(manifests, 'ConfigMap', 'local-volume-provisioner-config').data as Record<string, string>;
    const sorted = Object.keys(data).sort().map((k) => [k, data[k]]);
    expect(hashOf(manifests)).toBe(createHash('sha256').update(JSON.stringify(sorted)).digest('hex'));
  });

  test('changes when the configuration changes, so the pods roll', () => {
    expect(hashOf(synth({ ...DEFAULTS, useNodeNameOnly: true }))).not.toBe(hashOf(synth(DEFAULTS)));
    expect(hashOf(synth({ storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks', namePattern: 'ssd*' }] })))
      .not.toBe(hashOf(synth(DEFAULTS)));
  });

  test('stays the same when only pod settings change', () => {
    expect(hashOf(synth({ ...DEFAULTS, image: 'example.com/other:1', logLevel: LogLevel.DEBUG }))).toBe(hashOf(synth(DEFAULTS)));
  });
});

describe('pod settings from props', () => {
  const ds = agent(synth(FULL), 'lvp');

  test('merges the nodeSelector with kubernetes.io/os: linux', () => {
    expect(podSpec(ds).nodeSelector).toEqual({ 'example.com/local-disks': 'true', 'kubernetes.io/os': 'linux' });
  });

  test('tolerates the startup taint it removes (removeNodeNotReadyTaint)', () => {
    expect(podSpec(ds).tolerations).toContainEqual({ key: 'example.com/storage-not-ready', operator: 'Exists' });
  });

  test('keeps to its own PID namespace when told (hostPid: false)', () => {
    expect(podSpec(agent(synth({ ...DEFAULTS, hostPid: false }))).hostPID).toBeUndefined();
  });

  test('adds extra volumes, mounts, init containers, pull secrets and probes', () => {
    expect(volume(ds, 'udev')).toEqual({ name: 'udev', hostPath: { path: '/run/udev', type: 'Directory' } });
    expect(mountAt(ds, '/run/udev')).toEqual({ name: 'udev', mountPath: '/run/udev', readOnly: true });
    expect(podSpec(ds).initContainers.map((c: Manifest) => c.name)).toEqual(['wait-for-disks']);
    expect(podSpec(ds).imagePullSecrets).toEqual([{ name: 'registry-credentials' }]);
    expect(container(ds).startupProbe.failureThreshold).toBe(30);
  });

  test('keeps user pod labels and annotations beside its own', () => {
    expect(ds.spec.template.metadata.labels).toMatchObject({ 'example.com/team': 'storage', 'app.kubernetes.io/component': 'agent' });
    expect(Object.keys(ds.spec.template.metadata.annotations).sort()).toEqual(['checksum/config', 'example.com/owner']);
  });

  test('keeps the pod selector a subset of the pod labels', () => {
    expect(ds.spec.template.metadata.labels).toMatchObject(ds.spec.selector.matchLabels);
  });

  test('passes custom resources and update strategy through', () => {
    expect(container(ds).resources.limits).toEqual({ memory: '1Gi' });
    expect(ds.spec.updateStrategy.rollingUpdate.maxUnavailable).toBe('25%');
  });
});

describe('the device agent DaemonSet', () => {
  const manifests = synth(DEVICES);
  const ds = agent(manifests, 'local-volume-provisioner-devices');

  test('runs the `devices` subcommand with the device provisioner flags', () => {
    expect(container(ds).args).toEqual([
      'devices', '--node-name=$(MY_NODE_NAME)', '--namespace-name=$(MY_NAMESPACE)', '--metrics-addr=:8080', '--metrics-path=/metrics',
      '--polling-interval=1m0s', '--default-pv-spec-configmap=nvme-block', '--state-dir=/var/lib/local-volume-provisioner',
      '--claim-guard=local-volume-provisioner-claim-guard', '--kube-api-qps=100', '--kube-api-burst=200', '--log-level=info',
    ]);
  });

  test('gets the node name and namespace its flags refer to from the downward API', () => {
    expect(container(ds).env.map((e: Manifest) => [e.name, e.valueFrom.fieldRef.fieldPath])).toEqual([
      ['MY_NODE_NAME', 'spec.nodeName'], ['MY_NAMESPACE', 'metadata.namespace'],
    ]);
  });

  test('mounts a deviceDir outside /dev at its own path, and none inside /dev twice', () => {
    expect(mountAt(ds, '/var/lib/disks')!.mountPropagation).toBe('HostToContainer');
    expect(mountAt(ds, '/dev/disk/by-path')).toBeUndefined();
    expect(mountAt(ds, '/dev')).toBeDefined();
  });

  test('is privileged and needs no config volume or config hash (specs are read from the API)', () => {
    expect(container(ds).securityContext.privileged).toBe(true);
    expect(mountAt(ds, '/etc/provisioner/config')).toBeUndefined();
    expect(ds.spec.template.metadata.annotations).toBeUndefined();
  });

  test('mounts the same volume record directory as the directory agent, at its own path', () => {
    const both = agent(synth({ ...DEVICES, storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }] }), 'local-volume-provisioner');
    for (const d of [ds, both]) {
      expect(volume(d, 'state')!.hostPath).toEqual({ path: '/var/lib/local-volume-provisioner', type: 'DirectoryOrCreate' });
      expect(mountAt(d, '/var/lib/local-volume-provisioner')!.name).toBe('state');
    }
  });

  test('passes another stateDirectory to its flag and its mount', () => {
    const moved = agent(synth({ ...DEVICES, stateDirectory: '/data/lvp' }), 'local-volume-provisioner-devices');
    expect(container(moved).args).toContain('--state-dir=/data/lvp');
    expect(volume(moved, 'state')!.hostPath.path).toBe('/data/lvp');
    expect(mountAt(moved, '/data/lvp')).toBeDefined();
  });

  test('is the only DaemonSet when no directory class is configured', () => {
    expect(manifests.filter((m) => m.kind === 'DaemonSet').map((m) => m.metadata.name)).toEqual(['local-volume-provisioner-devices']);
  });
});

describe('the node-cleanup Deployment', () => {
  const d = one(synth({ ...DEFAULTS, nodeCleanup: { storageClassNames: ['fast-disks'], pvcDeletionDelay: Duration.minutes(2) } }), 'Deployment');
  const c = d.spec.template.spec.containers[0];

  test('runs the `node-cleanup` subcommand with leader election and upstream flags', () => {
    expect(c.args).toEqual([
      'node-cleanup', '--listen-address=:8080', '--metrics-path=/metrics', '--storageclass-names=fast-disks',
      '--pvc-deletion-delay=2m0s', '--stale-pv-discovery-interval=10s', '--leader-elect=true',
      '--kube-api-qps=100', '--kube-api-burst=200', '--log-level=info',
    ]);
  });

  test('identifies each replica in the Lease by its pod name, in its namespace', () => {
    expect(c.env).toEqual([
      { name: 'MY_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
  });

  test('runs at the cluster\'s default priority unless given one', () => {
    expect(d.spec.template.spec.priorityClassName).toBeUndefined();
  });

  test('runs unprivileged under its own ServiceAccount', () => {
    expect(c.securityContext).toMatchObject({ runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
    expect(d.spec.template.spec.serviceAccountName).toBe('local-volume-provisioner-node-cleanup');
    expect(d.spec.template.spec.automountServiceAccountToken).toBe(true);
  });

  test('is not synthesized unless asked for', () => {
    expect(synth(DEFAULTS).filter((m) => m.kind === 'Deployment')).toEqual([]);
  });
});

test('a custom probe replaces the default one', () => {
  const probe = { exec: { command: ['true'] } };
  const ds = agent(synth({ ...DEFAULTS, livenessProbe: probe, readinessProbe: probe }));
  expect(container(ds).livenessProbe).toEqual(probe);
  expect(container(ds).readinessProbe).toEqual(probe);
});

test('a Quantity prop is written as a string', () => {
  const ds = agent(synth({ ...DEFAULTS, resources: { requests: { memory: k8s.Quantity.fromString('1Gi') } } }));
  expect(container(ds).resources).toEqual({ requests: { memory: '1Gi' } });
});
