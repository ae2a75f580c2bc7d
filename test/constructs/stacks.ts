import { Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { AccessMode, DeviceFsType, ImagePullPolicy, LocalVolumeProvisionerProps, LogLevel, PoolBackend, ReclaimPolicy, RelabelAction, VolumeMode } from '../../src/constructs';

/** The stacks the snapshot tests pin down, reused by the targeted tests. */

/** Defaults: one class and nothing else. */
export const DEFAULTS: LocalVolumeProvisionerProps = {
  storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }],
};

/** The device dialect alone: two specs, one of them the default. */
export const DEVICES: LocalVolumeProvisionerProps = {
  devices: {
    specs: [
      { name: 'nvme-block', storageClassName: 'local-nvme', volumeMode: VolumeMode.BLOCK, deviceDir: '/dev/disk/by-path', deviceNameFilter: '^pci-0000:3c:00\\.0-nvme-.*' },
      { name: 'sas-xfs', storageClassName: 'local-sas', volumeMode: VolumeMode.FILESYSTEM, fsType: DeviceFsType.XFS, deviceDir: '/var/lib/disks', deviceNameFilter: 'sd[ab]', reclaimPolicy: ReclaimPolicy.RETAIN },
    ],
    defaultSpec: 'nvme-block',
    pollingInterval: Duration.minutes(1),
    storageClasses: [{ name: 'local-nvme', isDefaultClass: true }],
  },
};

/** Block volumes cleaned by Jobs. */
export const JOB_CLEANING: LocalVolumeProvisionerProps = {
  storageClasses: [{ name: 'block-disks', hostDir: '/mnt/block-disks', volumeMode: VolumeMode.BLOCK, blockCleanerCommand: ['/scripts/blkdiscard.sh'] }],
  useJobForCleaning: true,
  jobTolerations: [{ key: 'storage', operator: 'Exists', effect: 'NoSchedule' }],
};

/** Node cleanup opted in for one class. */
export const NODE_CLEANUP: LocalVolumeProvisionerProps = {
  storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }],
  nodeCleanup: { storageClassNames: ['fast-disks'], pvcDeletionDelay: Duration.minutes(2), replicas: 2 },
};

/** A pool class beside a class of discovered volumes. */
export const POOLS: LocalVolumeProvisionerProps = {
  storageClasses: [
    { name: 'fast-disks', hostDir: '/mnt/fast-disks' },
    { name: 'local-pool', hostDir: '/mnt/pool', pool: PoolBackend.BTRFS },
  ],
};

/** Every prop set to something other than its default. */
export const FULL: LocalVolumeProvisionerProps = {
  name: 'lvp',
  namespace: 'storage',
  createNamespace: false,
  storageClasses: [
    {
      name: 'fast-disks',
      hostDir: '/mnt/fast-disks',
      mountDir: '/discovery/fast-disks',
      volumeMode: VolumeMode.FILESYSTEM,
      accessMode: AccessMode.READ_WRITE_ONCE_POD,
      fsType: 'ext4',
      namePattern: 'ssd*,nvme*',
      selector: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-a'] }] }],
      storageClass: {
        reclaimPolicy: ReclaimPolicy.RETAIN,
        isDefaultClass: true,
        provisioner: 'example.com/local-no-provisioner',
        allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['zone-a'] }] }],
        mountOptions: ['noatime'],
      },
      expectedVolumesPerNode: 4,
    },
    {
      name: 'block-disks',
      hostDir: '/mnt/block-disks',
      volumeMode: VolumeMode.BLOCK,
      blockCleanerCommand: ['/scripts/shred.sh', '2'],
      storageClass: { create: false },
    },
  ],
  devices: {
    specs: [{ name: 'hdd', storageClassName: 'local-hdd', volumeMode: VolumeMode.FILESYSTEM, fsType: DeviceFsType.EXT4, deviceDir: '/dev/disk/by-id', deviceNameFilter: '^wwn-', wipeDevicesHoldingData: true }],
  },
  nodeCleanup: {
    storageClassNames: ['fast-disks', 'local-hdd'],
    pvcDeletionDelay: Duration.minutes(5),
    stalePvDiscoveryInterval: Duration.seconds(30),
    replicas: 2,
    resources: { requests: { cpu: k8s.Quantity.fromString('20m'), memory: k8s.Quantity.fromString('96Mi') } },
    nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
    tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
    priorityClassName: 'high',
  },
  nodeLabelsForPV: ['topology.kubernetes.io/zone', 'kubernetes.io/hostname'],
  labelsForPV: { 'example.com/tier': 'fast' },
  useJobForCleaning: true,
  jobTolerations: [{ key: 'storage', operator: 'Exists' }],
  minResyncPeriod: Duration.minutes(90),
  useNodeNameOnly: true,
  setPVOwnerRef: true,
  removeNodeNotReadyTaint: true,
  provisionerNotReadyNodeTaintKey: 'example.com/storage-not-ready',
  cleanupTimeout: Duration.hours(6),
  cleanupStallTimeout: Duration.minutes(30),
  maxConcurrentCleanups: 4,
  missingVolumeGracePeriod: Duration.minutes(30),
  deleteMissingReleasedVolumes: true,
  discoveryPeriod: Duration.seconds(30),
  configSyncPeriod: Duration.seconds(15),
  kubeApiQps: 5,
  kubeApiBurst: 10,
  logLevel: LogLevel.DEBUG,
  metricsPort: 9100,
  createRbac: true,
  createServiceAccount: true,
  serviceAccountName: 'lvp-agent',
  image: 'registry.example.com/lvp:1.2.3',
  imagePullPolicy: ImagePullPolicy.ALWAYS,
  imagePullSecrets: ['registry-credentials'],
  resources: { requests: { cpu: k8s.Quantity.fromString('100m'), memory: k8s.Quantity.fromString('256Mi') }, limits: { memory: k8s.Quantity.fromString('1Gi') } },
  privileged: true,
  hostPid: true,
  mountDevVolume: true,
  podAnnotations: { 'example.com/owner': 'storage-team' },
  podLabels: { 'example.com/team': 'storage' },
  priorityClassName: 'storage-critical',
  nodeSelector: { 'example.com/local-disks': 'true' },
  tolerations: [{ key: 'example.com/storage', operator: 'Exists', effect: 'NoSchedule' }],
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] }],
      },
    },
  },
  updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: k8s.IntOrString.fromString('25%') } },
  initContainers: [{ name: 'wait-for-disks', image: 'busybox:1.36', command: ['sh', '-c', 'until mountpoint -q /mnt/fast-disks/ssd0; do sleep 1; done'] }],
  extraVolumes: [{ name: 'udev', hostPath: { path: '/run/udev', type: 'Directory' } }],
  extraVolumeMounts: [{ name: 'udev', mountPath: '/run/udev', readOnly: true }],
  livenessProbe: { httpGet: { path: '/healthz', port: k8s.IntOrString.fromString('metrics') }, periodSeconds: 30 },
  readinessProbe: { httpGet: { path: '/readyz', port: k8s.IntOrString.fromString('metrics') }, periodSeconds: 5 },
  startupProbe: { httpGet: { path: '/healthz', port: k8s.IntOrString.fromString('metrics') }, failureThreshold: 30, periodSeconds: 2 },
  metricsService: true,
  serviceMonitor: {
    namespace: 'monitoring',
    labels: { release: 'kube-prometheus-stack' },
    interval: Duration.seconds(15),
    scrapeTimeout: Duration.seconds(10),
    relabelings: [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: 'instance', action: RelabelAction.REPLACE }],
    metricRelabelings: [{ sourceLabels: ['__name__'], regex: 'nodejs_.*', action: RelabelAction.DROP }],
    namespaceSelector: { matchNames: ['storage'] },
    jobLabel: 'app.kubernetes.io/name',
  },
  prometheusRule: {
    namespace: 'monitoring',
    labels: { release: 'kube-prometheus-stack' },
    alertLabels: { team: 'storage' },
    runbookBaseUrl: 'https://runbooks.example.com/local-volume-provisioner',
  },
  grafanaDashboard: { namespace: 'monitoring', labels: { release: 'grafana' }, folder: 'Storage' },
};
