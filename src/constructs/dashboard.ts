/**
 * The Grafana dashboard, as the JSON the Grafana sidecar loads from a ConfigMap
 * labelled `grafana_dashboard: "1"`. Every panel is one PromQL query over the
 * provisioner's own metrics, filtered by the `$namespace` variable.
 */

export interface DashboardPanel {
  readonly title: string;
  readonly expr: string;
  readonly legend: string;
  readonly unit: string;
  readonly description: string;
}

const NS = 'namespace="$namespace"';

/** The panels, in reading order: what is offered, what is recycled, how the agent fares. */
export const DASHBOARD_PANELS: DashboardPanel[] = [
  {
    title: 'Volumes by state',
    expr: `sum by (state) (local_volume_provisioner_volumes{${NS}})`,
    legend: '{{state}}',
    unit: 'short',
    description: 'Every local volume of every node, by its one current state.',
  },
  {
    title: 'Volumes by class and node',
    expr: `sum by (storageclass, pod) (local_volume_provisioner_volumes{${NS}})`,
    legend: '{{storageclass}} {{pod}}',
    unit: 'short',
    description: 'How many volumes each agent offers per StorageClass.',
  },
  {
    title: 'Capacity by volume mode',
    expr: `sum by (mode) (local_volume_provisioner_persistentvolume_capacity_bytes{${NS}})`,
    legend: '{{mode}}',
    unit: 'bytes',
    description: 'Total capacity of the local PVs of all nodes.',
  },
  {
    title: 'PVs created',
    expr: `sum by (mode) (rate(local_volume_provisioner_persistentvolume_discovery_total{${NS}}[$__rate_interval]))`,
    legend: '{{mode}}',
    unit: 'ops',
    description: 'PersistentVolumes created by discovery per second.',
  },
  {
    title: 'Cleanups and failures',
    expr: `sum by (type) (rate(local_volume_provisioner_persistentvolume_delete_total{${NS}}[$__rate_interval]))`
      + ` or label_replace(sum by (type) (rate(local_volume_provisioner_persistentvolume_delete_failed_total{${NS}}[$__rate_interval])), "type", "$1 failed", "type", "(.*)")`,
    legend: '{{type}}',
    unit: 'ops',
    description: 'Released volumes cleaned and deleted per second, and failed attempts.',
  },
  {
    title: 'Cleanup duration (p95)',
    expr: `histogram_quantile(0.95, sum by (le, mode, type) (rate(local_volume_provisioner_persistentvolume_delete_duration_seconds_bucket{${NS}}[$__rate_interval])))`,
    legend: '{{mode}} {{type}}',
    unit: 's',
    description: 'From the start of a cleanup to the PV being deleted.',
  },
  {
    title: 'Cleanup throughput',
    expr: `sum by (mode) (rate(local_volume_provisioner_cleanup_bytes_total{${NS}}[$__rate_interval]))`,
    legend: '{{mode}}',
    unit: 'Bps',
    description: 'Bytes wiped or removed by cleanups per second.',
  },
  {
    title: 'Cleanups running',
    expr: `sum by (pod) (local_volume_provisioner_proctable_running{${NS}})`,
    legend: '{{pod}}',
    unit: 'short',
    description: 'Cleanups in the process table of each agent.',
  },
  {
    title: 'Devices (device dialect)',
    expr: `sum by (node) (local_pv_provisioner_available_devices{${NS}})`
      + ` or label_replace(sum by (node) (local_pv_provisioner_error_devices{${NS}}), "node", "$1 (error)", "node", "(.*)")`,
    legend: '{{node}}',
    unit: 'short',
    description: 'Devices offered as PVs, and devices in error, per node.',
  },
  {
    title: 'API requests',
    expr: `sum by (method) (rate(local_volume_provisioner_apiserver_requests_total{${NS}}[$__rate_interval]))`,
    legend: '{{method}}',
    unit: 'reqps',
    description: 'Requests to the API server per second, by verb.',
  },
  {
    title: 'API request failures',
    expr: `sum by (method) (rate(local_volume_provisioner_apiserver_requests_failed_total{${NS}}[$__rate_interval]))`,
    legend: '{{method}}',
    unit: 'reqps',
    description: 'Failed requests to the API server per second, by verb.',
  },
  {
    title: 'API latency (p99)',
    expr: `histogram_quantile(0.99, sum by (le, method) (rate(local_volume_provisioner_apiserver_requests_duration_seconds_bucket{${NS}}[$__rate_interval])))`,
    legend: '{{method}}',
    unit: 's',
    description: 'API request latency by verb.',
  },
  {
    title: 'Configuration loads',
    expr: `sum by (result) (increase(local_volume_provisioner_config_reloads_total{${NS}}[$__rate_interval]))`,
    legend: '{{result}}',
    unit: 'short',
    description: 'Configuration loads by result; a failed load keeps the last good configuration.',
  },
  {
    title: 'Agent memory',
    expr: `max by (pod) (process_resident_memory_bytes{${NS}, container=~"provisioner|node-cleanup"})`,
    legend: '{{pod}}',
    unit: 'bytes',
    description: 'Resident memory of each agent process.',
  },
];

/** The dashboard JSON (Grafana schema 39), for namespace `defaultNamespace` by default. */
export function dashboardJson(defaultNamespace: string): Record<string, unknown> {
  const width = 12;
  const height = 8;
  return {
    uid: 'local-volume-provisioner',
    title: 'Local volume provisioner',
    tags: ['storage', 'local-volume-provisioner'],
    timezone: 'browser',
    schemaVersion: 39,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    templating: {
      list: [
        { name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Data source' },
        {
          name: 'namespace',
          type: 'query',
          label: 'Namespace',
          datasource: { type: 'prometheus', uid: '${datasource}' },
          query: 'label_values(local_volume_provisioner_build_info, namespace)',
          current: { text: defaultNamespace, value: defaultNamespace },
          refresh: 2,
        },
      ],
    },
    panels: DASHBOARD_PANELS.map((p, i) => ({
      id: i + 1,
      type: 'timeseries',
      title: p.title,
      description: p.description,
      datasource: { type: 'prometheus', uid: '${datasource}' },
      gridPos: { x: (i % 2) * width, y: Math.floor(i / 2) * height, w: width, h: height },
      fieldConfig: { defaults: { unit: p.unit }, overrides: [] },
      targets: [{ refId: 'A', expr: p.expr, legendFormat: p.legend }],
    })),
  };
}
