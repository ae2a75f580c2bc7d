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
 *
 * It speaks what the apiserver speaks: HTTP/2 (ALPN h2) and HTTP/1.1, the client's choice,
 * each passed on in the same protocol. An HTTP/2 client connection has an HTTP/2
 * connection to the apiserver of its own, so what the apiserver does to a connection
 * reaches the client: its GOAWAY (a shutdown, a restart) is passed on as a GOAWAY. Started
 * with `protocols: ['http/1.1']`, it offers HTTP/1.1 only, as a proxy that cannot carry h2.
 * The HTTP/2 faults: a GOAWAY of its own, a stream refused (REFUSED_STREAM), a stream reset
 * after the apiserver answered, and connections frozen (a half-open connection).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import * as https from 'node:https';
import * as net from 'node:net';
import type * as tls from 'node:tls';

type Request = http.IncomingMessage | http2.Http2ServerRequest;
/** What the proxy does with an answer, in either protocol (http.ServerResponse, http2.Http2ServerResponse). */
interface Response {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  writeHead(status: number, headers?: http.OutgoingHttpHeaders): unknown;
  end(): unknown;
  end(body: string): unknown;
  destroy(): unknown;
}

/** Headers that belong to one HTTP/1.1 connection or are HTTP/2 pseudo-headers: never passed on across protocols or hops. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'te']);

function passedOn(headers: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || HOP_HEADERS.has(name)) continue;
    out[name] = value;
  }
  return out;
}

export interface FaultProxyOptions {
  /** What the proxy offers clients by ALPN. @default ['h2', 'http/1.1'], as the apiserver */
  readonly protocols?: ReadonlyArray<'h2' | 'http/1.1'>;
}

/** Which requests a fault applies to. */
export interface RequestMatch {
  /** get, list, watch, create, update, patch, delete, deletecollection. @default any verb */
  readonly verb?: string;
  /** A resource such as `persistentvolumes`, or a subresource as `persistentvolumes/status`. @default any resource */
  readonly resource?: string;
  /** The request's labelSelector, exactly (one agent's watch among several). @default any, or none */
  readonly labelSelector?: string;
}

/** A request as it reached the proxy. */
export interface SeenRequest {
  /** performance.now() when it arrived. */
  readonly at: number;
  readonly verb: string;
  readonly resource: string;
  readonly labelSelector?: string;
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

/** A count whose every addition goes to both `a` and `b` (a request's verb and resource, and its label selector). */
function both(a: Count, b: Count): Count {
  return {
    get requests() {
      return a.requests;
    },
    set requests(n: number) {
      b.requests += n - a.requests;
      a.requests = n;
    },
    get bytes() {
      return a.bytes;
    },
    set bytes(n: number) {
      b.bytes += n - a.bytes;
      a.bytes = n;
    },
  };
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

function matches(spec: RequestMatch, verb: string, resource: string, labelSelector?: string): boolean {
  return (!spec.verb || spec.verb === verb) && (!spec.resource || spec.resource === resource)
    && (spec.labelSelector === undefined || spec.labelSelector === labelSelector);
}

/** How many requests `requests()` keeps, the latest. */
const SEEN_KEPT = 10_000;

export class FaultProxy {
  /** Starts a proxy on a free loopback port in front of `upstream` (an https URL), serving with the given certificate. */
  static async start(upstream: string, tls: { caFile: string; certFile: string; keyFile: string },
    options: FaultProxyOptions = {}): Promise<FaultProxy> {
    const proxy = new FaultProxy(upstream, tls, options.protocols ?? ['h2', 'http/1.1']);
    await proxy.listen(0);
    return proxy;
  }

  /** Milliseconds every request waits before it is passed on. */
  latency = 0;
  /** TCP connections clients have opened to the proxy so far. */
  connectionsAccepted = 0;
  private port = 0;
  private server?: tls.Server;
  private readonly sockets = new Set<net.Socket>();
  /** Each open client connection's protocol, by its socket. */
  private readonly protocolOf = new Map<net.Socket, string>();
  private readonly watches = new Set<Response>();
  private readonly agent: https.Agent;
  private readonly ca: Buffer;
  /** Client HTTP/2 connections, each with its own HTTP/2 connection to the apiserver. */
  private readonly sessions = new Map<http2.ServerHttp2Session, http2.ClientHttp2Session | undefined>();
  private refusals: RequestMatch[] = [];
  private resets: RequestMatch[] = [];
  private readonly frozenSockets = new Set<net.Socket>();
  private failures: Array<{ spec: FailureSpec; remaining: number }> = [];
  private hooks: Array<{ spec: RequestMatch; action: () => unknown }> = [];
  /** After compact(): a watch from a resourceVersion older than this one is answered 410 Expired. */
  private compactedAt?: bigint;
  private readonly counts = new Map<string, Count>();
  /** The same, of the requests that name a label selector, keyed `verb resource selector` (one agent's watch among several). */
  private readonly selectorCounts = new Map<string, Count>();
  private readonly seen: SeenRequest[] = [];

  private constructor(private readonly upstream: string, private readonly tls: { caFile: string; certFile: string; keyFile: string },
    private readonly protocols: ReadonlyArray<'h2' | 'http/1.1'>) {
    this.ca = fs.readFileSync(tls.caFile);
    this.agent = new https.Agent({ keepAlive: true, ca: this.ca });
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** Client connections open to the proxy now (TCP, whatever protocol runs on them). */
  get openConnections(): number {
    return this.sockets.size;
  }

  /** The protocol of each client connection open now (`h2`, `http/1.1`), in no order. */
  get connectionProtocols(): string[] {
    return [...this.sockets].map((s) => this.protocolOf.get(s) ?? 'tls-handshake');
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
   * Breaks every open watch: HTTP/2 streams are reset (RST_STREAM INTERNAL_ERROR, their
   * connection stays); an HTTP/1.1 watch, which cannot be reset alone, loses its connection.
   */
  resetWatches(): void {
    for (const res of this.watches) {
      if (res instanceof http2.Http2ServerResponse) res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      else res.destroy();
    }
    this.watches.clear();
  }

  /**
   * A GOAWAY on every client HTTP/2 connection, as an apiserver sends one when it shuts down
   * or sheds a connection (--goaway-chance): the streams it has accepted go on to their end,
   * and new requests must go on a new connection.
   */
  goaway(): void {
    for (const session of this.sessions.keys()) if (!session.closed) session.close();
  }

  /** The next HTTP/2 request matching is refused (RST_STREAM REFUSED_STREAM) without being passed on: the server did not process it. */
  refuseNext(spec: RequestMatch): void {
    this.refusals.push(spec);
  }

  /**
   * The next request matching is passed on and answered by the apiserver, and then its
   * stream is reset (HTTP/2 RST_STREAM INTERNAL_ERROR; HTTP/1.1: its connection dropped)
   * instead of the answer: the request was processed, the client cannot know it.
   */
  resetNext(spec: RequestMatch): void {
    this.resets.push(spec);
  }

  /**
   * Stops reading from every open client connection (new ones are served): a peer gone
   * silent, as behind a half-open connection. Nothing the client sends is read, its PINGs
   * included, so nothing is answered. (Reading stops at the TCP handle: TLS and HTTP/2 read
   * from it natively, beneath the socket's pause().)
   */
  freeze(): void {
    for (const socket of this.sockets) {
      (socket as unknown as { _handle?: { readStop(): void } })._handle?.readStop();
      this.frozenSockets.add(socket);
    }
  }

  /** Reads from the frozen connections again. */
  thaw(): void {
    for (const socket of this.frozenSockets) (socket as unknown as { _handle?: { readStart(): void } })._handle?.readStart();
    this.frozenSockets.clear();
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
    this.refusals = [];
    this.resets = [];
    this.latency = 0;
    this.thaw();
  }

  /** Forgets every fault, the compaction and the counts: the proxy as it started. */
  reset(): void {
    this.clear();
    this.compactedAt = undefined;
    this.counts.clear();
    this.selectorCounts.clear();
    this.seen.length = 0;
  }

  /** The count for one verb and resource; zero when none. */
  get(verb: string, resource: string): Count {
    const c = this.counts.get(`${verb} ${resource}`);
    return c ? { ...c } : { requests: 0, bytes: 0 };
  }

  /** The sum over every verb and resource matching the filter; with a labelSelector, of the requests that named it only. */
  total(filter: RequestMatch = {}): Count {
    const out = { requests: 0, bytes: 0 };
    const counts = filter.labelSelector === undefined ? this.counts : this.selectorCounts;
    for (const [key, c] of counts) {
      const [verb, resource, ...selector] = key.split(' ');
      if (!matches({ verb: filter.verb, resource: filter.resource }, verb, resource)) continue;
      if (filter.labelSelector !== undefined && selector.join(' ') !== filter.labelSelector) continue;
      out.requests += c.requests;
      out.bytes += c.bytes;
    }
    return out;
  }

  /** The requests that reached the proxy (the latest 10 000), in order, matching the filter. */
  requests(filter: RequestMatch = {}): SeenRequest[] {
    return this.seen.filter((r) => matches(filter, r.verb, r.resource, r.labelSelector));
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
    for (const [session, upstream] of this.sessions) {
      session.destroy();
      upstream?.destroy();
    }
    this.sessions.clear();
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

  private selectorSlot(verb: string, resource: string, labelSelector: string): Count {
    const key = `${verb} ${resource} ${labelSelector}`;
    let c = this.selectorCounts.get(key);
    if (!c) this.selectorCounts.set(key, (c = { requests: 0, bytes: 0 }));
    return c;
  }

  private slot(verb: string, resource: string): Count {
    const key = `${verb} ${resource}`;
    let c = this.counts.get(key);
    if (!c) this.counts.set(key, (c = { requests: 0, bytes: 0 }));
    return c;
  }

  private async listen(port: number): Promise<void> {
    const handler = (req: Request, res: Response) => void this.handle(req, res).catch((e: Error) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${e.message}`);
    });
    const key = fs.readFileSync(this.tls.keyFile);
    const cert = fs.readFileSync(this.tls.certFile);
    const server: tls.Server = this.protocols.includes('h2')
      // kube-apiserver's stream limit from the start, then the apiserver's own (see 'session').
      ? http2.createSecureServer({ key, cert, allowHTTP1: this.protocols.includes('http/1.1'), settings: { maxConcurrentStreams: 100 } }, handler) as tls.Server
      : https.createServer({ key, cert, keepAlive: true, ALPNProtocols: ['http/1.1'] }, handler) as tls.Server;
    server.on('connection', (socket: net.Socket) => {
      this.connectionsAccepted++;
      this.sockets.add(socket);
      socket.once('close', () => {
        this.sockets.delete(socket);
        this.frozenSockets.delete(socket);
        this.protocolOf.delete(socket);
      });
    });
    server.on('secureConnection', (socket: tls.TLSSocket) => {
      // The TLS socket wraps the TCP one counted above.
      const tcp = [...this.sockets].find((s) => s.remotePort === socket.remotePort);
      if (tcp) this.protocolOf.set(tcp, socket.alpnProtocol || 'http/1.1');
    });
    server.on('session', (session: http2.ServerHttp2Session) => {
      this.sessions.set(session, undefined);
      session.on('error', () => {});
      // The apiserver's SETTINGS that bind a client (how many streams at once) are the client's too.
      this.upstreamOf(session).once('remoteSettings', ({ maxConcurrentStreams }) => {
        if (maxConcurrentStreams !== undefined && !session.closed && !session.destroyed) session.settings({ maxConcurrentStreams });
      });
      session.once('close', () => {
        this.sessions.get(session)?.close();
        this.sessions.delete(session);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  private async handle(req: Request, res: Response): Promise<void> {
    const { verb, resource } = requestInfo(req.method ?? 'GET', req.url ?? '/');
    const labelSelector = new URL(req.url ?? '/', 'https://proxy').searchParams.get('labelSelector') ?? undefined;
    const count = labelSelector === undefined
      ? this.slot(verb, resource)
      : both(this.slot(verb, resource), this.selectorSlot(verb, resource, labelSelector));
    count.requests++;
    this.seen.push({ at: performance.now(), verb, resource, labelSelector });
    if (this.seen.length > SEEN_KEPT) this.seen.splice(0, this.seen.length - SEEN_KEPT);
    if (this.latency > 0) await new Promise((r) => setTimeout(r, this.latency));
    const hook = this.hooks.find((h) => matches(h.spec, verb, resource, labelSelector));
    if (hook) {
      this.hooks = this.hooks.filter((h) => h !== hook);
      await hook.action();
    }
    const refusal = res instanceof http2.Http2ServerResponse ? this.refusals.find((r) => matches(r, verb, resource, labelSelector)) : undefined;
    if (refusal) {
      this.refusals = this.refusals.filter((r) => r !== refusal);
      (res as http2.Http2ServerResponse).stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    const failure = this.failures.find((f) => f.remaining > 0 && matches(f.spec, verb, resource, labelSelector));
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
    const reset = this.resets.find((r) => matches(r, verb, resource, labelSelector));
    if (reset) this.resets = this.resets.filter((r) => r !== reset);
    if (req instanceof http2.Http2ServerRequest) await this.forwardH2(req, res as http2.Http2ServerResponse, verb === 'watch', count, reset !== undefined);
    else await this.forward(req, res as http.ServerResponse, verb === 'watch', count, reset !== undefined);
  }

  /** The apiserver connection of this client's HTTP/2 connection; the apiserver's GOAWAY is passed on to the client. */
  private upstreamOf(session: http2.ServerHttp2Session): http2.ClientHttp2Session {
    const current = this.sessions.get(session);
    if (current && !current.closed && !current.destroyed) return current;
    const upstream = http2.connect(this.upstream, { ca: this.ca });
    upstream.on('error', () => {});
    upstream.on('goaway', () => {
      if (!session.closed) session.close();
    });
    if (this.sessions.has(session)) this.sessions.set(session, upstream);
    return upstream;
  }

  private forwardH2(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, watch: boolean, count: Count, reset: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const session = req.stream.session as http2.ServerHttp2Session | undefined;
      if (!session || session.destroyed) {
        resolve();
        return;
      }
      let upstream: http2.ClientHttp2Stream;
      try {
        // endStream as the client sent it: node would end a DELETE's stream at once, dropping its body (preconditions).
        upstream = this.upstreamOf(session).request({ ':method': req.method, ':path': req.url, ...passedOn(req.headers) },
          { endStream: req.stream.endAfterHeaders });
      } catch (e) {
        reject(e as Error);
        return;
      }
      let answered = false;
      upstream.on('response', (headers) => {
        answered = true;
        if (reset) {
          upstream.close(http2.constants.NGHTTP2_CANCEL);
          res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
          resolve();
          return;
        }
        res.writeHead(Number(headers[':status'] ?? 502), passedOn(headers));
        // As the apiserver does: a watch's headers go at once, before its first event.
        (res as unknown as { flushHeaders(): void }).flushHeaders();
        if (watch) this.watches.add(res);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (reset) return;
        count.bytes += chunk.length;
        if (!res.writableEnded && !res.stream.destroyed) res.write(chunk);
      });
      upstream.on('end', () => {
        this.watches.delete(res);
        if (!res.writableEnded && !res.stream.destroyed) res.end();
        resolve();
      });
      upstream.on('close', () => {
        this.watches.delete(res);
        // The apiserver reset the stream or lost the connection: the client's stream is reset too.
        if (!res.writableEnded && !res.stream.destroyed) {
          if (answered) res.stream.close(upstream.rstCode || http2.constants.NGHTTP2_INTERNAL_ERROR);
          else if (!reset) reject(new Error(`the apiserver closed the stream (code ${upstream.rstCode})`));
        }
        resolve();
      });
      upstream.on('error', () => {});
      // A client that goes away takes its request to the apiserver with it.
      res.stream.once('close', () => {
        this.watches.delete(res);
        if (!upstream.closed) upstream.close(http2.constants.NGHTTP2_CANCEL);
      });
      if (!req.stream.endAfterHeaders) req.pipe(upstream);
    });
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, watch: boolean, count: Count, reset: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      let done = false;
      const headers = { ...req.headers };
      delete headers.host;
      const upstream = https.request(`${this.upstream}${req.url}`, { method: req.method, headers, agent: this.agent }, (answer) => {
        if (reset) {
          done = true;
          answer.destroy();
          res.socket?.destroy();
          resolve();
          return;
        }
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
