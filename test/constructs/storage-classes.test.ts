import { DEFAULTS, DEVICES, FULL } from './stacks';
import { all, one, synth } from './support';

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
