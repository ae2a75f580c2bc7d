import { ApiObject, ApiObjectMetadata } from 'cdk8s';
import { Construct } from 'constructs';
import { NamespaceSelector, RelabelConfig } from './props';
import { ResolvedProps } from './resolve-props';

/**
 * prometheus-operator objects as small typed ApiObjects (no `cdk8s import` of the CRDs,
 * which needs the network), and the provisioner's alerts.
 */

export interface ServiceMonitorEndpoint {
  readonly port: string;
  readonly path: string;
  readonly interval?: string;
  readonly scrapeTimeout?: string;
  readonly relabelings?: RelabelConfig[];
  readonly metricRelabelings?: RelabelConfig[];
}

export interface ServiceMonitorSpec {
  readonly selector: { readonly matchLabels: Record<string, string> };
  readonly namespaceSelector?: NamespaceSelector;
  readonly endpoints: ServiceMonitorEndpoint[];
  readonly jobLabel?: string;
}

/** monitoring.coreos.com/v1 ServiceMonitor. */
export class ServiceMonitor extends ApiObject {
  static readonly GVK = { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor' };

  constructor(scope: Construct, id: string, props: { readonly metadata: ApiObjectMetadata; readonly spec: ServiceMonitorSpec }) {
    super(scope, id, { ...ServiceMonitor.GVK, ...props });
  }
}

export interface AlertingRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
}

export interface RuleGroup {
  readonly name: string;
  readonly rules: AlertingRule[];
}

/** monitoring.coreos.com/v1 PrometheusRule. */
export class PrometheusRule extends ApiObject {
  static readonly GVK = { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' };

  constructor(scope: Construct, id: string, props: { readonly metadata: ApiObjectMetadata; readonly spec: { readonly groups: RuleGroup[] } }) {
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
 * The alerts. Targets are selected by the `namespace` and `service` labels that
 * prometheus-operator puts on every target of a ServiceMonitor, so they hold whatever
 * `jobLabel` says.
 */
export function alertGroups(r: ResolvedProps): RuleGroup[] {
  const rule = r.metrics.prometheusRule!;
  const sel = `namespace="${r.namespace}", service="${r.metrics.serviceName}"`;
  const forText = formatPrometheusDuration(rule.forMs);
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

  const rules: AlertingRule[] = [
    alert('LocalVolumeProvisionerDown', 'warning',
      `up{${sel}} == 0`, '5m',
      'A local volume provisioner agent is down.',
      'Pod {{ $labels.namespace }}/{{ $labels.pod }} has not answered Prometheus for 5 minutes: no PV is created or recycled on its node.'),
    alert('LocalVolumeProvisionerCleanupFailing', 'warning',
      `sum by (namespace, pod, mode, type) (increase(local_volume_provisioner_persistentvolume_delete_failed_total{${sel}}[30m])) > 0`, forText,
      'Released local volumes fail to be cleaned.',
      'Pod {{ $labels.namespace }}/{{ $labels.pod }} failed {{ $value | humanize }} {{ $labels.mode }} cleanups ({{ $labels.type }}) in 30 minutes; the volumes stay Released. See its Warning Events and logs.'),
    alert('LocalVolumeProvisionerVolumesInError', 'warning',
      `sum by (namespace, pod, storageclass, state) (local_volume_provisioner_volume_state{${sel}, state=~"error|missing"}) > 0`
      + ` or sum by (namespace, pod, node) (local_pv_provisioner_error_devices{${sel}}) > 0`, forText,
      'Local volumes are in error or missing.',
      'Pod {{ $labels.namespace }}/{{ $labels.pod }} has {{ $value }} volumes{{ with $labels.storageclass }} of class {{ . }}{{ end }} in state {{ or $labels.state "error" }}; they cannot be offered. See the Warning Events on the PVs and the Node.'),
    alert('LocalVolumeProvisionerDevicesHoldingData', 'info',
      `sum by (namespace, pod, storageclass) (local_volume_provisioner_volume_state{${sel}, state="held-data"}) > 0`, forText,
      'Devices hold data and are not offered.',
      'Pod {{ $labels.namespace }}/{{ $labels.pod }} found {{ $value }} devices of class {{ $labels.storageclass }} carrying a partition table or filesystem; they are neither wiped nor provisioned until someone wipes them or the spec opts in to wiping.'),
    alert('LocalVolumeProvisionerConfigInvalid', 'warning',
      `local_volume_provisioner_config_last_reload_successful{${sel}} == 0`, '5m',
      'The provisioner configuration does not load.',
      'Pod {{ $labels.namespace }}/{{ $labels.pod }} rejects its current configuration and keeps using the last good one. Its log names the bad key.'),
  ];
  const expected = Object.entries(r.directory?.expectedVolumesPerNode ?? {});
  if (expected.length > 0) {
    rules.push(alert('LocalVolumeProvisionerNodeWithoutVolumes', 'warning',
      expected.map(([cls, n]) => `local_volume_provisioner_storageclass_volumes{${sel}, storageclass="${cls}"} < ${n}`).join(' or '), forText,
      'A node has fewer local volumes than its class expects.',
      'Pod {{ $labels.namespace }}/{{ $labels.pod }} offers only {{ $value }} volumes of class {{ $labels.storageclass }}. Check that the disks are mounted under the class directory (`local-volume-provisioner plan` on the node says why each entry is rejected).'));
  }
  return [{ name: 'local-volume-provisioner', rules }];
}
