/**
 * JSON over HTTP(S) to the API server: the credentials on every request, and watch streams
 * read line by line. Nothing is converted: objects come and go as the server writes them
 * (timestamps stay RFC 3339 strings).
 *
 * Over TLS a connection offers h2 and http/1.1 (ALPN). Where the server picks h2, as
 * kube-apiserver does, every request and every watch of this transport is a stream on ONE
 * HTTP/2 connection, as client-go's are: an agent holds one connection to the apiserver
 * instead of one per open watch. Where it picks http/1.1 (a proxy in between that cannot
 * speak h2), where the server is plain http, or where DISABLE_HTTP2 is set (client-go's
 * switch), requests go over a keep-alive HTTP/1.1 pool, one connection per open watch;
 * the choice is made on the first connection and kept for the transport's life.
 *
 * Another HTTP/2 connection is opened only while every open one has as many streams as the
 * server allows at once (its SETTINGS_MAX_CONCURRENT_STREAMS, 100 on kube-apiserver), as
 * Go's http2 transport does, so that requests never queue behind long-lived watches; one
 * opened so is closed when its last stream ends.
 *
 * The HTTP/2 connection is watched as client-go watches its own (its http2 transport's
 * ReadIdleTimeout 30 s and PingTimeout 15 s): after 30 s with nothing read, or when a
 * request has gone unanswered until its timeout, a PING is sent, and without an answer
 * within 15 s the connection is taken for dead and dropped, so that a half-open
 * connection cannot hold every request and watch of the agent; the next request opens a
 * new one. A GOAWAY (an apiserver shutting down or shedding load) lets the streams
 * the server accepted finish on the old connection while new requests go on a new one.
 * A request the server provably never processed (refused by GOAWAY or REFUSED_STREAM,
 * or never sent) fails with a ConnectionError whose `notSent` lets even a write be sent
 * again (failure.ts); a stream reset after it was sent may have been applied and is not.
 *
 * node:https, node:tls and node:http2 (and with them OpenSSL's setup) are loaded only for
 * an https server.
 */
import type { Agent as HttpAgent, IncomingHttpHeaders } from 'node:http';
import * as http from 'node:http';
import type { ClientHttp2Session, ClientHttp2Stream, IncomingHttpHeaders as Http2Headers } from 'node:http2';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { Credentials, TlsOptions } from './credentials';
import { currentContext, KubeConfigData } from './kubeconfig';
import type { HttpMethod } from './request-target';

export type QueryValue = string | number | boolean | undefined;

export interface HttpRequest {
  readonly method: HttpMethod;
  /** Absolute path on the server, e.g. `/api/v1/persistentvolumes`; may carry a query string. */
  readonly path: string;
  /** Added to the path's query; undefined values are left out. */
  readonly query?: Readonly<Record<string, QueryValue>>;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** @default application/json */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
}

/** An answer with a status of 400 or more; `body` is what the server sent (usually a metav1.Status). */
export class HttpStatusError extends Error {
  constructor(readonly code: number, readonly body: string, readonly headers: IncomingHttpHeaders) {
    super(`HTTP ${code}`);
    this.name = 'HttpStatusError';
  }
}

/**
 * The connection lost a request before its answer came. `notSent`: the server provably did
 * not process it (refused by GOAWAY or REFUSED_STREAM, or never written to a connection),
 * so sending it again is safe whatever it does.
 */
export class ConnectionError extends Error {
  constructor(message: string, readonly code: string, readonly notSent: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConnectionError';
  }
}

/** One line of a watch stream: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, and the object. */
export type WatchEventHandler = (type: string, object: unknown) => void;

export type Protocol = 'h2' | 'http/1.1';

export interface HttpTransportOptions {
  /**
   * Offer h2 on TLS connections and use it where the server picks it.
   * @default true, unless the DISABLE_HTTP2 environment variable is set (client-go's switch)
   */
  readonly http2?: boolean;
  /** With nothing read on the HTTP/2 connection for this long, a PING is sent. @default 30000 (client-go's ReadIdleTimeout) */
  readonly readIdleMs?: number;
  /** A PING unanswered for this long drops the HTTP/2 connection. @default 15000 (client-go's PingTimeout) */
  readonly pingTimeoutMs?: number;
}

/** What the server answered: status, headers, and the body to read (`touch` told of each chunk). */
interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Readable;
  readonly touch: () => void;
}

const USER_AGENT = 'local-volume-provisioner';
/** Per-stream receive window, as Go's http2 client (transportDefaultStreamFlow): a list page arrives without waiting on window updates. */
const STREAM_WINDOW = 4 * 1024 * 1024;
/** Connection receive window (Go's client allows 1 GiB; several pages at once fit in this). */
const CONNECTION_WINDOW = 16 * 1024 * 1024;
/** Connecting and the TLS handshake, at most (client-go's dialer: 30 s, its TLS handshake 10 s of it). */
const CONNECT_TIMEOUT_MS = 30_000;

/** One HTTP/2 connection and what is known of it. */
interface H2Connection {
  readonly tls: TlsOptions;
  /** The session, or 'http/1.1' when the server did not pick h2; rejects when the connection failed. */
  readonly ready: Promise<ClientHttp2Session | 'http/1.1'>;
  /** GOAWAY received, closed or retired: no new streams go on it. */
  gone: boolean;
  /** Streams open on it or about to be (a request waiting for the connection): the session keeps the process alive only while there are some. */
  streams: number;
  /** Streams the server allows at once (its SETTINGS; until they come, kube-apiserver's 100). */
  maxStreams: number;
  /** Something was read (a stream's answer or data, a PING's answer). */
  touch(): void;
  /** Sends a PING now, unless one is out: the connection is dropped if it stays unanswered. */
  check(): void;
}

export class HttpTransport {
  private readonly base: URL;
  private readonly credentials: Credentials;
  private readonly tlsModule?: typeof import('node:https');
  private agent?: { tls: TlsOptions; agent: HttpAgent };
  /** Whether requests go over HTTP/1.1 from now on (h2 off, a plain http server, or a server that did not pick h2). */
  private http1: boolean;
  /** HTTP/2 connections that take new streams, the first the one kept; more only while all are full. */
  private connections: H2Connection[] = [];
  private readonly readIdleMs: number;
  private readonly pingTimeoutMs: number;
  private negotiated?: Protocol;

  constructor(readonly config: KubeConfigData, options: HttpTransportOptions = {}) {
    const { cluster, user } = currentContext(config);
    this.base = new URL(cluster.server);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') {
      throw new Error(`kubeconfig cluster "${cluster.name}": server "${cluster.server}" is not an http or https URL`);
    }
    this.credentials = new Credentials(cluster, user);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    if (this.base.protocol === 'https:') this.tlsModule = require('node:https') as typeof import('node:https');
    const http2 = options.http2 ?? !process.env.DISABLE_HTTP2;
    this.http1 = !http2 || !this.tlsModule;
    this.readIdleMs = options.readIdleMs ?? 30_000;
    this.pingTimeoutMs = options.pingTimeoutMs ?? 15_000;
  }

  /** The protocol of the last connection made ('h2' or 'http/1.1'); undefined before the first. */
  get protocol(): Protocol | undefined {
    return this.negotiated;
  }

  /** Sends the request and answers the parsed JSON body (undefined when empty); a status >= 400 throws HttpStatusError. */
  async request<T>(request: HttpRequest): Promise<T> {
    const answer = await this.open(request);
    const text = await readText(answer);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /**
   * Opens a watch and calls `onEvent` for each event until the server ends the stream
   * (resolves) or the connection breaks (rejects). Aborting `request.signal` ends it
   * quietly. `onOpen` is told once the server has accepted the watch.
   */
  async watch(request: HttpRequest, onEvent: WatchEventHandler, onOpen: () => void = () => {}): Promise<void> {
    const answer = await this.open(request);
    onOpen();
    answer.body.setEncoding('utf8');
    let partial = '';
    try {
      for await (const chunk of answer.body as AsyncIterable<string>) {
        answer.touch();
        const lines = (partial + chunk).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          if (!line.trim()) continue;
          const event = JSON.parse(line) as { type: string; object: unknown };
          onEvent(event.type, event.object);
        }
      }
    } catch (err) {
      if (request.signal?.aborted) return;
      throw err;
    }
  }

  /** Closes the connections kept open for reuse; requests after this open new ones. */
  close(): void {
    this.agent?.agent.destroy();
    this.agent = undefined;
    for (const connection of this.connections.splice(0)) {
      connection.gone = true;
      connection.ready.then((session) => session !== 'http/1.1' && session.destroy(), () => {});
    }
  }

  /** Sends the request; answers once the status is below 400. A 401 with renewable credentials is tried once more. */
  private async open(request: HttpRequest, renewed = false): Promise<Answer> {
    const credentials = await this.credentials.forRequest();
    const answer = await this.send(request, credentials.headers, credentials.tls);
    if (answer.status < 400) return answer;
    const body = await readText(answer);
    if (answer.status === 401 && this.credentials.renewable && !renewed) {
      this.credentials.renew();
      return this.open(request, true);
    }
    throw new HttpStatusError(answer.status, body, answer.headers);
  }

  private async send(request: HttpRequest, credentialHeaders: Readonly<Record<string, string>>, tls: TlsOptions): Promise<Answer> {
    const url = new URL(request.path, this.base);
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    const headers: Record<string, string | number> = { 'accept': 'application/json', 'user-agent': USER_AGENT };
    for (const [name, value] of Object.entries(credentialHeaders)) headers[name.toLowerCase()] = value;
    if (body !== undefined) {
      headers['content-type'] = request.contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    request.signal?.throwIfAborted();
    if (!this.http1) {
      // A stream is reserved on the connection until sendH2 has it closed (or it is never made).
      const connection = this.connectionFor(tls);
      let session: ClientHttp2Session | 'http/1.1';
      try {
        session = await untilAborted(connection.ready, request.signal);
      } catch (err) {
        this.release(connection);
        throw err;
      }
      if (session !== 'http/1.1') return this.sendH2(connection, session, request, url, headers, body);
      this.release(connection);
    }
    return this.sendH1(request, url, headers, body, this.agentFor(tls));
  }

  private sendH1(request: HttpRequest, url: URL, headers: http.OutgoingHttpHeaders, body: string | undefined, agent: HttpAgent): Promise<Answer> {
    const module = this.tlsModule ?? http;
    const signal = request.signal;
    return new Promise((resolve, reject) => {
      signal?.throwIfAborted();
      let response: http.IncomingMessage | undefined;
      const req = module.request(url, { method: request.method, headers, agent }, (res) => {
        response = res;
        resolve({ status: res.statusCode!, headers: res.headers, body: res, touch: () => {} });
      });
      // Not http's `signal` option: an abort once the whole answer is in must do nothing
      // (destroying then would raise an 'error' that no reader listens to any more).
      const onAbort = () => {
        if (!response?.complete) req.destroy(abortError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.once('close', () => signal?.removeEventListener('abort', onAbort));
      req.on('error', reject);
      req.end(body);
    });
  }

  private sendH2(connection: H2Connection, session: ClientHttp2Session, request: HttpRequest, url: URL,
    headers: Record<string, string | number>, body: string | undefined): Promise<Answer> {
    const { constants } = h2();
    const signal = request.signal;
    return new Promise((resolve, reject) => {
      let stream: ClientHttp2Stream;
      try {
        signal?.throwIfAborted();
        stream = session.request({ ':method': request.method, ':path': `${url.pathname}${url.search}`, ...headers }, { endStream: body === undefined });
      } catch (err) {
        this.release(connection);
        if (signal?.aborted) {
          reject(abortError());
          return;
        }
        // A session that has just gone away or closed takes no new stream: nothing was sent.
        this.forget(connection);
        reject(new ConnectionError(`HTTP/2 connection to ${this.base.host} cannot take a request: ${(err as Error).message}`,
          (err as { code?: string }).code ?? 'ERR_HTTP2_INVALID_SESSION', true, { cause: err }));
        return;
      }
      session.ref();
      let answered = false;
      let complete = false;
      stream.once('response', (raw: Http2Headers) => {
        answered = true;
        connection.touch();
        const answerHeaders: IncomingHttpHeaders = {};
        for (const [name, value] of Object.entries(raw)) if (!name.startsWith(':')) answerHeaders[name] = value as string | string[];
        resolve({ status: Number(raw[':status']), headers: answerHeaders, body: stream, touch: connection.touch });
      });
      stream.once('end', () => {
        complete = true;
      });
      stream.once('error', (err) => {
        if (!answered) reject(this.lost(stream, constants, err));
      });
      stream.once('close', () => {
        signal?.removeEventListener('abort', onAbort);
        this.release(connection);
        if (!answered) reject(this.lost(stream, constants));
      });
      const onAbort = () => {
        if (complete) return;
        if (!answered) {
          // Unanswered until our timeout (or shutdown): is the connection still there?
          connection.check();
          reject(abortError());
        }
        stream.close(constants.NGHTTP2_CANCEL);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      if (body !== undefined) stream.end(body);
    });
  }

  /** Why a stream closed before its answer: refused streams and streams never sent are `notSent`. */
  private lost(stream: ClientHttp2Stream, constants: typeof import('node:http2').constants, err?: unknown): Error {
    if ((err as Error | undefined)?.name === 'AbortError') return err as Error;
    if (err instanceof ConnectionError) return err;
    const refused = stream.rstCode === constants.NGHTTP2_REFUSED_STREAM;
    // A stream with no ID yet never had its HEADERS written.
    const notSent = refused || stream.pending;
    const why = refused ? 'refused by the server (REFUSED_STREAM or GOAWAY): not processed'
      : stream.pending ? 'closed before it was sent'
        : `reset (${stream.rstCode !== undefined ? `error code ${stream.rstCode}` : 'connection closed'}) before an answer: it may have been processed`;
    const code = refused ? 'ERR_HTTP2_REFUSED_STREAM' : (err as { code?: string } | undefined)?.code ?? 'ERR_HTTP2_STREAM_ERROR';
    return new ConnectionError(`HTTP/2 stream to ${this.base.host} ${why}${err ? `: ${(err as Error).message}` : ''}`, code, notSent, { cause: err });
  }

  /**
   * An HTTP/2 connection for these TLS settings with a stream reserved on it: the first
   * that has room for one more, or a new one. A rotated CA or client certificate retires
   * the others.
   */
  private connectionFor(tls: TlsOptions): H2Connection {
    for (const other of this.connections.filter((c) => !sameTls(c.tls, tls))) {
      // Retired gracefully: what runs on it (a watch) finishes there; new requests present the new certificate.
      this.forget(other);
      other.ready.then((session) => session !== 'http/1.1' && session.close(), () => {});
    }
    let connection = this.connections.find((c) => c.streams < c.maxStreams);
    if (!connection) {
      const made = this.connect(tls);
      connection = made;
      this.connections.push(made);
      made.ready.then((session) => {
        if (session === 'http/1.1') {
          this.http1 = true;
          this.forget(made);
        }
      }, () => this.forget(made));
    }
    connection.streams++;
    return connection;
  }

  /** A stream reserved by connectionFor is done. An extra connection (not the first) with none left is closed. */
  private release(connection: H2Connection): void {
    if (--connection.streams > 0) return;
    connection.ready.then((session) => {
      if (session === 'http/1.1' || connection.streams > 0 || session.destroyed) return;
      session.unref();
      if (!connection.gone && this.connections.indexOf(connection) > 0) {
        this.forget(connection);
        session.close();
      }
    }, () => {});
  }

  /** No new stream goes on `connection`. */
  private forget(connection: H2Connection): void {
    connection.gone = true;
    this.connections = this.connections.filter((c) => c !== connection);
  }

  /** A TLS connection offering h2 and http/1.1; on h2, an HTTP/2 session over it, watched for dead air. */
  private connect(tlsOptions: TlsOptions): H2Connection {
    const { connect: tlsConnect } = require('node:tls') as typeof import('node:tls'); // eslint-disable-line @typescript-eslint/no-require-imports
    const http2 = h2();
    const host = this.base.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(this.base.port || 443);
    let lastRead = performance.now();
    let pingOut = false;
    let session: ClientHttp2Session | undefined;
    const connection: H2Connection = {
      tls: tlsOptions,
      gone: false,
      streams: 0,
      maxStreams: 100,
      ready: undefined as never,
      touch: () => {
        lastRead = performance.now();
      },
      check: () => {
        if (!session || pingOut || session.closed || session.destroyed) return;
        pingOut = true;
        const deadline = setTimeout(() => {
          this.forget(connection);
          session!.destroy(new ConnectionError(`HTTP/2 connection to ${this.base.host} answered no PING within ${this.pingTimeoutMs} ms: taken for dead`,
            'ETIMEDOUT', false));
        }, this.pingTimeoutMs);
        deadline.unref();
        try {
          session.ping((err) => {
            clearTimeout(deadline);
            pingOut = false;
            if (!err) connection.touch();
          });
        } catch {
          clearTimeout(deadline);
          pingOut = false;
        }
      },
    };
    (connection as { ready: H2Connection['ready'] }).ready = new Promise((resolve, reject) => {
      const socket = tlsConnect({
        host,
        port,
        // An IP address is not a server name (SNI); Node warns when given one.
        servername: tlsOptions.servername ?? (isIP(host) ? undefined : host),
        ALPNProtocols: ['h2', 'http/1.1'],
        ca: tlsOptions.ca,
        cert: tlsOptions.cert,
        key: tlsOptions.key,
        rejectUnauthorized: tlsOptions.rejectUnauthorized,
      });
      socket.once('error', reject);
      // A server that never answers the SYN or the handshake: nothing was sent, every request waiting on it may go again.
      socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(
        new ConnectionError(`no TLS connection to ${this.base.host} within ${CONNECT_TIMEOUT_MS} ms`, 'ETIMEDOUT', true)));
      socket.once('secureConnect', () => {
        socket.off('error', reject);
        socket.setTimeout(0);
        if (socket.alpnProtocol !== 'h2') {
          // The server did not pick h2 (a proxy, a server without it): HTTP/1.1 from now on.
          this.negotiated = 'http/1.1';
          socket.destroy();
          resolve('http/1.1');
          return;
        }
        this.negotiated = 'h2';
        session = http2.connect(this.base.origin, {
          createConnection: () => socket,
          settings: { enablePush: false, initialWindowSize: STREAM_WINDOW },
        });
        session.setLocalWindowSize(CONNECTION_WINDOW);
        session.on('remoteSettings', (settings) => {
          if (settings.maxConcurrentStreams !== undefined) connection.maxStreams = settings.maxConcurrentStreams;
        });
        const forget = () => this.forget(connection);
        // Streams the server accepted finish here; new requests go on a new connection.
        session.on('goaway', forget);
        session.on('close', () => {
          forget();
          clearInterval(idle);
        });
        // A broken connection fails its streams, each with its own error; the session's own needs a listener.
        session.on('error', forget);
        session.unref();
        const idle = setInterval(() => {
          if (performance.now() - lastRead >= this.readIdleMs) connection.check();
        }, Math.max(1, this.readIdleMs / 2));
        idle.unref();
        resolve(session);
      });
    });
    return connection;
  }

  /** One keep-alive agent; made anew only when the CA or the client certificate changes (a rotation). */
  private agentFor(tls: TlsOptions): HttpAgent {
    const current = this.agent;
    if (current && sameTls(current.tls, tls)) return current.agent;
    current?.agent.destroy();
    const agent = this.tlsModule ? new this.tlsModule.Agent({ ...tls, keepAlive: true }) : new http.Agent({ keepAlive: true });
    if (!this.negotiated) this.negotiated = 'http/1.1';
    this.agent = { tls, agent };
    return agent;
  }
}

function h2(): typeof import('node:http2') {
  return require('node:http2') as typeof import('node:http2'); // eslint-disable-line @typescript-eslint/no-require-imports
}

function sameTls(a: TlsOptions, b: TlsOptions): boolean {
  return a.ca === b.ca && a.cert === b.cert && a.key === b.key;
}

/** `promise`, or an AbortError once `signal` aborts, whichever comes first (what `promise` does is left to others waiting on it). */
function untilAborted<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError());
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function abortError(): Error {
  return Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

async function readText(answer: Answer): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer.body as AsyncIterable<Buffer>) {
    answer.touch();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
