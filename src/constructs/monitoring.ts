import { ApiObject, ApiObjectMetadata, GroupVersionKind } from 'cdk8s';
import { Construct } from 'constructs';
import { NamespaceSelector, RelabelConfig } from './props';
import { ResolvedProps } from './resolve';

/**
 * prometheus-operator objects as small typed ApiObjects (no `cdk8s import` of the CRDs,
 * which needs the network), and the provisioner's alerts.
 */

/** One scrape endpoint of a ServiceMonitor. */
export interface ServiceMonitorEndpoint {
  /** Name of the Service port to scrape. */
  readonly port: string;
  /** HTTP path of the metrics. */
  readonly path: string;
  /**
   * Scrape interval, a Prometheus duration.
   * @default - Prometheus' global scrape interval
   */
  readonly interval?: string;
  /**
   * Scrape timeout, a Prometheus duration.
   * @default - Prometheus' global scrape timeout
   */
  readonly scrapeTimeout?: string;
  /**
   * Relabelings applied to targets before scraping.
   * @default - none
   */
  readonly relabelings?: RelabelConfig[];
  /**
   * Relabelings applied to samples before ingestion.
   * @default - none
   */
  readonly metricRelabelings?: RelabelConfig[];
}

/** A label selector by exact labels. */
export interface MatchLabelsSelector {
  /** Labels every selected object carries. */
  readonly matchLabels: Record<string, string>;
}

/** spec of a ServiceMonitor. */
export interface ServiceMonitorSpec {
  /** The Services to scrape. */
  readonly selector: MatchLabelsSelector;
  /**
   * The namespaces the Services are looked for in.
   * @default - the ServiceMonitor's namespace
   */
  readonly namespaceSelector?: NamespaceSelector;
  /** The endpoints scraped on each Service. */
  readonly endpoints: ServiceMonitorEndpoint[];
  /**
   * Service label whose value becomes the `job` label.
   * @default - the Service name
   */
  readonly jobLabel?: string;
}

/** Props of {@link ServiceMonitor}. */
export interface ServiceMonitorProps {
  /** Its metadata. */
  readonly metadata: ApiObjectMetadata;
  /** Its spec. */
  readonly spec: ServiceMonitorSpec;
}

/** monitoring.coreos.com/v1 ServiceMonitor. */
export class ServiceMonitor extends ApiObject {
  /** Its API version and kind. */
  static readonly GVK: GroupVersionKind = { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor' };

  constructor(scope: Construct, id: string, props: ServiceMonitorProps) {
    super(scope, id, { ...ServiceMonitor.GVK, ...props });
  }
}

/** A Prometheus alerting rule. */
export interface AlertingRule {
  /** Name of the alert. */
  readonly alert: string;
  /** PromQL expression; the alert fires for each series it returns. */
  readonly expr: string;
  /**
   * How long the expression must hold before the alert fires, a Prometheus duration.
   * @default - at once
   */
  readonly for?: string;
  /** Labels of the alert. */
  readonly labels: Record<string, string>;
  /** Annotations of the alert (summary, description, runbook_url). */
  readonly annotations: Record<string, string>;
}

/** A group of rules, evaluated together. */
export interface RuleGroup {
  /** Name of the group. */
  readonly name: string;
  /** Its rules. */
  readonly rules: AlertingRule[];
}

/** spec of a PrometheusRule. */
export interface PrometheusRuleSpec {
  /** Its rule groups. */
  readonly groups: RuleGroup[];
}

/** Props of {@link PrometheusRule}. */
export interface PrometheusRuleProps {
  /** Its metadata. */
  readonly metadata: ApiObjectMetadata;
  /** Its spec. */
  readonly spec: PrometheusRuleSpec;
}

/** monitoring.coreos.com/v1 PrometheusRule. */
export class PrometheusRule extends ApiObject {
  /** Its API version and kind. */
  static readonly GVK: GroupVersionKind = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' };

  constructor(scope: Construct, id: string, props: PrometheusRuleProps) {
    super(scope, id, { ...PrometheusRule.GVK, ...props });
  }
}

/** A Prometheus duration (`1m30s`, `500ms`) from whole milliseconds. */
export function formatPrometheusDuration(ms: number): string {
  if (ms === 0) return '0s';
  const units: [string, number][] = [['h', 3_600_000], ['m', 60_000], ['s', 1000], ['ms', 1]];
  let rest = ms;
  let out = '';
  for (const [unit, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}

/**
 * The alerts of docs/operations.md ("Suggested alerts"), with the same names. Targets
 * are selected by the `namespace` and `service` labels that prometheus-operator puts on
 * every target of a ServiceMonitor, so they hold whatever `jobLabel` says. Per-volume
 * alerts keep the volume's labels, so each names its PV, path and StorageClass.
 */
export function alertGroups(r: ResolvedProps): RuleGroup[] {
  const rule = r.metrics.prometheusRule!;
  const sel = `namespace="${r.namespace}", service="${r.metrics.serviceName}"`;
  const alert = (
    name: string, severity: string, expr: string, forDuration: string | undefined, summary: string, description: string,
  ): AlertingRule => ({
    alert: name,
    expr,
    for: forDuration,
    labels: { ...rule.alertLabels, severity },
    annotations: {
      summary,
      description,
      ...(rule.runbookBaseUrl ? { runbook_url: `${rule.runbookBaseUrl}#${name.toLowerCase()}` } : {}),
    },
  });
  const pod = 'Pod {{ $labels.namespace }}/{{ $labels.pod }}';
  const volume = 'PV "{{ $labels.persistentvolume }}" at {{ $labels.path }} (StorageClass {{ $labels.storageclass }})';
  const daemonSets = [r.directory ? r.name : undefined, r.devices ? `${r.name}-devices` : undefined].filter((d) => d !== undefined);

  const rules: AlertingRule[] = [
    alert('LocalVolumeProvisionerDown', 'critical',
      `up{${sel}} == 0`, '5m',
      'A local volume provisioner agent cannot be scraped.',
      `${pod} has not answered Prometheus for 5 minutes: no discovery and no cleanup on its node.`),
    alert('LocalVolumeProvisionerNotReady', 'warning',
      `kube_daemonset_status_number_ready{namespace="${r.namespace}", daemonset=~"${daemonSets.join('|')}"}`
      + ` < kube_daemonset_status_desired_number_scheduled{namespace="${r.namespace}", daemonset=~"${daemonSets.join('|')}"}`, '15m',
      'Local volume provisioner agents are not ready.',
      'DaemonSet {{ $labels.namespace }}/{{ $labels.daemonset }} has agents that never finished a first pass (from kube-state-metrics).'),
    alert('LocalVolumeProvisionerCleanupFailing', 'warning',
      `increase(local_volume_provisioner_persistentvolume_delete_failed_total{${sel}}[30m]) > 0`, undefined,
      'Released local volumes fail to be cleaned.',
      `${pod} failed {{ $value | humanize }} {{ $labels.mode }} cleanups ({{ $labels.type }}) in 30 minutes; those volumes stay Released and are not offered again. See the CleanupFailed Events on the PVs.`),
    alert('LocalVolumeProvisionerVolumeInError', 'warning',
      `local_volume_provisioner_volume_state{${sel}, state="error"} == 1`, '15m',
      'A local volume is in error.',
      `${volume} on ${pod} can be neither used nor cleaned; its Events say why.`),
    alert('LocalVolumeProvisionerVolumeMissing', 'warning',
      `local_volume_provisioner_volume_state{${sel}, state="missing"} == 1`, '15m',
      'The disk of a local PV is gone.',
      `${volume} on ${pod}: the disk was removed or unmounted.`),
    alert('LocalVolumeProvisionerDeviceErrors', 'warning',
      `local_pv_provisioner_error_devices{${sel}} > 0`, '15m',
      'Devices cannot be offered.',
      'Node {{ $labels.node }} has {{ $value }} devices that cannot be opened, wiped or offered (device dialect); see the Events on the Node.'),
    alert('LocalVolumeProvisionerDeviceHoldsData', 'warning',
      `local_volume_provisioner_volume_state{${sel}, state="held-data"} == 1`, undefined,
      'A device holds data and is not offered.',
      'Device {{ $labels.path }} (StorageClass {{ $labels.storageclass }}) on ' + pod
      + ' carries a partition table or filesystem, so it is neither wiped nor offered; clear or retire it, or opt the spec in to wiping.'),
    alert('LocalVolumeProvisionerVolumeHeldDirty', 'warning',
      `local_volume_provisioner_volume_state{${sel}, state="held-dirty"} == 1`, undefined,
      'A used local volume is held with its data.',
      'Volume {{ $labels.path }} (StorageClass {{ $labels.storageclass }}) on ' + pod
      + ' was used by a tenant and has no PV any more; its reclaim policy (Retain) or a class no longer configured keeps its data, so it is never offered until'
      + ' an administrator runs "local-volume-provisioner volumes reclaim {{ $labels.path }}" (clean, then offer) or "volumes accept {{ $labels.path }}" in the agent\'s pod.'),
    alert('LocalVolumeProvisionerRecordUnusable', 'critical',
      `local_volume_provisioner_volume_record_usable{${sel}} == 0`, '5m',
      'A node\'s volume record cannot be used.',
      `${pod} cannot read its volume record (a file damaged, its directory gone): nothing is offered or cleaned on its node until it is repaired. The VolumeRecordUnusable Event on the Node names the file.`),
    alert('LocalVolumeProvisionerRecordNotDurable', 'warning',
      `local_volume_provisioner_volume_record_durable{${sel}} == 0`, '15m',
      'A node\'s volume record is lost with its pod.',
      `${pod} keeps its volume record in the container, not in a host directory: it is lost when the pod is replaced. Mount a hostPath at --state-dir (the construct does).`),
    alert('LocalVolumeProvisionerVolumeRebound', 'critical',
      `local_volume_provisioner_volume_rebound{${sel}} == 1`, undefined,
      'A tenant was given another tenant\'s data.',
      'PV "{{ $labels.persistentvolume }}" (StorageClass {{ $labels.storageclass }}) on ' + pod
      + ' is bound to claim {{ $labels.claim }}, but its volume still holds the data of the claim that used it before: its claimRef was cleared or changed'
      + ' while no agent ran and the claim guard was not in force. The VolumeRebound Event on the PV names both claims.'),
    alert('LocalVolumeProvisionerConfigRejected', 'warning',
      `local_volume_provisioner_config_last_reload_successful{${sel}} == 0`, '5m',
      'The provisioner configuration was rejected.',
      `${pod} rejected the last configuration change and still uses the previous one; the ConfigInvalid Event on its Node names the bad key.`),
    alert('LocalVolumeProvisionerClassSkipped', 'warning',
      `local_volume_provisioner_config_skipped_storageclass{${sel}} == 1`, '0m',
      'A StorageClass of the configuration is not run.',
      `${pod} runs without StorageClass {{ $labels.storageclass }}, whose configuration has problems of its own; the StorageClassSkipped Event on its Node names them.`),
    alert('LocalVolumeProvisionerPoolVolumeAlmostFull', 'warning',
      `local_volume_provisioner_pool_volume_used_bytes{${sel}} / local_volume_provisioner_pool_volume_limit_bytes{${sel}} > 0.9`, '15m',
      'A pool volume is almost full.',
      'Pool volume {{ $labels.persistentvolume }} (StorageClass {{ $labels.storageclass }}) on ' + pod
      + ' holds {{ $value | humanizePercentage }} of its size; writes beyond it fail with EDQUOT. Grow its claim (the class allows expansion).'),
    alert('LocalVolumeProvisionerPoolFull', 'warning',
      `local_volume_provisioner_pool_available_bytes{${sel}} < 1048576`, '15m',
      'A node\'s pool can give no new volume.',
      `${pod} has no space left in the pool of StorageClass {{ $labels.storageclass }}: the scheduler puts no new claim of the class on its node, and its volumes cannot grow.`),
    alert('LocalVolumeProvisionerPoolUnusable', 'warning',
      `local_volume_provisioner_pool_usable{${sel}} == 0`, '15m',
      'A node\'s pool cannot give volumes whose limits hold.',
      `${pod} cannot use the pool of StorageClass {{ $labels.storageclass }} (missing, not the filesystem it needs, quotas off or in full mode, its storage claimed`
      + ' by another class): no claim of the class is placed on its node. The PoolUnusable Event on the Node says why.'),
    alert('LocalVolumeProvisionerThinPoolFilling', 'warning',
      `local_volume_provisioner_pool_data_fill_ratio{${sel}} > 0.8 or local_volume_provisioner_pool_metadata_fill_ratio{${sel}} > 0.8`, '15m',
      'A node\'s thin pool is filling.',
      `${pod}'s thin pool of StorageClass {{ $labels.storageclass }} is {{ $value | humanizePercentage }} full (data or metadata): full, every volume in it`
      + ' fails its writes. Grow it (lvextend, --poolmetadatasize for metadata) or lower the class\'s overcommit; at 90% metadata no volume is made.'),
    alert('LocalVolumeProvisionerPoolLimitEscaped', 'warning',
      `increase(local_volume_provisioner_pool_limit_escapes_total{${sel}}[1h]) > 0`, undefined,
      'A tenant got around its pool volume\'s limit.',
      `${pod} found {{ $value | humanize }} way(s) around a volume's limit in StorageClass {{ $labels.storageclass }} in the last hour (on btrfs, a subvolume`
      + ' made inside a volume naming another quota group; on XFS and ext4, files given another project from the host\'s user namespace) and undid them;'
      + ' the PoolVolumeLimitEscaped Event on the PV names the volume and what it did.'),
    alert('LocalVolumeProvisionerPoolBlockVolumesRefused', 'warning',
      `local_volume_provisioner_pool_block_volumes_refused{${sel}} == 1`, '15m',
      'A node\'s LVM reads what tenants write: no Block volume is given there.',
      `${pod} gives no Block volume of StorageClass {{ $labels.storageclass }}: the node's LVM lists physical volumes on loop devices, as kubelet maps Block`
      + ' volumes, so a tenant\'s volume group would be activated by the node. Confine its LVM to its own disks (a devices file, or a global_filter);'
      + ' the PoolBlockVolumesRefused Event on the Node says how.'),
    alert('LocalVolumeProvisionerPoolVolumeFailing', 'warning',
      `increase(local_volume_provisioner_pool_operation_failures_total{${sel}}[30m]) > 0`, undefined,
      'Pool volumes fail to be made, resized or destroyed.',
      `${pod} failed {{ $value | humanize }} {{ $labels.operation }} operation(s) on pool volumes of StorageClass {{ $labels.storageclass }} in 30 minutes;`
      + ' each is tried again every pass. The PoolVolumeFailed Events on the claims and PVs say why.'),
  ];
  // Only where the construct installs the guard: with claimGuard off it is known to be missing, by the user's choice.
  if (r.claimGuard) {
    rules.push(alert('LocalVolumeProvisionerClaimGuardInactive', 'warning',
      `local_volume_provisioner_claim_guard_active{${sel}} == 0`, '15m',
      'The claim guard is not in force.',
      `${pod} finds the claim guard (an admission policy) missing, not Deny, or unreadable: while an agent is down, a Released PV whose claimRef an`
      + ' administrator clears can be bound by another claim with its last tenant\'s data. The ClaimGuardInactive Event on its Node says why.'));
  }
  // Only where the construct installs the routing (a pool class, claimRouting not off).
  if (r.claimRouting) {
    rules.push(alert('LocalVolumeProvisionerClaimRoutingInactive', 'warning',
      `local_volume_provisioner_claim_routing_active{${sel}} == 0`, '15m',
      'The claim routing is not in force: agents watch every claim of the cluster.',
      `${pod} finds the claim routing (an admission policy) missing or unreadable, and lists and watches every claim of the cluster: each claim written`
      + ' anywhere is sent to every node\'s agent. The ClaimRoutingInactive Event on its Node says why.'));
  }
  const expected = Object.entries(r.directory?.expectedVolumesPerNode ?? {});
  if (expected.length > 0) {
    rules.push(alert('LocalVolumeProvisionerNodeWithoutVolumes', 'warning',
      expected.map(([cls, n]) => `local_volume_provisioner_storageclass_volumes{${sel}, storageclass="${cls}"} < ${n}`).join(' or '), '30m',
      'A node has fewer local volumes than its class expects.',
      `${pod} offers only {{ $value }} volumes of StorageClass {{ $labels.storageclass }}: a disk not mounted under the class directory, mount propagation missing, or the class misconfigured (\`local-volume-provisioner plan\` on the node says why each entry is rejected).`));
  }
  return [{ name: 'local-volume-provisioner', rules }];
}
