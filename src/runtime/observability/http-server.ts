import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Health, HealthReport } from './health';
import { parseListenAddress } from './listen-address';

/** What the server needs from the metrics: {@link ProvisionerMetrics} fits. */
export interface MetricsSource {
  readonly contentType: string;
  exposition(): Promise<string>;
}

export interface HttpServerOptions {
  /** Go-style `host:port` (`:8080`, `127.0.0.1:0`, `[::]:8080`). */
  readonly listenAddress: string;
  /**
   * Path of the Prometheus metrics.
   * @default "/metrics"
   */
  readonly metricsPath?: string;
  readonly metrics: MetricsSource;
  readonly health: Health;
}

export interface RunningHttpServer {
  /** The bound port (the kernel's choice when the address asked for port 0). */
  readonly port: number;
  /** The bound address (`::` for every interface). */
  readonly host: string;
  /** Stops accepting, drops open (keep-alive) connections, resolves when closed. */
  close(): Promise<void>;
}

export const DEFAULT_METRICS_PATH = '/metrics';
const LIVENESS_PATH = '/healthz';
/** `/ready` is what the Go provisioner served; `/readyz` is the Kubernetes convention. */
const READINESS_PATHS = ['/readyz', '/ready'];

/**
 * Serves the metrics path, `/healthz` (200 while the loop is not stuck), `/readyz` and
 * `/ready` (200 once the first complete pass is done), 404 elsewhere.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const { host, port } = parseListenAddress(options.listenAddress);
  const metricsPath = options.metricsPath ?? DEFAULT_METRICS_PATH;
  if (!metricsPath.startsWith('/') || metricsPath === LIVENESS_PATH || READINESS_PATHS.includes(metricsPath)) {
    throw new Error(`invalid metrics path "${metricsPath}": it must start with "/" and differ from ${[LIVENESS_PATH, ...READINESS_PATHS].join(', ')}`);
  }

  const routes = new Map<string, () => Promise<Response>>([
    [metricsPath, async () => ({ status: 200, contentType: options.metrics.contentType, body: await options.metrics.exposition() })],
    [LIVENESS_PATH, async () => healthResponse(options.health.liveness())],
    ...READINESS_PATHS.map((p): [string, () => Promise<Response>] => [p, async () => healthResponse(options.health.readiness())]),
  ]);

  const server = http.createServer((req, res) => {
    const route = routes.get((req.url ?? '/').split('?')[0]);
    const respond = (r: Response, headers: http.OutgoingHttpHeaders = {}): void => {
      res.writeHead(r.status, { 'Content-Type': r.contentType, ...headers });
      res.end(req.method === 'HEAD' ? undefined : r.body);
    };
    if (!route) return respond(text(404, 'not found\n'));
    if (req.method !== 'GET' && req.method !== 'HEAD') return respond(text(405, 'method not allowed\n'), { Allow: 'GET, HEAD' });
    route().then(respond, (err: unknown) => respond(text(500, `${err instanceof Error ? err.message : String(err)}\n`)));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot listen on "${options.listenAddress}": ${err.message}`)));
    server.listen({ host, port }, resolve);
  });
  const bound = server.address() as AddressInfo;
  return {
    port: bound.port,
    host: bound.address,
    close: () => new Promise<void>((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeAllConnections();
    }),
  };
}

interface Response {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

function text(status: number, body: string): Response {
  return { status, contentType: 'text/plain; charset=utf-8', body };
}

function healthResponse(report: HealthReport): Response {
  return text(report.ok ? 200 : 503, `${report.message}\n`);
}
