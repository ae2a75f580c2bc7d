import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Health } from '../../../src/runtime/observability/health';
import { RunningHttpServer, startHttpServer } from '../../../src/runtime/observability/http-server';
import { ProvisionerMetrics } from '../../../src/runtime/observability/metrics';

/**
 * A real Prometheus server (Debian's `prometheus` package) on loopback scrapes our HTTP
 * server every second; the series must come back through its query API.
 */


const JOB = 'local-volume-provisioner';

interface QueryResult {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

async function freeLoopbackPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('a real Prometheus scraping the runtime', () => {
  let workDir: string;
  let prometheus: ChildProcess;
  let prometheusLog = '';
  /** Why Prometheus is no longer running, once it is not. */
  let prometheusEnded: string | undefined;
  let prometheusUrl: string;
  let server: RunningHttpServer;

  /** Waits for Prometheus's readiness endpoint: until then it refuses connections, then answers 503 to every request. */
  async function untilPrometheusIsReady(): Promise<void> {
    const deadline = Date.now() + 45_000;
    for (;;) {
      if (prometheusEnded) throw new Error(`prometheus ${prometheusEnded}:\n${prometheusLog}`);
      try {
        if ((await fetch(`${prometheusUrl}/-/ready`)).ok) return;
      } catch (err) {
        if ((err as { cause?: { code?: string } }).cause?.code !== 'ECONNREFUSED') throw err;
      }
      if (Date.now() > deadline) throw new Error(`prometheus not ready within 45s; its log:\n${prometheusLog}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** Runs an instant query, polling until it returns at least one series (Prometheus scrapes every 1 s). */
  async function query(promql: string): Promise<QueryResult[]> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (prometheusEnded) throw new Error(`prometheus ${prometheusEnded}:\n${prometheusLog}`);
      const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = await res.json() as { status: string; error?: string; data?: { result: QueryResult[] } };
      if (body.status !== 'success') throw new Error(`query ${promql} failed: ${body.error}`);
      if (body.data!.result.length > 0) return body.data!.result;
      if (Date.now() > deadline) throw new Error(`no series for ${promql} within 30s; prometheus log:\n${prometheusLog}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  beforeAll(async () => {
    const metrics = new ProvisionerMetrics({ version: '9.9.9' });
    metrics.setVolumeStates([
      { persistentVolume: 'local-pv-1a2b3c4d', path: '/mnt/disks/vol1', storageClass: 'fast-disks', state: 'error' },
      { persistentVolume: 'local-pv-5e6f7a8b', path: '/mnt/disks/vol2', storageClass: 'fast-disks', state: 'bound' },
    ], ['fast-disks']);
    metrics.setCapacity({ Filesystem: 20 * 1024 ** 3 });
    metrics.setDevices('worker-1', { available: 3, error: 1, held: 0 });
    server = await startHttpServer({ listenAddress: '127.0.0.1:0', metrics, health: new Health() });

    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-prometheus-'));
    const config = path.join(workDir, 'prometheus.yml');
    fs.writeFileSync(config, [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      `  - job_name: ${JOB}`,
      '    static_configs:',
      `      - targets: ["127.0.0.1:${server.port}"]`,
      '',
    ].join('\n'));
    const port = await freeLoopbackPort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn('prometheus', [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(workDir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    prometheus.on('error', (err) => { prometheusEnded = `could not start (install Debian's prometheus package): ${err.message}`; });
    prometheus.on('exit', (code, signal) => { prometheusEnded = `exited (${signal ?? code})`; });
    prometheus.stdout!.on('data', (c: Buffer) => { prometheusLog += c.toString(); });
    prometheus.stderr!.on('data', (c: Buffer) => { prometheusLog += c.toString(); });
    await untilPrometheusIsReady();
  });

  afterAll(async () => {
    if (prometheus && !prometheusEnded) {
      const exited = new Promise((resolve) => prometheus.once('exit', resolve));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await server?.close();
    if (workDir) fs.rmSync(workDir, { recursive: true, force: true });
  });

  test('scrapes our endpoint successfully', async () => {
    const [up] = await query(`up{job="${JOB}"}`);
    expect(up.value[1]).toBe('1');
  });

  test('finds a volume in error by its PV, path and StorageClass', async () => {
    const [series] = await query('local_volume_provisioner_volume_state{state="error"}');
    expect(series.metric).toMatchObject({
      persistentvolume: 'local-pv-1a2b3c4d',
      path: '/mnt/disks/vol1',
      storageclass: 'fast-disks',
    });
    expect(series.value[1]).toBe('1');
  });

  test('finds the upstream capacity and device gauges', async () => {
    const [capacity] = await query('local_volume_provisioner_persistentvolume_capacity_bytes{mode="Filesystem"}');
    expect(capacity.value[1]).toBe(String(20 * 1024 ** 3));
    const [errors] = await query('local_pv_provisioner_error_devices{node="worker-1"}');
    expect(errors.value[1]).toBe('1');
  });

  test('finds the build info and the Node.js process metrics', async () => {
    const [info] = await query('local_volume_provisioner_build_info');
    expect(info.metric.version).toBe('9.9.9');
    expect(await query(`process_resident_memory_bytes{job="${JOB}"}`)).toHaveLength(1);
  });
});
