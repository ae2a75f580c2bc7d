/**
 * The objects users deploy the replaced Go programs with, rendered here from the facts
 * in ../shared/reference/upstream-deployments.md (our own rendering, not upstream's
 * templates): the static provisioner's Helm chart v2.9.0 (section 1) and the
 * node-cleanup example Deployment (section 5). Tests swap only the image into them.
 */
/** A rendered Kubernetes object, loosely typed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Manifest = Record<string, any>;

/** One entry of the chart's `classes` value. */
export interface ChartClass {
  readonly name: string;
  readonly hostDir: string;
  readonly volumeMode: 'Filesystem' | 'Block';
  readonly fsType?: string;
  readonly namePattern?: string;
  readonly blockCleanerCommand?: readonly string[];
}

export interface ChartValues {
  /** The Helm release; its name contains the chart's, so it is the fullname too. */
  readonly release: string;
  readonly namespace: string;
  readonly classes: readonly ChartClass[];
  /** The chart's image value, which JOB_CONTAINER_IMAGE repeats literally. */
  readonly image?: string;
}

const CHART = 'local-static-provisioner';
const CHART_VERSION = '2.9.0';

/**
 * The chart's objects for these values (serviceAccount.create, rbac.create, every class
 * with `storageClass: true`, everything else at its default).
 */
export function renderStaticProvisionerChart(values: ChartValues): Manifest[] {
  const fullname = values.release;
  const image = values.image ?? `registry.k8s.io/sig-storage/local-volume-provisioner:v${CHART_VERSION}`;
  const selector = { 'app.kubernetes.io/name': CHART, 'app.kubernetes.io/instance': values.release };
  const labels = { 'helm.sh/chart': `${CHART}-${CHART_VERSION}`, ...selector, 'app.kubernetes.io/managed-by': 'Helm' };
  const meta = (name: string, namespaced = true) => ({ name, ...(namespaced ? { namespace: values.namespace } : {}), labels });
  const storageClassMap = values.classes.map((c) => [
    `${c.name}:`,
    `   hostDir: ${c.hostDir}`,
    `   mountDir: ${c.hostDir}`,
    ...(c.blockCleanerCommand?.length ? ['   blockCleanerCommand:', ...c.blockCleanerCommand.map((a) => `     - "${a}"`)] : []),
    `   volumeMode: ${c.volumeMode}`,
    ...(c.fsType ? [`   fsType: ${c.fsType}`] : []),
    `   namePattern: "${c.namePattern ?? '*'}"`,
  ].join('\n')).join('\n') + '\n';
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(fullname) },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(`${fullname}-config`), data: { storageClassMap } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta(`${fullname}-node-clusterrole`, false),
      rules: [
        { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
        { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['events'], verbs: ['watch'] },
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'update', 'patch'] },
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'update'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta(`${fullname}-node-binding`, false),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${fullname}-node-clusterrole` },
      subjects: [{ kind: 'ServiceAccount', name: fullname, namespace: values.namespace }],
    },
    ...values.classes.map((c) => ({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: c.name, labels },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    })),
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: meta(fullname),
      spec: {
        selector: { matchLabels: selector },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } },
        template: {
          metadata: { labels: selector, annotations: { 'checksum/config': 'rendered' } },
          spec: {
            hostPID: false,
            serviceAccountName: fullname,
            nodeSelector: { 'kubernetes.io/os': 'linux' },
            containers: [{
              name: 'provisioner',
              image,
              // No command and no args: the image's ENTRYPOINT runs with no arguments.
              securityContext: { privileged: true },
              env: [
                { name: 'MY_NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                { name: 'MY_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                { name: 'JOB_CONTAINER_IMAGE', value: image },
              ],
              ports: [{ name: 'metrics', containerPort: 8080 }],
              livenessProbe: { tcpSocket: { port: 'metrics' }, initialDelaySeconds: 10, periodSeconds: 60, timeoutSeconds: 5, failureThreshold: 3 },
              volumeMounts: [
                { name: 'provisioner-config', mountPath: '/etc/provisioner/config', readOnly: true },
                { name: 'provisioner-dev', mountPath: '/dev' },
                ...values.classes.map((c) => ({ name: c.name, mountPath: c.hostDir, mountPropagation: 'HostToContainer' })),
              ],
            }],
            volumes: [
              { name: 'provisioner-config', configMap: { name: `${fullname}-config` } },
              { name: 'provisioner-dev', hostPath: { path: '/dev' } },
              ...values.classes.map((c) => ({ name: c.name, hostPath: { path: c.hostDir } })),
            ],
          },
        },
      },
    },
  ];
}

/** The node-cleanup example's name, ServiceAccount (in `default`, which its RBAC assumes) and args. */
export const NODE_CLEANUP = 'local-volume-node-cleanup-controller';
/** The Deployment's args, as the example writes them. */
export const NODE_CLEANUP_ARGS = ['--storageclass-names=nvme-ssd-block', '--pvc-deletion-delay=60s', '--stale-pv-discovery-interval=10s'];
/** Its ServiceAccount: the example has no namespace, so its RBAC assumes `default`. */
export const NODE_CLEANUP_ACCOUNT = { name: NODE_CLEANUP, namespace: 'default' };

/** The node-cleanup example: its Deployment (no namespace), ServiceAccount and ClusterRole with binding. */
export function renderNodeCleanupExample(): Manifest[] {
  const account = NODE_CLEANUP_ACCOUNT;
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: account },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${NODE_CLEANUP}-runner` },
      rules: [
        { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch', 'delete'] },
        { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'delete'] },
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${NODE_CLEANUP}-role` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${NODE_CLEANUP}-runner` },
      subjects: [{ kind: 'ServiceAccount', ...account }],
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: NODE_CLEANUP, labels: { app: 'local-volume-node-cleanup' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'local-volume-node-cleanup' } },
        template: {
          metadata: { labels: { app: 'local-volume-node-cleanup' } },
          spec: {
            // The deprecated field, as the example writes it.
            serviceAccount: NODE_CLEANUP,
            containers: [{
              name: NODE_CLEANUP,
              image: 'gcr.io/k8s-staging-sig-storage/local-volume-node-cleanup:canary',
              args: NODE_CLEANUP_ARGS,
              ports: [{ name: 'metrics', containerPort: 8080 }],
            }],
          },
        },
      },
    },
  ];
}

/** The device-selecting provisioner's DaemonSet, ServiceAccount and namespace (section 6). */
export const DEVICE_PROVISIONER = 'local-pv-provisioner';
export const DEVICE_PROVISIONER_NAMESPACE = 'kube-system';

export interface DeviceProvisionerValues {
  /** Where its devices are, on the host and in the container alike (the e2e's `/dev/e2etest`). */
  readonly deviceDir: string;
  /** PV spec ConfigMaps (kube-system), by name, as their `data`. */
  readonly specs: Record<string, Record<string, string>>;
  /** StorageClasses it provisions for (no-provisioner, WaitForFirstConsumer, Retain). */
  readonly storageClasses: readonly string[];
}

/** The device provisioner's deployment as its e2e manifest and config/rbac write it: no command, no events or leases RBAC. */
export function renderDeviceProvisioner(values: DeviceProvisionerValues): Manifest[] {
  const namespace = DEVICE_PROVISIONER_NAMESPACE;
  const labels = { 'app.kubernetes.io/name': DEVICE_PROVISIONER };
  const account = { kind: 'ServiceAccount', name: DEVICE_PROVISIONER, namespace };
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEVICE_PROVISIONER, namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: DEVICE_PROVISIONER },
      rules: [
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['persistentvolumes'], verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: DEVICE_PROVISIONER },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: DEVICE_PROVISIONER },
      subjects: [account],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: DEVICE_PROVISIONER, namespace },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: DEVICE_PROVISIONER, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: DEVICE_PROVISIONER },
      subjects: [account],
    },
    ...values.storageClasses.map((name) => ({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Retain',
    })),
    ...Object.entries(values.specs).map(([name, data]) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data })),
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: DEVICE_PROVISIONER, namespace },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels, annotations: { 'prometheus.io/port': '8080' } },
          spec: {
            serviceAccountName: DEVICE_PROVISIONER,
            containers: [{
              name: DEVICE_PROVISIONER,
              image: 'ghcr.io/cybozu/local-pv-provisioner:latest',
              imagePullPolicy: 'IfNotPresent',
              args: ['--polling-interval=10s'],
              env: [
                { name: 'LP_NAMESPACE_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                { name: 'LP_NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
              ],
              ports: [{ name: 'metrics', containerPort: 8080 }],
              securityContext: { runAsUser: 0, runAsGroup: 0, privileged: true },
              livenessProbe: { httpGet: { path: '/metrics', port: 8080 } },
              volumeMounts: [{ name: 'dev', mountPath: values.deviceDir, readOnly: true }],
            }],
            volumes: [{ name: 'dev', hostPath: { path: values.deviceDir } }],
          },
        },
      },
    },
  ];
}
