import * as http from 'node:http';
import { Health } from '../../../src/runtime/observability/health';
import { RunningHttpServer, startHttpServer } from '../../../src/runtime/observability/http-server';
import { ProvisionerMetrics } from '../../../src/runtime/observability/metrics';

interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

function request(port: number, path: string, method = 'GET', agent?: http.Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('startHttpServer', () => {
  let clock: number;
  let health: Health;
  let metrics: ProvisionerMetrics;
  let server: RunningHttpServer;

  beforeEach(async () => {
    clock = 0;
    health = new Health({ stuckAfterMs: 1000, now: () => clock });
    metrics = new ProvisionerMetrics({ version: 'test', processMetrics: false });
    server = await startHttpServer({ listenAddress: '127.0.0.1:0', metrics, health });
  });

  afterEach(() => server.close());

  test('binds a free port when asked for port 0 and reports it', () => {
    expect(server.host).toBe('127.0.0.1');
    expect(server.port).toBeGreaterThan(0);
  });

  test('serves the metrics in the Prometheus text format at /metrics', async () => {
    const reply = await request(server.port, '/metrics');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe(metrics.contentType);
    expect(reply.body).toContain('local_volume_provisioner_build_info{version="test"');
  });

  test('serves the metrics at a configured path, and not at /metrics', async () => {
    const custom = await startHttpServer({ listenAddress: '127.0.0.1:0', metricsPath: '/custom/metrics', metrics, health });
    try {
      expect((await request(custom.port, '/custom/metrics')).status).toBe(200);
      expect((await request(custom.port, '/metrics')).status).toBe(404);
    } finally {
      await custom.close();
    }
  });

  test('ignores the query string when routing', async () => {
    expect((await request(server.port, '/metrics?name[]=up')).status).toBe(200);
  });

  test('/healthz is 200 while the loop beats and 503 once it is stuck', async () => {
    expect(await request(server.port, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    clock = 1001;
    expect(await request(server.port, '/healthz')).toMatchObject({ status: 503, body: 'loop stuck: no heartbeat for 1s (threshold 1s)\n' });
    health.markLoopAlive();
    expect((await request(server.port, '/healthz')).status).toBe(200);
  });

  test.each(['/readyz', '/ready'])('%s is 503 until the first complete pass, then 200', async (path) => {
    expect(await request(server.port, path)).toMatchObject({ status: 503, body: 'not ready: the first complete pass has not finished\n' });
    health.markReady();
    expect(await request(server.port, path)).toMatchObject({ status: 200, body: 'ok\n' });
  });

  test('answers 404 on any other path', async () => {
    expect((await request(server.port, '/')).status).toBe(404);
    expect((await request(server.port, '/metricsx')).status).toBe(404);
    expect((await request(server.port, '/healthz/')).status).toBe(404);
  });

  test('answers HEAD with the status and no body', async () => {
    health.markReady();
    expect(await request(server.port, '/readyz', 'HEAD')).toMatchObject({ status: 200, body: '' });
  });

  test('answers 405 to methods other than GET and HEAD', async () => {
    const reply = await request(server.port, '/metrics', 'POST');
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe('GET, HEAD');
  });

  test('closes while a client holds a keep-alive connection', async () => {
    const agent = new http.Agent({ keepAlive: true });
    try {
      await request(server.port, '/metrics', 'GET', agent);
      await server.close();
      await expect(request(server.port, '/metrics')).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      agent.destroy();
    }
    server = await startHttpServer({ listenAddress: '127.0.0.1:0', metrics, health });
  });

  test('rejects a metrics path that does not start with "/" or hides a health path', async () => {
    await expect(startHttpServer({ listenAddress: '127.0.0.1:0', metricsPath: 'metrics', metrics, health }))
      .rejects.toThrow('invalid metrics path "metrics"');
    await expect(startHttpServer({ listenAddress: '127.0.0.1:0', metricsPath: '/healthz', metrics, health }))
      .rejects.toThrow('invalid metrics path "/healthz"');
  });

  test('says which address it could not listen on', async () => {
    await expect(startHttpServer({ listenAddress: `127.0.0.1:${server.port}`, metrics, health }))
      .rejects.toThrow(`cannot listen on "127.0.0.1:${server.port}": listen EADDRINUSE`);
  });

  test('rejects an invalid listen address before listening', async () => {
    await expect(startHttpServer({ listenAddress: '8080', metrics, health })).rejects.toThrow('invalid listen address "8080": missing port');
  });
});
