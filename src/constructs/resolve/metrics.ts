/** The metrics part: Service, ServiceMonitor, PrometheusRule, Grafana dashboard. */
import { Duration } from 'cdk8s';
import { compileRe2 } from '../../config';
import { qualifiedNameProblem } from '../../config/kube-names';
import { checkLabels, durationMs, PropIssues } from '../prop-issues';
import { GrafanaDashboardOptions, LocalVolumeProvisionerProps, NamespaceSelector, PrometheusRuleOptions, RelabelConfig } from '../props';
import { optionalDuration, resolveNamespace } from './values';

export interface ResolvedMetrics {
  readonly service: boolean;
  readonly serviceName: string;
  readonly serviceMonitor?: ResolvedServiceMonitor;
  readonly prometheusRule?: ResolvedPrometheusRule;
  readonly grafanaDashboard?: ResolvedGrafanaDashboard;
}

export interface ResolvedServiceMonitor {
  readonly namespace: string;
  readonly labels: Record<string, string>;
  readonly intervalMs: number;
  readonly scrapeTimeoutMs?: number;
  readonly relabelings: RelabelConfig[];
  readonly metricRelabelings: RelabelConfig[];
  readonly namespaceSelector: NamespaceSelector;
  readonly jobLabel?: string;
}

export interface ResolvedPrometheusRule {
  readonly namespace: string;
  readonly labels: Record<string, string>;
  readonly alertLabels: Record<string, string>;
  readonly runbookBaseUrl?: string;
}

export interface ResolvedGrafanaDashboard {
  readonly namespace: string;
  readonly labels: Record<string, string>;
  readonly folder?: string;
}

/** The metrics Service, ServiceMonitor, PrometheusRule and Grafana dashboard. */
export function resolveMetrics(props: LocalVolumeProvisionerProps, name: string, namespace: string, issues: PropIssues): ResolvedMetrics {
  const service = props.metricsService ?? true;
  const sm = props.serviceMonitor;
  if (sm && !service) issues.add('serviceMonitor', 'needs the metrics Service; do not set metricsService to false');
  let serviceMonitor: ResolvedServiceMonitor | undefined;
  if (sm) {
    const intervalMs = optionalDuration(issues, 'serviceMonitor.interval', sm.interval, Duration.seconds(10), 1000);
    const scrapeTimeoutMs = sm.scrapeTimeout && durationMs(issues, 'serviceMonitor.scrapeTimeout', sm.scrapeTimeout, 1000);
    if (scrapeTimeoutMs !== undefined && scrapeTimeoutMs > intervalMs) {
      issues.add('serviceMonitor.scrapeTimeout', `must not be longer than serviceMonitor.interval (${scrapeTimeoutMs} ms > ${intervalMs} ms)`);
    }
    [...(sm.relabelings ?? []).map((r, i) => [`serviceMonitor.relabelings[${i}]`, r] as const),
      ...(sm.metricRelabelings ?? []).map((r, i) => [`serviceMonitor.metricRelabelings[${i}]`, r] as const)]
      .forEach(([at, r]) => checkRelabeling(at, r, issues));
    // The Helm chart's job label; '' leaves `job` to prometheus-operator (the Service name).
    const jobLabel = sm.jobLabel ?? 'app.kubernetes.io/name';
    if (jobLabel !== '') issues.check('serviceMonitor.jobLabel', qualifiedNameProblem(jobLabel));
    checkLabels(issues, 'serviceMonitor.labels', sm.labels);
    serviceMonitor = {
      namespace: resolveNamespace(issues, 'serviceMonitor.namespace', sm.namespace, namespace),
      labels: sm.labels ?? {},
      intervalMs,
      scrapeTimeoutMs,
      relabelings: sm.relabelings ?? [],
      metricRelabelings: sm.metricRelabelings ?? [],
      namespaceSelector: sm.namespaceSelector ?? { matchNames: [namespace] },
      jobLabel: jobLabel === '' ? undefined : jobLabel,
    };
  }
  return {
    service,
    serviceName: name,
    serviceMonitor,
    prometheusRule: props.prometheusRule && resolvePrometheusRule(props.prometheusRule, namespace, issues),
    grafanaDashboard: props.grafanaDashboard && resolveGrafanaDashboard(props.grafanaDashboard, namespace, issues),
  };
}

function resolvePrometheusRule(o: PrometheusRuleOptions, namespace: string, issues: PropIssues): ResolvedPrometheusRule {
  checkLabels(issues, 'prometheusRule.labels', o.labels);
  checkLabels(issues, 'prometheusRule.alertLabels', o.alertLabels);
  return {
    namespace: resolveNamespace(issues, 'prometheusRule.namespace', o.namespace, namespace),
    labels: o.labels ?? {},
    alertLabels: o.alertLabels ?? {},
    runbookBaseUrl: o.runbookBaseUrl,
  };
}

function resolveGrafanaDashboard(o: GrafanaDashboardOptions, namespace: string, issues: PropIssues): ResolvedGrafanaDashboard {
  checkLabels(issues, 'grafanaDashboard.labels', o.labels);
  return {
    namespace: resolveNamespace(issues, 'grafanaDashboard.namespace', o.namespace, namespace),
    labels: { ...o.labels, grafana_dashboard: '1' },
    folder: o.folder,
  };
}

function checkRelabeling(at: string, r: RelabelConfig, issues: PropIssues): void {
  if (r.regex !== undefined) {
    try {
      // Prometheus reads it with Go's RE2, anchored.
      compileRe2(`^(?:${r.regex})$`);
    } catch (e) {
      issues.add(`${at}.regex`, `"${r.regex}" is not a valid regular expression (${(e as Error).message})`);
    }
  }
  (r.sourceLabels ?? []).forEach((l, i) => {
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(l)) issues.add(`${at}.sourceLabels[${i}]`, `"${l}" is not a Prometheus label name`);
  });
}
