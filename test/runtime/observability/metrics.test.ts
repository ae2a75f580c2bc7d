import { familyTypes, promtoolCheckMetrics, samplesOf } from './exposition';
import { capacityBreakdownLabel, ProvisionerMetrics, VOLUME_STATES } from '../../../src/runtime/observability/metrics';

const GiB = 1024 ** 3;

/** A registry with every family holding at least one sample, as a busy node would. */
function busyMetrics(): ProvisionerMetrics {
  const m = new ProvisionerMetrics({ version: '1.2.3' });
  m.recordPVCreated('Filesystem', 0.2);
  m.setCapacity({ Filesystem: 10 * GiB, Block: 750 * GiB });
  m.recordCleanup({ mode: 'Block', type: 'process', succeeded: true, capacityBytes: 750 * GiB, cleanupCommand: ['/scripts/shred.sh', '2'], seconds: 3600 });
  m.recordCleanup({ mode: 'Block', type: 'job', succeeded: false, capacityBytes: 750 * GiB, cleanupCommand: ['/scripts/shred.sh', '2'], seconds: 5 });
  m.addCleanupBytes('Block', 'process', 750 * GiB);
  m.setProcTableRunning(1);
  m.recordProcessCleanupEnded(true);
  m.recordProcessCleanupEnded(false);
  m.recordApiRequest('create', 'persistentvolumes', 0.01, false);
  m.recordApiRequest('delete', 'persistentvolumes', 0.5, true);
  m.setVolumeStates([
    { persistentVolume: 'local-pv-1', path: '/mnt/disks/a "quoted"', storageClass: 'fast', state: 'bound' },
    { persistentVolume: '', path: '/dev/sdb', storageClass: 'fast', state: 'held-data' },
  ], ['fast', 'slow']);
  m.setDevices('worker-1', { available: 4, error: 1, held: 2 });
  m.recordConfigReload(true, new Date(1_700_000_000_000));
  m.recordConfigReload(false);
  m.recordNodeCleanupPVDelete('Available', true);
  m.recordNodeCleanupPVDelete('Released', false);
  m.recordNodeCleanupPVCDelete(true);
  m.recordNodeCleanupPVCDelete(false);
  m.recordNodeCleanupPVCRecreateFailed();
  return m;
}

describe('ProvisionerMetrics', () => {
  test('defines every upstream metric with its exact name, type and labels', async () => {
    const text = await busyMetrics().exposition();
    const types = familyTypes(text);
    const expected: Array<[string, string, string[]]> = [
      ['local_volume_provisioner_persistentvolume_capacity_bytes', 'gauge', ['mode']],
      ['local_volume_provisioner_persistentvolume_discovery_total', 'counter', ['mode']],
      ['local_volume_provisioner_persistentvolume_discovery_duration_seconds', 'histogram', ['mode']],
      ['local_volume_provisioner_persistentvolume_delete_total', 'counter', ['mode', 'type']],
      ['local_volume_provisioner_persistentvolume_delete_failed_total', 'counter', ['mode', 'type']],
      ['local_volume_provisioner_persistentvolume_delete_duration_seconds', 'histogram', ['mode', 'type', 'capacity', 'cleanup_command']],
      ['local_volume_provisioner_apiserver_requests_total', 'counter', ['method']],
      ['local_volume_provisioner_apiserver_requests_failed_total', 'counter', ['method']],
      ['local_volume_provisioner_apiserver_requests_duration_seconds', 'histogram', ['method']],
      ['local_volume_provisioner_proctable_running', 'gauge', []],
      ['local_volume_provisioner_proctable_succeeded', 'gauge', []],
      ['local_volume_provisioner_proctable_failed', 'gauge', []],
      ['local_pv_provisioner_available_devices', 'gauge', ['node']],
      ['local_pv_provisioner_error_devices', 'gauge', ['node']],
      ['local_volume_node_cleanup_persistentvolume_delete_total', 'counter', ['phase']],
      ['local_volume_node_cleanup_persistentvolume_delete_failed_total', 'counter', ['phase']],
      ['local_volume_node_cleanup_persistentvolumeclaim_delete_total', 'counter', []],
      ['local_volume_node_cleanup_persistentvolumeclaim_delete_failed_total', 'counter', []],
      ['local_volume_node_cleanup_persistentvolumeclaim_recreate_failed_total', 'counter', []],
    ];
    for (const [name, type, labels] of expected) {
      expect([name, types.get(name)]).toEqual([name, type]);
      const sampleName = type === 'histogram' ? `${name}_count` : name;
      const [sample] = samplesOf(text, sampleName);
      expect([name, Object.keys(sample.labels).sort()]).toEqual([name, [...labels].sort()]);
    }
  });

  test('its exposition passes promtool check metrics', async () => {
    const result = promtoolCheckMetrics(await busyMetrics().exposition());
    expect(result.output).toBe('');
    expect(result.status).toBe(0);
  });

  test('includes the process metrics on its own registry', async () => {
    const text = await new ProvisionerMetrics({ version: 'x' }).exposition();
    const types = familyTypes(text);
    expect(types.get('process_cpu_seconds_total')).toBe('counter');
    expect(types.get('process_resident_memory_bytes')).toBe('gauge');
    expect(types.get('process_open_fds')).toBe('gauge');
    expect(types.get('nodejs_heap_size_used_bytes')).toBe('gauge');
    expect(samplesOf(text, 'process_resident_memory_bytes')[0].value).toBeGreaterThan(1024 * 1024);
    expect(samplesOf(text, 'process_start_time_seconds')[0].value).toBeCloseTo(Date.now() / 1000 - process.uptime(), -1);
  });

  test('leaves the process metrics out when asked', async () => {
    const types = familyTypes(await new ProvisionerMetrics({ version: 'x', processMetrics: false }).exposition());
    expect(types.has('process_resident_memory_bytes')).toBe(false);
  });

  test('two instances keep separate values', async () => {
    const a = new ProvisionerMetrics({ version: 'a' });
    const b = new ProvisionerMetrics({ version: 'b' });
    a.recordPVCreated('Block', 1);
    expect(samplesOf(await a.exposition(), 'local_volume_provisioner_persistentvolume_discovery_total')).toHaveLength(1);
    expect(samplesOf(await b.exposition(), 'local_volume_provisioner_persistentvolume_discovery_total')).toHaveLength(0);
  });

  test('build_info carries the version and the Node.js version', async () => {
    const [info] = samplesOf(await new ProvisionerMetrics({ version: '1.2.3' }).exposition(), 'local_volume_provisioner_build_info');
    expect(info).toEqual({ name: 'local_volume_provisioner_build_info', labels: { version: '1.2.3', node_version: process.version }, value: 1 });
  });

  test('capacity_bytes is the total given per mode and 0 for a mode with none', async () => {
    const m = new ProvisionerMetrics({ version: 'x' });
    m.setCapacity({ Block: 3 * GiB });
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_persistentvolume_capacity_bytes', { mode: 'Block' })[0].value).toBe(3 * GiB);
    expect(samplesOf(text, 'local_volume_provisioner_persistentvolume_capacity_bytes', { mode: 'Filesystem' })[0].value).toBe(0);
  });

  test('a successful cleanup counts a delete and observes its duration with the capacity and command labels', async () => {
    const m = new ProvisionerMetrics({ version: 'x' });
    m.recordCleanup({ mode: 'Block', type: 'job', succeeded: true, capacityBytes: 501 * GiB, cleanupCommand: ['/scripts/dd_zero.sh'], seconds: 120 });
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_persistentvolume_delete_total', { mode: 'Block', type: 'job' })[0].value).toBe(1);
    expect(samplesOf(text, 'local_volume_provisioner_persistentvolume_delete_failed_total')).toHaveLength(0);
    const [count] = samplesOf(text, 'local_volume_provisioner_persistentvolume_delete_duration_seconds_count');
    expect(count.labels).toEqual({ mode: 'Block', type: 'job', capacity: '1000G', cleanup_command: '/scripts/dd_zero.sh' });
    expect(count.value).toBe(1);
  });

  test('a failed cleanup counts only a failure', async () => {
    const m = new ProvisionerMetrics({ version: 'x' });
    m.recordCleanup({ mode: 'Filesystem', type: 'process', succeeded: false, capacityBytes: GiB, cleanupCommand: [], seconds: 1 });
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_persistentvolume_delete_failed_total', { mode: 'Filesystem', type: 'process' })[0].value).toBe(1);
    expect(samplesOf(text, 'local_volume_provisioner_persistentvolume_delete_total')).toHaveLength(0);
    expect(samplesOf(text, 'local_volume_provisioner_persistentvolume_delete_duration_seconds_count')).toHaveLength(0);
  });

  test('cleanup durations of hours fall in a finite bucket', async () => {
    const m = new ProvisionerMetrics({ version: 'x' });
    m.recordCleanup({ mode: 'Block', type: 'process', succeeded: true, capacityBytes: GiB, cleanupCommand: ['/scripts/shred.sh'], seconds: 3 * 3600 });
    const buckets = samplesOf(await m.exposition(), 'local_volume_provisioner_persistentvolume_delete_duration_seconds_bucket');
    expect(buckets.find((b) => b.labels.le === '14400')?.value).toBe(1);
    expect(buckets.find((b) => b.labels.le === '10')?.value).toBe(0);
  });

  test('a failed API request counts in both the total and the failures', async () => {
    const m = new ProvisionerMetrics({ version: 'x' });
    m.recordApiRequest('create', 'persistentvolumes', 0.1, true);
    m.recordApiRequest('create', 'persistentvolumes', 0.1, false);
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_apiserver_requests_total', { method: 'create' })[0].value).toBe(2);
    expect(samplesOf(text, 'local_volume_provisioner_apiserver_requests_failed_total', { method: 'create' })[0].value).toBe(1);
    expect(samplesOf(text, 'local_volume_provisioner_apiserver_requests_duration_seconds_count', { method: 'create' })[0].value).toBe(2);
  });

  test('upstream\'s apiserver_requests series count PV creates and deletes only, as its Go code did; every request counts in ours by verb and resource', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    m.recordApiRequest('create', 'persistentvolumes', 0.1, false);
    m.recordApiRequest('delete', 'persistentvolumes', 0.1, true);
    m.recordApiRequest('patch', 'persistentvolumes', 0.1, true);
    m.recordApiRequest('list', 'persistentvolumes', 0.1, false);
    m.recordApiRequest('create', 'events', 0.1, false);
    m.recordApiRequest('get', 'nodes', 0.1, false);
    const text = await m.exposition();
    const byLabels = (name: string) => samplesOf(text, name).map((x) => [x.labels, x.value]);
    expect(byLabels('local_volume_provisioner_apiserver_requests_total')).toEqual([[{ method: 'create' }, 1], [{ method: 'delete' }, 1]]);
    expect(byLabels('local_volume_provisioner_apiserver_requests_failed_total')).toEqual([[{ method: 'delete' }, 1]]);
    expect(byLabels('local_volume_provisioner_apiserver_requests_duration_seconds_count')).toEqual([[{ method: 'create' }, 1], [{ method: 'delete' }, 1]]);
    expect(byLabels('local_volume_provisioner_kube_requests_total')).toHaveLength(6);
    expect(byLabels('local_volume_provisioner_kube_requests_failed_total')).toEqual([
      [{ verb: 'delete', resource: 'persistentvolumes' }, 1], [{ verb: 'patch', resource: 'persistentvolumes' }, 1],
    ]);
    expect(samplesOf(text, 'local_volume_provisioner_kube_request_duration_seconds_count', { verb: 'create' })[0].value).toBe(2);
  });

  test('a config reload is counted by result and only a good one moves the last-success time', async () => {
    const m = new ProvisionerMetrics({ version: 'x' });
    m.recordConfigReload(true, new Date(1_700_000_000_000));
    m.recordConfigReload(false, new Date(1_800_000_000_000));
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_config_reloads_total', { result: 'ok' })[0].value).toBe(1);
    expect(samplesOf(text, 'local_volume_provisioner_config_reloads_total', { result: 'failed' })[0].value).toBe(1);
    expect(samplesOf(text, 'local_volume_provisioner_config_last_reload_success_timestamp_seconds')[0].value).toBe(1_700_000_000);
  });

  test('config_last_reload_successful follows the latest load', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    const successful = async () => samplesOf(await m.exposition(), 'local_volume_provisioner_config_last_reload_successful')[0].value;
    expect(await successful()).toBe(1);
    m.recordConfigReload(false);
    expect(await successful()).toBe(0);
    m.recordConfigReload(true);
    expect(await successful()).toBe(1);
  });
});

describe('volume states', () => {
  const volume = { persistentVolume: 'local-pv-1', path: '/mnt/disks/a', storageClass: 'fast' };

  test('a volume that needs attention has exactly one series, for its current state', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    m.setVolumeStates([{ ...volume, state: 'error' }]);
    m.setVolumeStates([{ ...volume, state: 'released' }]);
    const series = samplesOf(await m.exposition(), 'local_volume_provisioner_volume_state');
    expect(series).toEqual([{
      name: 'local_volume_provisioner_volume_state',
      labels: { state: 'released', persistentvolume: 'local-pv-1', path: '/mnt/disks/a', storageclass: 'fast' },
      value: 1,
    }]);
  });

  test('available and bound volumes are counted, not listed', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    m.setVolumeStates([{ ...volume, state: 'available' }, { ...volume, persistentVolume: 'local-pv-2', state: 'bound' }]);
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_volume_state')).toEqual([]);
    expect(samplesOf(text, 'local_volume_provisioner_volumes', { storageclass: 'fast', state: 'available' })[0].value).toBe(1);
    expect(samplesOf(text, 'local_volume_provisioner_volumes', { storageclass: 'fast', state: 'bound' })[0].value).toBe(1);
  });

  test('a volume left out of the new set has no series any more', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    m.setVolumeStates([{ ...volume, state: 'missing' }, { ...volume, persistentVolume: 'local-pv-2', path: '/mnt/disks/b', state: 'error' }]);
    m.setVolumeStates([{ ...volume, state: 'missing' }]);
    const series = samplesOf(await m.exposition(), 'local_volume_provisioner_volume_state');
    expect(series.map((s) => s.labels.persistentvolume)).toEqual(['local-pv-1']);
  });

  test('volumes counts every state of every class, 0 included', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    m.setVolumeStates([{ ...volume, state: 'error' }, { ...volume, persistentVolume: 'local-pv-2', state: 'available' }], ['fast', 'slow']);
    const counts = samplesOf(await m.exposition(), 'local_volume_provisioner_volumes');
    expect(counts.map((s) => `${s.labels.storageclass} ${s.labels.state} ${s.value}`)).toEqual([
      ...VOLUME_STATES.map((state) => `fast ${state} ${state === 'error' || state === 'available' ? 1 : 0}`),
      ...VOLUME_STATES.map((state) => `slow ${state} 0`),
    ]);
  });

  test('/metrics stays small however many healthy volumes a node has', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ ...volume, persistentVolume: `local-pv-${i}`, path: `/mnt/disks/v${i}`, state: 'available' as const }));
    m.setVolumeStates(many(10));
    const ten = (await m.exposition()).length;
    m.setVolumeStates(many(5000));
    // Only the counts' digits grow.
    expect((await m.exposition()).length).toBeLessThan(ten + 10);
  });

  test('storageclass_volumes counts volumes per class and reads 0 for a configured class with none', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    m.setVolumeStates([{ ...volume, state: 'bound' }, { ...volume, persistentVolume: 'local-pv-2', state: 'available' }], ['fast', 'slow']);
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_storageclass_volumes', { storageclass: 'fast' })[0].value).toBe(2);
    expect(samplesOf(text, 'local_volume_provisioner_storageclass_volumes', { storageclass: 'slow' })[0].value).toBe(0);
  });

  test('storageclass_volumes leaves out what the node does not really have: rejected entries, devices holding data, missing volumes', async () => {
    const m = new ProvisionerMetrics({ version: 'x', processMetrics: false });
    m.setVolumeStates([
      { ...volume, state: 'available' },
      { ...volume, persistentVolume: 'local-pv-2', state: 'released' },
      { ...volume, persistentVolume: '', path: '/mnt/disks/unmounted', state: 'error' },
      { ...volume, persistentVolume: '', path: '/dev/sdz', state: 'held-data' },
      { ...volume, persistentVolume: 'local-pv-3', state: 'missing' },
      { ...volume, persistentVolume: 'local-pv-4', state: 'identity-mismatch' },
    ], ['fast']);
    const text = await m.exposition();
    expect(samplesOf(text, 'local_volume_provisioner_storageclass_volumes', { storageclass: 'fast' })[0].value).toBe(2);
    expect(samplesOf(text, 'local_volume_provisioner_volumes', { storageclass: 'fast', state: 'error' })[0].value).toBe(1);
  });
});

describe('capacityBreakdownLabel', () => {
  test.each([
    [0, '0G'],
    [1, '500G'],
    [500 * GiB - 1, '500G'],
    [500 * GiB, '500G'],
    [500 * GiB + 1, '1000G'],
    [1000 * GiB, '1000G'],
    [1200 * GiB, '1500G'],
    [10 * 1024 * GiB, '10500G'],
  ])('%d bytes is %s', (bytes, label) => {
    expect(capacityBreakdownLabel(bytes)).toBe(label);
  });
});
