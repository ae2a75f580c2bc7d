import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEFAULTS, FULL } from './stacks';
import { Manifest, one, synth } from './support';
import { LocalVolumeProvisionerProps, RelabelAction } from '../../src/constructs';

/**
 * The monitoring objects, checked by Prometheus' own `promtool`: the rules load, each
 * alert fires on the series that mean trouble (with its annotations rendered), stays
 * silent on healthy ones, and every dashboard query parses.
 */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lvp-promtool-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs promtool; returns its output, or throws with it. */
function promtool(...args: string[]): string {
  try {
    return execFileSync('promtool', args, { cwd: dir, encoding: 'utf8', stdio: 'pipe' });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
  }
}

describe('the metrics Service and ServiceMonitor', () => {
  const manifests = synth({ ...DEFAULTS, devices: FULL.devices, nodeCleanup: {}, serviceMonitor: {} });
  const service = one(manifests, 'Service');
  const monitor = one(manifests, 'ServiceMonitor');

  test('the headless Service selects the pods of both agents and of node cleanup', () => {
    expect(service.spec.clusterIP).toBe('None');
    const templates = [...manifests.filter((m) => m.kind === 'DaemonSet' || m.kind === 'Deployment')].map((m) => m.spec.template.metadata.labels);
    expect(templates).toHaveLength(3);
    for (const labels of templates) expect(labels).toMatchObject(service.spec.selector);
  });

  test('the ServiceMonitor selects the Service by its labels and scrapes its named port', () => {
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.endpoints).toEqual([{ port: service.spec.ports[0].name, path: '/metrics', interval: '10s' }]);
  });

  test('looks in the provisioner namespace by default', () => {
    expect(monitor.metadata.namespace).toBe('local-volume-provisioner');
    expect(monitor.spec.namespaceSelector).toEqual({ matchNames: ['local-volume-provisioner'] });
  });

  test('carries the labels, interval, timeout, relabelings and jobLabel given', () => {
    const full = one(synth(FULL), 'ServiceMonitor');
    expect(full.metadata).toMatchObject({ namespace: 'monitoring', labels: { release: 'kube-prometheus-stack' } });
    expect(full.spec.endpoints[0]).toMatchObject({
      interval: '15s',
      scrapeTimeout: '10s',
      relabelings: [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: 'instance', action: RelabelAction.REPLACE }],
      metricRelabelings: [{ sourceLabels: ['__name__'], regex: 'nodejs_.*', action: RelabelAction.DROP }],
    });
    expect(full.spec.jobLabel).toBe('app.kubernetes.io/name');
    expect(full.spec.namespaceSelector).toEqual({ matchNames: ['storage'] });
  });

  test('are not synthesized unless asked for, except the Service', () => {
    const kinds = synth(DEFAULTS).map((m) => m.kind);
    expect(kinds).toContain('Service');
    expect(kinds).not.toContain('ServiceMonitor');
    expect(kinds).not.toContain('PrometheusRule');
    expect(synth({ ...DEFAULTS, metricsService: false }).map((m) => m.kind)).not.toContain('Service');
  });
});

describe('the PrometheusRule', () => {
  const props: LocalVolumeProvisionerProps = {
    name: 'lvp',
    namespace: 'storage',
    storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks', expectedVolumesPerNode: 2 }],
    devices: FULL.devices,
    prometheusRule: { alertLabels: { team: 'storage' }, runbookBaseUrl: 'https://runbooks.example.com/lvp' },
  };
  const rule = one(synth(props), 'PrometheusRule');
  const ALERTS = [
    'LocalVolumeProvisionerDown',
    'LocalVolumeProvisionerNotReady',
    'LocalVolumeProvisionerCleanupFailing',
    'LocalVolumeProvisionerVolumeInError',
    'LocalVolumeProvisionerVolumeMissing',
    'LocalVolumeProvisionerDeviceErrors',
    'LocalVolumeProvisionerDeviceHoldsData',
    'LocalVolumeProvisionerVolumeHeldDirty',
    'LocalVolumeProvisionerRecordUnusable',
    'LocalVolumeProvisionerRecordNotDurable',
    'LocalVolumeProvisionerVolumeRebound',
    'LocalVolumeProvisionerConfigRejected',
    'LocalVolumeProvisionerClassSkipped',
    'LocalVolumeProvisionerPoolVolumeAlmostFull',
    'LocalVolumeProvisionerPoolFull',
    'LocalVolumeProvisionerPoolUnusable',
    'LocalVolumeProvisionerThinPoolFilling',
    'LocalVolumeProvisionerPoolLimitEscaped',
    'LocalVolumeProvisionerPoolBlockVolumesRefused',
    'LocalVolumeProvisionerPoolVolumeFailing',
    'LocalVolumeProvisionerClaimGuardInactive',
    'LocalVolumeProvisionerNodeWithoutVolumes',
  ];

  function writeRules(): string {
    writeFileSync(join(dir, 'rules.yml'), stringify(rule.spec));
    return 'rules.yml';
  }

  test('has the alerts docs/operations.md names, under the same names', () => {
    expect(rule.spec.groups[0].rules.map((r: Manifest) => r.alert)).toEqual(ALERTS);
    const operations = readFileSync(join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
    for (const name of ALERTS) expect([name, operations.includes(`\`${name}\``)]).toEqual([name, true]);
  });

  test('leaves out the claim guard alert when the construct installs no guard (claimGuard: false)', () => {
    const rules = one(synth({ ...props, claimGuard: false }), 'PrometheusRule').spec.groups[0].rules;
    expect(rules.map((r: Manifest) => r.alert)).not.toContain('LocalVolumeProvisionerClaimGuardInactive');
  });

  test('leaves out the node-without-volumes alert when no class expects volumes', () => {
    const rules = one(synth({ ...DEFAULTS, prometheusRule: {} }), 'PrometheusRule').spec.groups[0].rules;
    expect(rules.map((r: Manifest) => r.alert)).not.toContain('LocalVolumeProvisionerNodeWithoutVolumes');
  });

  test('loads in promtool', () => {
    expect(promtool('check', 'rules', writeRules())).toMatch(new RegExp(`SUCCESS: ${ALERTS.length} rules found`));
  });

  test('each alert fires on trouble and stays silent on healthy series (promtool test rules)', () => {
    const sel = 'namespace="storage", service="lvp"';
    const common = { severity: 'warning', team: 'storage', namespace: 'storage' };
    const target = { ...common, service: 'lvp' };
    const annotations = (name: string, summary: string, description: string) =>
      ({ summary, description, runbook_url: `https://runbooks.example.com/lvp#${name.toLowerCase()}` });
    const volumeA = 'persistentvolume="local-pv-1", path="/mnt/fast-disks/a", storageclass="fast-disks"';
    const volumeLabels = { persistentvolume: 'local-pv-1', path: '/mnt/fast-disks/a', storageclass: 'fast-disks' };
    const test = {
      rule_files: [writeRules()],
      evaluation_interval: '1m',
      tests: [{
        interval: '1m',
        input_series: [
          { series: `up{${sel}, pod="agent-a"}`, values: '0x50' },
          { series: `up{${sel}, pod="agent-b"}`, values: '1x50' },
          { series: 'kube_daemonset_status_number_ready{namespace="storage", daemonset="lvp"}', values: '2x50' },
          { series: 'kube_daemonset_status_desired_number_scheduled{namespace="storage", daemonset="lvp"}', values: '3x50' },
          { series: 'kube_daemonset_status_number_ready{namespace="storage", daemonset="lvp-devices"}', values: '3x50' },
          { series: 'kube_daemonset_status_desired_number_scheduled{namespace="storage", daemonset="lvp-devices"}', values: '3x50' },
          { series: 'kube_daemonset_status_number_ready{namespace="storage", daemonset="someone-else"}', values: '0x50' },
          { series: 'kube_daemonset_status_desired_number_scheduled{namespace="storage", daemonset="someone-else"}', values: '3x50' },
          { series: `local_volume_provisioner_persistentvolume_delete_failed_total{${sel}, pod="agent-a", mode="Block", type="process"}`, values: '0+1x50' },
          { series: `local_volume_provisioner_persistentvolume_delete_failed_total{${sel}, pod="agent-b", mode="Block", type="process"}`, values: '3x50' },
          { series: `local_volume_provisioner_volume_state{${sel}, pod="agent-a", state="error", ${volumeA}}`, values: '1x50' },
          { series: `local_volume_provisioner_volume_state{${sel}, pod="agent-a", state="available", ${volumeA}}`, values: '0x50' },
          { series: `local_volume_provisioner_volume_state{${sel}, pod="agent-b", state="missing", persistentvolume="local-pv-2", path="/mnt/fast-disks/b", storageclass="fast-disks"}`, values: '1x50' },
          { series: `local_volume_provisioner_volume_state{${sel}, pod="agent-b", state="available", persistentvolume="local-pv-3", path="/mnt/fast-disks/c", storageclass="fast-disks"}`, values: '1x50' },
          { series: `local_volume_provisioner_volume_state{${sel}, pod="agent-c", state="held-data", persistentvolume="", path="/dev/disk/by-id/wwn-1", storageclass="local-hdd"}`, values: '1x50' },
          { series: `local_volume_provisioner_volume_state{${sel}, pod="agent-b", state="held-dirty", persistentvolume="", path="/mnt/fast-disks/d", storageclass="fast-disks"}`, values: '1x50' },
          { series: `local_volume_provisioner_volume_record_usable{${sel}, pod="agent-c"}`, values: '0x50' },
          { series: `local_volume_provisioner_volume_record_usable{${sel}, pod="agent-a"}`, values: '1x50' },
          { series: `local_volume_provisioner_volume_record_durable{${sel}, pod="agent-d"}`, values: '0x50' },
          { series: `local_volume_provisioner_volume_record_durable{${sel}, pod="agent-a"}`, values: '1x50' },
          { series: `local_pv_provisioner_error_devices{${sel}, pod="agent-c", node="node-c"}`, values: '2x50' },
          { series: `local_pv_provisioner_error_devices{${sel}, pod="agent-d", node="node-d"}`, values: '0x50' },
          { series: `local_volume_provisioner_config_last_reload_successful{${sel}, pod="agent-a"}`, values: '0x50' },
          { series: `local_volume_provisioner_config_last_reload_successful{${sel}, pod="agent-b"}`, values: '1x50' },
          { series: `local_volume_provisioner_config_skipped_storageclass{${sel}, pod="agent-b", storageclass="slow-disks"}`, values: '1x50' },
          { series: `local_volume_provisioner_storageclass_volumes{${sel}, pod="agent-a", storageclass="fast-disks"}`, values: '1x50' },
          { series: `local_volume_provisioner_pool_volume_used_bytes{${sel}, pod="agent-a", persistentvolume="pvc-1", storageclass="local-pool"}`, values: '950x50' },
          { series: `local_volume_provisioner_pool_volume_limit_bytes{${sel}, pod="agent-a", persistentvolume="pvc-1", storageclass="local-pool"}`, values: '1000x50' },
          { series: `local_volume_provisioner_pool_volume_used_bytes{${sel}, pod="agent-a", persistentvolume="pvc-2", storageclass="local-pool"}`, values: '500x50' },
          { series: `local_volume_provisioner_pool_volume_limit_bytes{${sel}, pod="agent-a", persistentvolume="pvc-2", storageclass="local-pool"}`, values: '1000x50' },
          { series: `local_volume_provisioner_pool_available_bytes{${sel}, pod="agent-b", storageclass="local-pool"}`, values: '0x50' },
          { series: `local_volume_provisioner_pool_available_bytes{${sel}, pod="agent-a", storageclass="local-pool"}`, values: '10737418240x50' },
          { series: `local_volume_provisioner_storageclass_volumes{${sel}, pod="agent-b", storageclass="fast-disks"}`, values: '2x50' },
          { series: `local_volume_provisioner_volume_rebound{${sel}, pod="agent-c", persistentvolume="local-pv-9", storageclass="fast-disks", claim="team-b/data-0"}`, values: '1x50' },
          { series: `local_volume_provisioner_claim_guard_active{${sel}, pod="agent-c"}`, values: '0x50' },
          { series: `local_volume_provisioner_claim_guard_active{${sel}, pod="agent-a"}`, values: '1x50' },
          { series: `local_volume_provisioner_pool_usable{${sel}, pod="agent-b", storageclass="local-pool"}`, values: '0x50' },
          { series: `local_volume_provisioner_pool_usable{${sel}, pod="agent-a", storageclass="local-pool"}`, values: '1x50' },
          // A thin pool whose metadata fills (agent-b), one with room (agent-a).
          { series: `local_volume_provisioner_pool_data_fill_ratio{${sel}, pod="agent-b", storageclass="local-thin"}`, values: '0.3x50' },
          { series: `local_volume_provisioner_pool_metadata_fill_ratio{${sel}, pod="agent-b", storageclass="local-thin"}`, values: '0.85x50' },
          { series: `local_volume_provisioner_pool_data_fill_ratio{${sel}, pod="agent-a", storageclass="local-thin"}`, values: '0.5x50' },
          { series: `local_volume_provisioner_pool_metadata_fill_ratio{${sel}, pod="agent-a", storageclass="local-thin"}`, values: '0.1x50' },
          { series: `local_volume_provisioner_pool_limit_escapes_total{${sel}, pod="agent-a", storageclass="local-pool"}`, values: '0x20 1x30' },
          // A node whose LVM reads loop devices (agent-b), one confined (agent-a).
          { series: `local_volume_provisioner_pool_block_volumes_refused{${sel}, pod="agent-b", storageclass="local-thin"}`, values: '1x50' },
          { series: `local_volume_provisioner_pool_block_volumes_refused{${sel}, pod="agent-a", storageclass="local-thin"}`, values: '0x50' },
          { series: `local_volume_provisioner_pool_limit_escapes_total{${sel}, pod="agent-b", storageclass="local-pool"}`, values: '2x50' },
          { series: `local_volume_provisioner_pool_operation_failures_total{${sel}, pod="agent-a", storageclass="local-pool", operation="destroy"}`, values: '0+1x50' },
          { series: `local_volume_provisioner_pool_operation_failures_total{${sel}, pod="agent-a", storageclass="local-pool", operation="create"}`, values: '4x50' },
        ],
        alert_rule_test: [
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerDown',
            exp_alerts: [{
              exp_labels: { ...target, severity: 'critical', pod: 'agent-a' },
              exp_annotations: annotations('LocalVolumeProvisionerDown', 'A local volume provisioner agent cannot be scraped.',
                'Pod storage/agent-a has not answered Prometheus for 5 minutes: no discovery and no cleanup on its node.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerNotReady',
            exp_alerts: [{
              exp_labels: { ...common, daemonset: 'lvp' },
              exp_annotations: annotations('LocalVolumeProvisionerNotReady', 'Local volume provisioner agents are not ready.',
                'DaemonSet storage/lvp has agents that never finished a first pass (from kube-state-metrics).'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerCleanupFailing',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-a', mode: 'Block', type: 'process' },
              exp_annotations: annotations('LocalVolumeProvisionerCleanupFailing', 'Released local volumes fail to be cleaned.',
                'Pod storage/agent-a failed 30 Block cleanups (process) in 30 minutes; those volumes stay Released and are not offered again. See the CleanupFailed Events on the PVs.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerVolumeInError',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-a', state: 'error', ...volumeLabels },
              exp_annotations: annotations('LocalVolumeProvisionerVolumeInError', 'A local volume is in error.',
                'PV "local-pv-1" at /mnt/fast-disks/a (StorageClass fast-disks) on Pod storage/agent-a can be neither used nor cleaned; its Events say why.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerVolumeMissing',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-b', state: 'missing', persistentvolume: 'local-pv-2', path: '/mnt/fast-disks/b', storageclass: 'fast-disks' },
              exp_annotations: annotations('LocalVolumeProvisionerVolumeMissing', 'The disk of a local PV is gone.',
                'PV "local-pv-2" at /mnt/fast-disks/b (StorageClass fast-disks) on Pod storage/agent-b: the disk was removed or unmounted.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerDeviceErrors',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-c', node: 'node-c' },
              exp_annotations: annotations('LocalVolumeProvisionerDeviceErrors', 'Devices cannot be offered.',
                'Node node-c has 2 devices that cannot be opened, wiped or offered (device dialect); see the Events on the Node.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerDeviceHoldsData',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-c', state: 'held-data', path: '/dev/disk/by-id/wwn-1', storageclass: 'local-hdd' },
              exp_annotations: annotations('LocalVolumeProvisionerDeviceHoldsData', 'A device holds data and is not offered.',
                'Device /dev/disk/by-id/wwn-1 (StorageClass local-hdd) on Pod storage/agent-c carries a partition table or filesystem, so it is neither wiped nor offered; clear or retire it, or opt the spec in to wiping.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerVolumeHeldDirty',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-b', state: 'held-dirty', path: '/mnt/fast-disks/d', storageclass: 'fast-disks' },
              exp_annotations: annotations('LocalVolumeProvisionerVolumeHeldDirty', 'A used local volume is held with its data.',
                'Volume /mnt/fast-disks/d (StorageClass fast-disks) on Pod storage/agent-b was used by a tenant and has no PV any more; its reclaim policy (Retain) or a class '
                + 'no longer configured keeps its data, so it is never offered until an administrator runs "local-volume-provisioner volumes reclaim /mnt/fast-disks/d" '
                + '(clean, then offer) or "volumes accept /mnt/fast-disks/d" in the agent\'s pod.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerRecordUnusable',
            exp_alerts: [{
              exp_labels: { ...target, severity: 'critical', pod: 'agent-c' },
              exp_annotations: annotations('LocalVolumeProvisionerRecordUnusable', 'A node\'s volume record cannot be used.',
                'Pod storage/agent-c cannot read its volume record (a file damaged, its directory gone): nothing is offered or cleaned on its node until it is repaired. '
                + 'The VolumeRecordUnusable Event on the Node names the file.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerRecordNotDurable',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-d' },
              exp_annotations: annotations('LocalVolumeProvisionerRecordNotDurable', 'A node\'s volume record is lost with its pod.',
                'Pod storage/agent-d keeps its volume record in the container, not in a host directory: it is lost when the pod is replaced. '
                + 'Mount a hostPath at --state-dir (the construct does).'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerVolumeRebound',
            exp_alerts: [{
              exp_labels: { ...target, severity: 'critical', pod: 'agent-c', persistentvolume: 'local-pv-9', storageclass: 'fast-disks', claim: 'team-b/data-0' },
              exp_annotations: annotations('LocalVolumeProvisionerVolumeRebound', 'A tenant was given another tenant\'s data.',
                'PV "local-pv-9" (StorageClass fast-disks) on Pod storage/agent-c is bound to claim team-b/data-0, but its volume still holds the data of the claim that '
                + 'used it before: its claimRef was cleared or changed while no agent ran and the claim guard was not in force. The VolumeRebound Event on the PV names both claims.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerClaimGuardInactive',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-c' },
              exp_annotations: annotations('LocalVolumeProvisionerClaimGuardInactive', 'The claim guard is not in force.',
                'Pod storage/agent-c finds the claim guard (an admission policy) missing, not Deny, or unreadable: while an agent is down, a Released PV whose claimRef an '
                + 'administrator clears can be bound by another claim with its last tenant\'s data. The ClaimGuardInactive Event on its Node says why.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerConfigRejected',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-a' },
              exp_annotations: annotations('LocalVolumeProvisionerConfigRejected', 'The provisioner configuration was rejected.',
                'Pod storage/agent-a rejected the last configuration change and still uses the previous one; the ConfigInvalid Event on its Node names the bad key.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerClassSkipped',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-b', storageclass: 'slow-disks' },
              exp_annotations: annotations('LocalVolumeProvisionerClassSkipped', 'A StorageClass of the configuration is not run.',
                'Pod storage/agent-b runs without StorageClass slow-disks, whose configuration has problems of its own; the StorageClassSkipped Event on its Node names them.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerPoolVolumeAlmostFull',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-a', persistentvolume: 'pvc-1', storageclass: 'local-pool' },
              exp_annotations: annotations('LocalVolumeProvisionerPoolVolumeAlmostFull', 'A pool volume is almost full.',
                'Pool volume pvc-1 (StorageClass local-pool) on Pod storage/agent-a holds 95% of its size; writes beyond it fail with EDQUOT. Grow its claim (the class allows expansion).'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerPoolFull',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-b', storageclass: 'local-pool' },
              exp_annotations: annotations('LocalVolumeProvisionerPoolFull', 'A node\'s pool can give no new volume.',
                'Pod storage/agent-b has no space left in the pool of StorageClass local-pool: the scheduler puts no new claim of the class on its node, and its volumes cannot grow.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerPoolUnusable',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-b', storageclass: 'local-pool' },
              exp_annotations: annotations('LocalVolumeProvisionerPoolUnusable', 'A node\'s pool cannot give volumes whose limits hold.',
                'Pod storage/agent-b cannot use the pool of StorageClass local-pool (missing, not the filesystem it needs, quotas off or in full mode, its storage claimed '
                + 'by another class): no claim of the class is placed on its node. The PoolUnusable Event on the Node says why.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerThinPoolFilling',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-b', storageclass: 'local-thin' },
              exp_annotations: annotations('LocalVolumeProvisionerThinPoolFilling', 'A node\'s thin pool is filling.',
                'Pod storage/agent-b\'s thin pool of StorageClass local-thin is 85% full (data or metadata): full, every volume in it fails its writes. '
                + 'Grow it (lvextend, --poolmetadatasize for metadata) or lower the class\'s overcommit; at 90% metadata no volume is made.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerPoolLimitEscaped',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-a', storageclass: 'local-pool' },
              exp_annotations: annotations('LocalVolumeProvisionerPoolLimitEscaped', 'A tenant got around its pool volume\'s limit.',
                'Pod storage/agent-a found 1 way(s) around a volume\'s limit in StorageClass local-pool in the last hour (on btrfs, a subvolume made inside a volume '
                + 'naming another quota group; on XFS and ext4, files given another project from the host\'s user namespace) and undid them; '
                + 'the PoolVolumeLimitEscaped Event on the PV names the volume and what it did.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerPoolBlockVolumesRefused',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-b', storageclass: 'local-thin' },
              exp_annotations: annotations('LocalVolumeProvisionerPoolBlockVolumesRefused', 'A node\'s LVM reads what tenants write: no Block volume is given there.',
                'Pod storage/agent-b gives no Block volume of StorageClass local-thin: the node\'s LVM lists physical volumes on loop devices, as kubelet maps Block '
                + 'volumes, so a tenant\'s volume group would be activated by the node. Confine its LVM to its own disks (a devices file, or a global_filter); '
                + 'the PoolBlockVolumesRefused Event on the Node says how.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerPoolVolumeFailing',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-a', storageclass: 'local-pool', operation: 'destroy' },
              exp_annotations: annotations('LocalVolumeProvisionerPoolVolumeFailing', 'Pool volumes fail to be made, resized or destroyed.',
                'Pod storage/agent-a failed 30 destroy operation(s) on pool volumes of StorageClass local-pool in 30 minutes; each is tried again every pass. '
                + 'The PoolVolumeFailed Events on the claims and PVs say why.'),
            }],
          },
          {
            eval_time: '40m',
            alertname: 'LocalVolumeProvisionerNodeWithoutVolumes',
            exp_alerts: [{
              exp_labels: { ...target, pod: 'agent-a', storageclass: 'fast-disks' },
              exp_annotations: annotations('LocalVolumeProvisionerNodeWithoutVolumes', 'A node has fewer local volumes than its class expects.',
                'Pod storage/agent-a offers only 1 volumes of StorageClass fast-disks: a disk not mounted under the class directory, mount propagation missing, or the class misconfigured (`local-volume-provisioner plan` on the node says why each entry is rejected).'),
            }],
          },
          // `for` holds them back at first.
          { eval_time: '3m', alertname: 'LocalVolumeProvisionerDown', exp_alerts: [] },
          { eval_time: '3m', alertname: 'LocalVolumeProvisionerVolumeInError', exp_alerts: [] },
          { eval_time: '3m', alertname: 'LocalVolumeProvisionerClaimGuardInactive', exp_alerts: [] },
        ],
      }],
    };
    writeFileSync(join(dir, 'rules.test.yml'), stringify(test));
    expect(promtool('test', 'rules', 'rules.test.yml')).toMatch(/SUCCESS/);
  });

  test('promtool test rules fails when an alert does not fire as expected, so the test above can fail', () => {
    writeFileSync(join(dir, 'never.test.yml'), stringify({
      rule_files: [writeRules()],
      tests: [{
        interval: '1m',
        input_series: [{ series: 'up{namespace="storage", service="lvp", pod="agent-a"}', values: '1x20' }],
        alert_rule_test: [{ eval_time: '10m', alertname: 'LocalVolumeProvisionerDown', exp_alerts: [{ exp_labels: { pod: 'agent-a' } }] }],
      }],
    }));
    expect(() => promtool('test', 'rules', 'never.test.yml')).toThrow(/FAILED/);
  });
});

describe('the Grafana dashboard ConfigMap', () => {
  const cm = one(synth({ ...FULL, grafanaDashboard: { folder: 'Storage' } }), 'ConfigMap', 'lvp-dashboard');
  const dashboard = JSON.parse(cm.data['local-volume-provisioner.json']);

  test('is labelled for the Grafana sidecar and names its folder', () => {
    expect(cm.metadata.labels.grafana_dashboard).toBe('1');
    expect(cm.metadata.annotations).toEqual({ grafana_folder: 'Storage' });
    expect(cm.metadata.namespace).toBe('storage');
  });

  test('defaults its namespace variable to the provisioner namespace', () => {
    const ns = dashboard.templating.list.find((v: Manifest) => v.name === 'namespace');
    expect(ns.current).toEqual({ text: 'storage', value: 'storage' });
  });

  test('has panels with unique ids that do not overlap', () => {
    const ids = dashboard.panels.map((p: Manifest) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = dashboard.panels.map((p: Manifest) => `${p.gridPos.x},${p.gridPos.y}`);
    expect(new Set(cells).size).toBe(cells.length);
  });

  test('every panel query is valid PromQL (promtool)', () => {
    const rules = dashboard.panels.map((p: Manifest, i: number) => ({
      record: `dashboard:panel_${i + 1}`,
      expr: p.targets[0].expr.replaceAll('$__rate_interval', '5m').replaceAll('$namespace', 'storage'),
    }));
    writeFileSync(join(dir, 'dashboard.yml'), stringify({ groups: [{ name: 'dashboard', rules }] }));
    expect(promtool('check', 'rules', 'dashboard.yml')).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
  });
});
