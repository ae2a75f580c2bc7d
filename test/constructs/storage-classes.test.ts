import { DEFAULTS, DEVICES, FULL, POOLS } from './stacks';
import { all, one, synth } from './support';
import { LocalVolumeProvisionerProps, PoolBackend, ProjectQuotaTenants } from '../../src/constructs';

describe('StorageClasses', () => {
  test('a class gets a no-provisioner, WaitForFirstConsumer StorageClass with reclaimPolicy Delete', () => {
    const sc = one(synth(DEFAULTS), 'StorageClass', 'fast-disks');
    expect(sc).toMatchObject({ provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer', reclaimPolicy: 'Delete' });
    expect(sc.metadata.annotations).toBeUndefined();
    expect(sc.metadata.namespace).toBeUndefined();
  });

  test('the Helm storageClass options are passed through', () => {
    const sc = one(synth(FULL), 'StorageClass', 'fast-disks');
    expect(sc.provisioner).toBe('example.com/local-no-provisioner');
    expect(sc.reclaimPolicy).toBe('Retain');
    expect(sc.metadata.annotations).toEqual({ 'storageclass.kubernetes.io/is-default-class': 'true' });
    expect(sc.allowedTopologies).toEqual([{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['zone-a'] }] }]);
    expect(sc.mountOptions).toEqual(['noatime']);
  });

  test('storageClass.create: false leaves the StorageClass to someone else', () => {
    expect(all(synth(FULL), 'StorageClass').map((s) => s.metadata.name)).not.toContain('block-disks');
  });

  test('each device class gets one StorageClass, with the reclaim policy of its specs', () => {
    const manifests = synth(DEVICES);
    expect(one(manifests, 'StorageClass', 'local-nvme')).toMatchObject({
      reclaimPolicy: 'Delete', metadata: { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
    });
    expect(one(manifests, 'StorageClass', 'local-sas').reclaimPolicy).toBe('Retain');
  });

  test('cluster-scoped objects carry no namespace even in a chart with one', () => {
    const manifests = synth({ ...DEFAULTS, nodeCleanup: {}, createNamespace: true }, 'storage');
    const clusterScoped = manifests.filter((m) => ['StorageClass', 'ClusterRole', 'ClusterRoleBinding', 'Namespace'].includes(m.kind));
    expect(clusterScoped.length).toBe(6);
    expect(clusterScoped.filter((m) => m.metadata.namespace !== undefined)).toEqual([]);
    expect(one(manifests, 'DaemonSet').metadata.namespace).toBe('storage');
  });
});

describe('pool classes', () => {
  test('a pool class\'s StorageClass names the pools\' provisioner; the other classes keep no-provisioner', () => {
    const manifests = synth(POOLS);
    expect(one(manifests, 'StorageClass', 'local-pool')).toMatchObject({ provisioner: 'pool.local-volume-provisioner.io', volumeBindingMode: 'WaitForFirstConsumer' });
    expect(one(manifests, 'StorageClass', 'fast-disks').provisioner).toBe('kubernetes.io/no-provisioner');
  });

  test('a CSIDriver of the provisioner\'s name turns on capacity-aware scheduling, without attachment', () => {
    expect(one(synth(POOLS), 'CSIDriver', 'pool.local-volume-provisioner.io').spec).toEqual({
      attachRequired: false, storageCapacity: true, podInfoOnMount: false, volumeLifecycleModes: ['Persistent'],
    });
    expect(all(synth(DEFAULTS), 'CSIDriver')).toEqual([]);
  });

  test('the class is a pool in the agent\'s ConfigMap', () => {
    expect(one(synth(POOLS), 'ConfigMap').data.storageClassMap).toMatch(/local-pool:[\s\S]*pool: "btrfs"/);
  });

  test('a pool class with another provisioner is refused, naming the prop', () => {
    const props: LocalVolumeProvisionerProps = {
      storageClasses: [{ name: 'local-pool', hostDir: '/mnt/pool', pool: PoolBackend.BTRFS, storageClass: { provisioner: 'example.com/other' } }],
    };
    expect(() => synth(props)).toThrow(/storageClasses\[0\]\.storageClass\.provisioner: "example.com\/other" cannot serve a pool class/);
  });

  test('a pool class of Block volumes is refused by the configuration model, under the prop\'s name', () => {
    const props = { storageClasses: [{ name: 'local-pool', hostDir: '/mnt/pool', pool: PoolBackend.BTRFS, volumeMode: 'Block' }] } as unknown as LocalVolumeProvisionerProps;
    expect(() => synth(props)).toThrow(/storageClasses\[0\]\.volumeMode: "Block" is not offered by a pool class/);
  });
});

describe('XFS and ext4 pool classes', () => {
  test('say whose pods use them: one that does not is refused, naming the prop and what a tenant of the host\'s user namespace can do', () => {
    for (const pool of [PoolBackend.XFS, PoolBackend.EXT4]) {
      expect(() => synth({ storageClasses: [{ name: 'p', hostDir: '/mnt/pool', pool }] }))
        .toThrow(/storageClasses\[0\]\.projectQuotaTenants: is required for a (xfs|ext4) pool class: .*move its files out of its volume's limit until the agent's walk/);
    }
  });

  test('the choice is the class\'s in the agent\'s ConfigMap', () => {
    const manifests = synth({
      storageClasses: [{ name: 'p', hostDir: '/mnt/pool', pool: PoolBackend.XFS, projectQuotaTenants: ProjectQuotaTenants.ANY_LIMITS_RESTORED_BY_SCAN }],
    });
    expect(one(manifests, 'ConfigMap').data.storageClassMap).toMatch(/projectQuotaTenants: "any-limits-restored-by-scan"/);
  });

  test('another backend that says it is refused', () => {
    expect(() => synth({ storageClasses: [{ name: 'p', hostDir: '/mnt/pool', pool: PoolBackend.BTRFS, projectQuotaTenants: ProjectQuotaTenants.USER_NAMESPACED }] }))
      .toThrow(/storageClasses\[0\]\.projectQuotaTenants: is for xfs and ext4 pool classes only/);
  });
});

describe('lvm-thin pool classes', () => {
  const THIN: LocalVolumeProvisionerProps = {
    storageClasses: [{ name: 'local-thin', hostDir: '/dev/vg0', pool: PoolBackend.LVM_THIN, thinPool: 'thin', overcommit: 1.5 }],
  };

  test('the class names its thin pool and overcommit in the agent\'s ConfigMap, and the filesystem it makes (ext4 by default)', () => {
    const classMap = one(synth(THIN), 'ConfigMap').data.storageClassMap as string;
    expect(classMap).toMatch(/pool: "lvm-thin"/);
    expect(classMap).toMatch(/thinPool: "thin"/);
    expect(classMap).toMatch(/overcommit: 1\.5/);
    expect(classMap).toMatch(/fsType: "ext4"/);
  });

  test('its /dev/<volume group> is not mounted into the agent: the host\'s /dev is', () => {
    const pod = one(synth(THIN), 'DaemonSet').spec.template.spec;
    expect(pod.volumes.map((v: { hostPath?: { path: string } }) => v.hostPath?.path)).not.toContain('/dev/vg0');
    expect(pod.volumes.map((v: { hostPath?: { path: string } }) => v.hostPath?.path)).toContain('/dev');
    expect(pod.hostPID).toBe(true);
  });

  test('without the host\'s PID namespace or /dev it is refused, naming the prop', () => {
    expect(() => synth({ ...THIN, hostPid: false })).toThrow(/hostPid: must be true with an lvm-thin pool class/);
    expect(() => synth({ ...THIN, mountDevVolume: false })).toThrow(/mountDevVolume: must be true with an lvm-thin pool class/);
  });

  test('a class without its thin pool, or whose hostDir is no volume group, is refused', () => {
    expect(() => synth({ storageClasses: [{ name: 'local-thin', hostDir: '/dev/vg0', pool: PoolBackend.LVM_THIN }] }))
      .toThrow(/storageClasses\[0\]\.thinPool: is required/);
    expect(() => synth({ storageClasses: [{ name: 'local-thin', hostDir: '/mnt/vg0', pool: PoolBackend.LVM_THIN, thinPool: 'thin' }] }))
      .toThrow(/storageClasses\[0\]\.hostDir: "\/mnt\/vg0" must be \/dev\/<volume group>/);
  });

  test('thinPool and overcommit on another backend are refused; so is an overcommit below 1', () => {
    expect(() => synth({ storageClasses: [{ name: 'p', hostDir: '/mnt/pool', pool: PoolBackend.XFS, projectQuotaTenants: ProjectQuotaTenants.USER_NAMESPACED, overcommit: 2 }] }))
      .toThrow(/storageClasses\[0\]\.overcommit: is for lvm-thin pool classes only/);
    expect(() => synth({ storageClasses: [{ name: 'p', hostDir: '/dev/vg0', pool: PoolBackend.LVM_THIN, thinPool: 'thin', overcommit: 0.5 }] }))
      .toThrow(/storageClasses\[0\]\.overcommit: 0\.5 is not a number of at least 1/);
  });
});
