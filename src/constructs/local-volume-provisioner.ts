import { ApiObject, Chart, JsonPatch } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { claimGuardObjects } from './claim-guard';
import { claimRoutingObjects } from './claim-routing';
import { dashboardJson } from './dashboard';
import { alertGroups, formatPrometheusDuration, PrometheusRule, ServiceMonitor } from './monitoring';
import { POOL_PROVISIONER } from '../config';
import { LocalVolumeProvisionerProps } from './props';
import { agentRules, nodeCleanupRules, RoleRules } from './rbac';
import { ResolvedProps, resolveProps } from './resolve';
import { deviceAgentSpec, directoryAgentSpec, instanceLabels, nodeCleanupSpec } from './workloads';

/** Metadata of a namespaced object of this instance: its name, namespace and labels. */
type MetadataOf = (name: string, extraLabels?: Record<string, string>) => { name: string; namespace: string; labels: Record<string, string> };

/**
 * The local volume provisioner, deployed from typed props: the node agents
 * (a DaemonSet per configuration dialect), their ConfigMaps, StorageClasses,
 * least-privilege RBAC and the claim guard (an admission policy), and optionally node
 * cleanup, a Namespace, metrics Service, ServiceMonitor, PrometheusRule and Grafana
 * dashboard.
 *
 * Every object has an explicit name derived from `name`, so names do not depend on
 * where the construct sits in the tree; construct ids are fixed strings (plus the class
 * or ConfigMap name), so adding a class never renames another object.
 */
export class LocalVolumeProvisioner extends Construct {
  /** The Namespaces the other provisioners of the app create, each with that construct's path. */
  private static namespacesCreatedBesides(self: LocalVolumeProvisioner): Map<string, string> {
    const created = new Map<string, string>();
    for (const c of self.node.root.node.findAll()) {
      // A provisioner whose props were refused has nothing resolved.
      if (c !== self && c instanceof LocalVolumeProvisioner && c.resolved?.createNamespace) created.set(c.resolved.namespace, c.node.path);
    }
    return created;
  }

  /** The namespace of its namespaced objects (and of cleanup Jobs). */
  public readonly namespace: string;
  /** The props with every default applied: how the objects are built, not an API. */
  private readonly resolved: ResolvedProps;
  /** The directory dialect's DaemonSet, when classes are configured. */
  public readonly daemonSet?: k8s.KubeDaemonSet;
  /** The device dialect's DaemonSet, when `devices` is set. */
  public readonly deviceDaemonSet?: k8s.KubeDaemonSet;

  constructor(scope: Construct, id: string, props: LocalVolumeProvisionerProps = {}) {
    super(scope, id);
    const r = resolveProps(props, {
      chartNamespace: Chart.of(this).namespace,
      namespacesCreatedElsewhere: LocalVolumeProvisioner.namespacesCreatedBesides(this),
    });
    this.resolved = r;
    this.namespace = r.namespace;
    if (r.warnings.length > 0) {
      // cdk8s has no warning channel, but synthesis runs every construct's validations
      // (App.synth and each chart's toJson), so warnings are said there, once, on stderr,
      // and synthesis goes on.
      let said = false;
      this.node.addValidation({
        validate: () => {
          if (!said) r.warnings.forEach((w) => console.warn(`Warning: LocalVolumeProvisioner ${this.node.path}: ${w}`));
          said = true;
          return [];
        },
      });
    }
    const labels = instanceLabels(r);
    const meta: MetadataOf = (name, extraLabels = {}) => ({ name, namespace: r.namespace, labels: { ...labels, ...extraLabels } });

    if (r.createNamespace) {
      this.clusterScoped(new k8s.KubeNamespace(this, 'Namespace', {
        metadata: {
          name: r.namespace,
          labels: {
            ...labels,
            // The agents are privileged and use hostPath volumes.
            'pod-security.kubernetes.io/enforce': 'privileged',
            'pod-security.kubernetes.io/audit': 'privileged',
            'pod-security.kubernetes.io/warn': 'privileged',
          },
        },
      }));
    }

    if (r.serviceAccount.create) {
      new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata: meta(r.serviceAccount.name) });
    }
    if (r.rbac.create) {
      this.rbac('', r.name, r.serviceAccount.name, agentRules(r.rbac.features), r.rbac.extraRules);
    }

    for (const sc of r.storageClasses.filter((c) => c.create)) {
      this.clusterScoped(new k8s.KubeStorageClass(this, `StorageClass-${sc.name}`, {
        metadata: {
          name: sc.name,
          labels,
          annotations: sc.isDefaultClass ? { 'storageclass.kubernetes.io/is-default-class': 'true' } : undefined,
        },
        provisioner: sc.provisioner,
        // A local volume is on one node: bind only once the pod's node is known.
        volumeBindingMode: 'WaitForFirstConsumer',
        reclaimPolicy: sc.reclaimPolicy,
        allowedTopologies: sc.allowedTopologies.length > 0 ? sc.allowedTopologies : undefined,
        mountOptions: sc.mountOptions.length > 0 ? sc.mountOptions : undefined,
        allowVolumeExpansion: sc.allowVolumeExpansion ? true : undefined,
      }));
    }

    if (r.claimGuard) {
      for (const obj of claimGuardObjects(this, r.claimGuard, labels)) this.clusterScoped(obj);
    }
    if (r.claimRouting) {
      for (const obj of claimRoutingObjects(this, r.claimRouting, labels)) this.clusterScoped(obj);
    }

    if (r.rbac.features.pools) {
      // Named as the pool classes' provisioner: with storageCapacity, the scheduler places their claims by the
      // agents' CSIStorageCapacity objects. The directory agent is its node plugin (poolVolumesAsCsi): nothing to attach.
      this.clusterScoped(new k8s.KubeCsiDriver(this, 'PoolCapacity', {
        metadata: { name: POOL_PROVISIONER, labels },
        spec: { attachRequired: false, storageCapacity: true, podInfoOnMount: false, volumeLifecycleModes: ['Persistent'] },
      }));
    }

    if (r.directory) {
      new k8s.KubeConfigMap(this, 'Config', { metadata: meta(r.directory.configMapName), data: r.directory.configData });
      this.daemonSet = new k8s.KubeDaemonSet(this, 'DaemonSet', {
        metadata: meta(r.name, { 'app.kubernetes.io/component': 'agent' }),
        spec: directoryAgentSpec(r),
      });
    }

    if (r.devices) {
      for (const spec of r.devices.specs) {
        new k8s.KubeConfigMap(this, `DeviceSpec-${spec.name}`, { metadata: meta(spec.name), data: spec.data });
      }
      this.deviceDaemonSet = new k8s.KubeDaemonSet(this, 'DeviceDaemonSet', {
        metadata: meta(`${r.name}-devices`, { 'app.kubernetes.io/component': 'device-agent' }),
        spec: deviceAgentSpec(r),
      });
    }

    if (r.nodeCleanup) {
      const n = r.nodeCleanup;
      const name = `${r.name}-node-cleanup`;
      if (r.serviceAccount.create) {
        new k8s.KubeServiceAccount(this, 'NodeCleanupServiceAccount', { metadata: meta(n.serviceAccountName) });
      }
      if (r.rbac.create) this.rbac('NodeCleanup', name, n.serviceAccountName, nodeCleanupRules());
      new k8s.KubeDeployment(this, 'NodeCleanup', {
        metadata: meta(name, { 'app.kubernetes.io/component': 'node-cleanup' }),
        spec: nodeCleanupSpec(r),
      });
    }

    this.monitoring(r, meta);
  }

  private monitoring(r: ResolvedProps, meta: MetadataOf): void {
    const m = r.metrics;
    const labels = instanceLabels(r);
    // Agents and node cleanup all serve metrics on the same named port.
    const selector = { 'app.kubernetes.io/name': 'local-volume-provisioner', 'app.kubernetes.io/instance': r.name };
    if (m.service) {
      new k8s.KubeService(this, 'MetricsService', {
        metadata: meta(m.serviceName),
        spec: {
          // Headless: Prometheus scrapes each pod; there is nothing to load-balance.
          clusterIp: 'None',
          selector,
          ports: [{ name: 'metrics', port: r.runtime.metricsPort, targetPort: k8s.IntOrString.fromString('metrics'), protocol: 'TCP' }],
        },
      });
    }
    if (m.serviceMonitor) {
      const sm = m.serviceMonitor;
      new ServiceMonitor(this, 'ServiceMonitor', {
        metadata: { name: r.name, namespace: sm.namespace, labels: { ...labels, ...sm.labels } },
        spec: {
          selector: { matchLabels: labels },
          namespaceSelector: sm.namespaceSelector,
          jobLabel: sm.jobLabel,
          endpoints: [{
            port: 'metrics',
            path: '/metrics',
            interval: formatPrometheusDuration(sm.intervalMs),
            scrapeTimeout: sm.scrapeTimeoutMs === undefined ? undefined : formatPrometheusDuration(sm.scrapeTimeoutMs),
            relabelings: sm.relabelings.length > 0 ? sm.relabelings : undefined,
            metricRelabelings: sm.metricRelabelings.length > 0 ? sm.metricRelabelings : undefined,
          }],
        },
      });
    }
    if (m.prometheusRule) {
      new PrometheusRule(this, 'PrometheusRule', {
        metadata: { name: r.name, namespace: m.prometheusRule.namespace, labels: { ...labels, ...m.prometheusRule.labels } },
        spec: { groups: alertGroups(r) },
      });
    }
    if (m.grafanaDashboard) {
      const g = m.grafanaDashboard;
      new k8s.KubeConfigMap(this, 'GrafanaDashboard', {
        metadata: {
          name: `${r.name}-dashboard`,
          namespace: g.namespace,
          labels: { ...labels, ...g.labels },
          annotations: g.folder ? { grafana_folder: g.folder } : undefined,
        },
        data: { 'local-volume-provisioner.json': JSON.stringify(dashboardJson(r.namespace), undefined, 2) },
      });
    }
  }

  /**
   * A ClusterRole (its rules, then `extraClusterRules` as given) and a Role (when there are
   * namespaced rules), each bound to the ServiceAccount.
   */
  private rbac(idPrefix: string, name: string, serviceAccount: string, rules: RoleRules, extraClusterRules: k8s.PolicyRule[] = []): void {
    const subjects = [{ kind: 'ServiceAccount', name: serviceAccount, namespace: this.resolved.namespace }];
    const labels = instanceLabels(this.resolved);
    this.clusterScoped(new k8s.KubeClusterRole(this, `${idPrefix}ClusterRole`, { metadata: { name, labels }, rules: [...rules.cluster, ...extraClusterRules] }));
    this.clusterScoped(new k8s.KubeClusterRoleBinding(this, `${idPrefix}ClusterRoleBinding`, {
      metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects,
    }));
    if (rules.namespaced.length === 0) return;
    const metadata = { name, namespace: this.resolved.namespace, labels };
    new k8s.KubeRole(this, `${idPrefix}Role`, { metadata, rules: rules.namespaced });
    new k8s.KubeRoleBinding(this, `${idPrefix}RoleBinding`, {
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects,
    });
  }

  /** cdk8s gives every object the chart's namespace; a cluster-scoped one must have none. */
  private clusterScoped(obj: ApiObject): void {
    if (obj.metadata.namespace !== undefined) obj.addJsonPatch(JsonPatch.remove('/metadata/namespace'));
  }
}
