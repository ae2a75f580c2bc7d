/**
 * A small HTTPS proxy in front of the real kube-apiserver, for the faults the real server
 * does not make on demand: latency, an injected error answer (worded as the apiserver words
 * it, Retry-After included), an action run in the window before a request (another client's
 * write), watches ended or answered 410 Expired as after a compaction, an outage. It also
 * counts requests and response bytes per verb and resource, as a client's requests reach
 * the server.
 *
 * Requests pass through unchanged, their bearer token included, so the apiserver
 * authenticates and authorizes the client itself. The proxy presents the apiserver's own
 * serving certificate, so a kubeconfig for the proxy carries the cluster's CA.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';

/** Which requests a fault applies to. */
export interface RequestMatch {
  /** get, list, watch, create, update, patch, delete, deletecollection. @default any verb */
  readonly verb?: string;
  /** A resource such as `persistentvolumes`, or a subresource as `persistentvolumes/status`. @default any resource */
  readonly resource?: string;
}

export interface FailureSpec extends RequestMatch {
  /** The HTTP status to answer with (500, 503, 429, 409, ...). */
  readonly code: number;
  /** How many matching requests fail. @default 1 */
  readonly count?: number;
  /** Seconds for Retry-After and details.retryAfterSeconds (429 and 503). */
  readonly retryAfterSeconds?: number;
}

export interface Count {
  requests: number;
  bytes: number;
}

/** A request's verb and resource, as the apiserver's RequestInfo resolves them. */
export function requestInfo(method: string, url: string): { verb: string; resource: string } {
  const { pathname, searchParams } = new URL(url, 'https://proxy');
  let parts = pathname.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  if (parts[0] === 'api') parts = parts.slice(2);
  else if (parts[0] === 'apis') parts = parts.slice(3);
  else return { verb: method.toLowerCase(), resource: '' };
  let watch = searchParams.get('watch') === 'true' || searchParams.get('watch') === '1';
  if (parts[0] === 'watch') {
    watch = true;
    parts = parts.slice(1);
  }
  // namespaces/<ns>/<resource>/... is namespaced; namespaces and namespaces/<ns>[/status] are the Namespace itself.
  if (parts[0] === 'namespaces' && parts.length > 2) parts = parts.slice(2);
  const [resource = '', name, subresource] = parts;
  const full = subresource ? `${resource}/${subresource}` : resource;
  switch (method) {
    case 'GET': return { verb: name ? 'get' : watch ? 'watch' : 'list', resource: full };
    case 'POST': return { verb: 'create', resource: full };
    case 'PUT': return { verb: 'update', resource: full };
    case 'PATCH': return { verb: 'patch', resource: full };
    case 'DELETE': return { verb: name ? 'delete' : 'deletecollection', resource: full };
    default: return { verb: method.toLowerCase(), resource: full };
  }
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  410: 'Expired',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** A Status as the apiserver words this failure. */
function failureStatus(code: number, retryAfterSeconds?: number): Record<string, unknown> {
  const messages: Record<number, string> = {
    429: 'Too many requests, please try again later.',
    500: 'Internal error occurred: injected fault',
    503: 'The server is currently unable to handle the request',
    409: 'Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again',
    410: 'too old resource version',
    504: 'Timeout: request did not complete within requested timeout - context deadline exceeded',
  };
  const retry = code === 429 ? retryAfterSeconds ?? 1 : retryAfterSeconds;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    code,
    reason: REASONS[code] ?? 'Unknown',
    message: messages[code] ?? `injected fault with code ${code}`,
    details: { ...(retry !== undefined ? { retryAfterSeconds: retry } : {}), ...(code === 500 ? { causes: [{ message: 'injected fault' }] } : {}) },
  };
}

function matches(spec: RequestMatch, verb: string, resource: string): boolean {
  return (!spec.verb || spec.verb === verb) && (!spec.resource || spec.resource === resource);
}

export class FaultProxy {
  /** Starts a proxy on a free loopback port in front of `upstream` (an https URL), serving with the given certificate. */
  static async start(upstream: string, tls: { caFile: string; certFile: string; keyFile: string }): Promise<FaultProxy> {
    const proxy = new FaultProxy(upstream, tls);
    await proxy.listen(0);
    return proxy;
  }

  /** Milliseconds every request waits before it is passed on. */
  latency = 0;
  /** TCP connections clients have opened to the proxy so far. */
  connectionsAccepted = 0;
  private port = 0;
  private server?: https.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly watches = new Set<http.ServerResponse>();
  private readonly agent: https.Agent;
  private failures: Array<{ spec: FailureSpec; remaining: number }> = [];
  private hooks: Array<{ spec: RequestMatch; action: () => unknown }> = [];
  /** After compact(): a watch from a resourceVersion older than this one is answered 410 Expired. */
  private compactedAt?: bigint;
  private readonly counts = new Map<string, Count>();

  private constructor(private readonly upstream: string, private readonly tls: { caFile: string; certFile: string; keyFile: string }) {
    this.agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(tls.caFile) });
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** How many watches are open through the proxy. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** Makes the next `count` requests matching verb and resource fail with `code`, as the apiserver words that failure. */
  failNext(spec: FailureSpec): void {
    this.failures.push({ spec, remaining: spec.count ?? 1 });
  }

  /** Runs `action` (and waits for it) right before the next matching request is passed on: another client's write in the window between two of ours. */
  beforeNext(spec: RequestMatch, action: () => unknown): void {
    this.hooks.push({ spec, action });
  }

  /** Ends every open watch, as the apiserver ends one at its timeout. */
  closeWatches(): void {
    for (const res of this.watches) res.end();
    this.watches.clear();
  }

  /**
   * As an etcd compaction does to a client behind: ends every watch, and from now on a
   * watch from a resourceVersion older than `resourceVersion` (the cluster's current one,
   * read by the caller) is answered with a 410 Expired ERROR event.
   */
  compact(resourceVersion: string): void {
    this.compactedAt = BigInt(resourceVersion);
    this.closeWatches();
  }

  /** Forgets pending failures, hooks and latency (a compaction stays: it is history, not a fault). */
  clear(): void {
    this.failures = [];
    this.hooks = [];
    this.latency = 0;
  }

  /** Forgets every fault, the compaction and the counts: the proxy as it started. */
  reset(): void {
    this.clear();
    this.compactedAt = undefined;
    this.counts.clear();
  }

  /** The count for one verb and resource; zero when none. */
  get(verb: string, resource: string): Count {
    const c = this.counts.get(`${verb} ${resource}`);
    return c ? { ...c } : { requests: 0, bytes: 0 };
  }

  /** The sum over every verb and resource matching the filter. */
  total(filter: RequestMatch = {}): Count {
    const out = { requests: 0, bytes: 0 };
    for (const [key, c] of this.counts) {
      const [verb, resource] = key.split(' ');
      if (!matches(filter, verb, resource)) continue;
      out.requests += c.requests;
      out.bytes += c.bytes;
    }
    return out;
  }

  /** Every count, keyed `verb resource`. */
  snapshot(): Record<string, Count> {
    return Object.fromEntries([...this.counts].map(([k, c]) => [k, { ...c }]));
  }

  /** An outage: stops listening and drops every connection until restore(). */
  async sever(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    this.watches.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again on the same port after sever(). */
  async restore(): Promise<void> {
    await this.listen(this.port);
  }

  async stop(): Promise<void> {
    await this.sever();
    this.agent.destroy();
  }

  private slot(verb: string, resource: string): Count {
    const key = `${verb} ${resource}`;
    let c = this.counts.get(key);
    if (!c) this.counts.set(key, (c = { requests: 0, bytes: 0 }));
    return c;
  }

  private async listen(port: number): Promise<void> {
    const server = https.createServer({ key: fs.readFileSync(this.tls.keyFile), cert: fs.readFileSync(this.tls.certFile), keepAlive: true },
      (req, res) => void this.handle(req, res).catch((e: Error) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`proxy: ${e.message}`);
      }));
    server.on('connection', (socket: net.Socket) => {
      this.connectionsAccepted++;
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const { verb, resource } = requestInfo(req.method ?? 'GET', req.url ?? '/');
    const count = this.slot(verb, resource);
    count.requests++;
    if (this.latency > 0) await new Promise((r) => setTimeout(r, this.latency));
    const hook = this.hooks.find((h) => matches(h.spec, verb, resource));
    if (hook) {
      this.hooks = this.hooks.filter((h) => h !== hook);
      await hook.action();
    }
    const failure = this.failures.find((f) => f.remaining > 0 && matches(f.spec, verb, resource));
    if (failure) {
      if (--failure.remaining === 0) this.failures = this.failures.filter((f) => f !== failure);
      const status = failureStatus(failure.spec.code, failure.spec.retryAfterSeconds);
      const retry = (status.details as { retryAfterSeconds?: number }).retryAfterSeconds;
      const body = JSON.stringify(status);
      count.bytes += body.length;
      req.resume();
      res.writeHead(failure.spec.code, { 'content-type': 'application/json', ...(retry !== undefined ? { 'retry-after': String(retry) } : {}) });
      res.end(body);
      return;
    }
    const from = new URL(req.url ?? '/', 'https://proxy').searchParams.get('resourceVersion');
    if (verb === 'watch' && this.compactedAt !== undefined && from && /^\d+$/.test(from) && BigInt(from) < this.compactedAt) {
      // The real server's answer to a watch from a compacted revision: 200, one ERROR event, the end.
      const body = `${JSON.stringify({ type: 'ERROR', object: failureStatus(410) })}\n`;
      count.bytes += body.length;
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
      return;
    }
    await this.forward(req, res, verb === 'watch', count);
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, watch: boolean, count: Count): Promise<void> {
    return new Promise((resolve, reject) => {
      let done = false;
      const headers = { ...req.headers };
      delete headers.host;
      const upstream = https.request(`${this.upstream}${req.url}`, { method: req.method, headers, agent: this.agent }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        // As the apiserver does: a watch's headers go at once, before its first event.
        res.flushHeaders();
        if (watch) {
          this.watches.add(res);
          res.once('close', () => {
            this.watches.delete(res);
            answer.destroy();
          });
        }
        answer.on('data', (chunk: Buffer) => {
          count.bytes += chunk.length;
          if (!res.writableEnded) res.write(chunk);
        });
        answer.on('end', () => {
          done = true;
          this.watches.delete(res);
          if (!res.writableEnded) res.end();
          resolve();
        });
        answer.on('error', () => {
          res.destroy();
          resolve();
        });
      });
      upstream.on('error', reject);
      // A client that goes away takes its request to the apiserver with it.
      res.once('close', () => done || upstream.destroy());
      req.pipe(upstream);
    });
  }
}
