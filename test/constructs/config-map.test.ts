import { Duration } from 'cdk8s';
import { DEVICES, FULL } from './stacks';
import { one, synth } from './support';
import { parseDeviceSpec, parseProvisionerConfig } from '../../src/config';
import { DeviceWipe } from '../../src/constructs';

describe('the provisioner ConfigMap', () => {
  test('parses, with the runtime model, to the classes given in the props', () => {
    const data = one(synth(FULL), 'ConfigMap', 'lvp-config').data;
    const parsed = parseProvisionerConfig(data);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    expect(parsed.warnings).toEqual([]);
    expect(parsed.config.storageClassMap).toEqual({
      'fast-disks': {
        hostDir: '/mnt/fast-disks',
        mountDir: '/discovery/fast-disks',
        blockCleanerCommand: ['/scripts/quick_reset.sh'],
        volumeMode: 'Filesystem',
        accessMode: 'ReadWriteOncePod',
        fsType: 'ext4',
        namePattern: 'ssd*,nvme*',
        selector: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-a'] }] }],
      },
      'block-disks': {
        hostDir: '/mnt/block-disks',
        mountDir: '/mnt/block-disks',
        blockCleanerCommand: ['/scripts/shred.sh', '2'],
        volumeMode: 'Block',
        accessMode: 'ReadWriteOnce',
        fsType: '',
        namePattern: '*',
        selector: [],
      },
    });
  });

  test('parses to the top-level settings given in the props', () => {
    const parsed = parseProvisionerConfig(one(synth(FULL), 'ConfigMap', 'lvp-config').data);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const { storageClassMap: _classes, ...rest } = parsed.config;
    expect(rest).toEqual({
      nodeLabelsForPV: ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'],
      labelsForPV: { 'example.com/tier': 'fast' },
      useAlphaAPI: false,
      useJobForCleaning: true,
      jobTolerations: [{ key: 'storage', operator: 'Exists' }],
      minResyncPeriod: Duration.minutes(90).toMilliseconds(),
      useNodeNameOnly: true,
      setPVOwnerRef: true,
      removeNodeNotReadyTaint: true,
      provisionerNotReadyNodeTaintKey: 'example.com/storage-not-ready',
      cleanupTimeout: Duration.hours(6).toMilliseconds(),
      cleanupStallTimeout: Duration.minutes(30).toMilliseconds(),
      maxConcurrentCleanups: 4,
      missingVolumeGracePeriod: Duration.minutes(30).toMilliseconds(),
      deleteMissingReleasedVolumes: true,
    });
  });

  test('gives a class without mountDir the hostDir as mountDir (the Helm chart rule)', () => {
    const parsed = parseProvisionerConfig(one(synth({ storageClasses: [{ name: 'a', hostDir: '/mnt/a' }] }), 'ConfigMap').data);
    expect(parsed.ok && parsed.config.storageClassMap.a.mountDir).toBe('/mnt/a');
  });
});

describe('the device-dialect PV spec ConfigMaps', () => {
  const manifests = synth(DEVICES);

  test('are named as the specs, which is what the node annotation refers to', () => {
    expect(manifests.filter((m) => m.kind === 'ConfigMap').map((m) => m.metadata.name)).toEqual(['nvme-block', 'sas-xfs']);
  });

  test('parse, with the runtime model, to the specs given in the props', () => {
    const nvme = parseDeviceSpec(one(manifests, 'ConfigMap', 'nvme-block').data);
    const sas = parseDeviceSpec(one(manifests, 'ConfigMap', 'sas-xfs').data);
    expect(nvme.ok && nvme.config).toEqual({
      storageClassName: 'local-nvme',
      volumeMode: 'Block',
      fsType: '',
      deviceDir: '/dev/disk/by-path',
      deviceNameFilter: '^pci-0000:3c:00\\.0-nvme-.*',
      reclaimPolicy: 'Delete',
      wipeDevicesHoldingData: false,
      wipe: 'full',
    });
    expect(sas.ok && sas.config).toEqual({
      storageClassName: 'local-sas',
      volumeMode: 'Filesystem',
      fsType: 'xfs',
      deviceDir: '/var/lib/disks',
      deviceNameFilter: 'sd[ab]',
      reclaimPolicy: 'Retain',
      wipeDevicesHoldingData: false,
      wipe: 'full',
    });
  });

  test('a spec\'s wipe is written as given, and full without it', () => {
    const specs = [{ ...DEVICES.devices!.specs[0], wipe: DeviceWipe.UPSTREAM_RANGES }, DEVICES.devices!.specs[1]];
    const written = synth({ ...DEVICES, devices: { ...DEVICES.devices!, specs } });
    expect(one(written, 'ConfigMap', specs[0].name).data.wipe).toBe('upstream-ranges');
    expect(one(written, 'ConfigMap', specs[1].name).data.wipe).toBe('full');
  });
});
