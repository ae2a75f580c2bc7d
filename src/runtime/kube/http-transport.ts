/**
 * JSON over HTTP(S) to the API server: one keep-alive connection pool, the
 * credentials on every request, and watch streams read line by line. Nothing is
 * converted: objects come and go as the server writes them (timestamps stay RFC 3339
 * strings). node:https (and with it OpenSSL's setup) is loaded only for an https server.
 */
import type { Agent as HttpAgent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import * as http from 'node:http';
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

/** One line of a watch stream: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, and the object. */
export type WatchEventHandler = (type: string, object: unknown) => void;

const USER_AGENT = 'local-volume-provisioner';

export class HttpTransport {
  private readonly base: URL;
  private readonly credentials: Credentials;
  private readonly tlsModule?: typeof import('node:https');
  private agent?: { tls: TlsOptions; agent: HttpAgent };

  constructor(config: KubeConfigData) {
    const { cluster, user } = currentContext(config);
    this.base = new URL(cluster.server);
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') {
      throw new Error(`kubeconfig cluster "${cluster.name}": server "${cluster.server}" is not an http or https URL`);
    }
    this.credentials = new Credentials(cluster, user);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    if (this.base.protocol === 'https:') this.tlsModule = require('node:https') as typeof import('node:https');
  }

  /** Sends the request and answers the parsed JSON body (undefined when empty); a status >= 400 throws HttpStatusError. */
  async request<T>(request: HttpRequest): Promise<T> {
    const response = await this.open(request);
    const text = await readText(response);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /**
   * Opens a watch and calls `onEvent` for each event until the server ends the stream
   * (resolves) or the connection breaks (rejects). Aborting `request.signal` ends it
   * quietly. `onOpen` is told once the server has accepted the watch.
   */
  async watch(request: HttpRequest, onEvent: WatchEventHandler, onOpen: () => void = () => {}): Promise<void> {
    const response = await this.open(request);
    onOpen();
    response.setEncoding('utf8');
    let partial = '';
    try {
      for await (const chunk of response as AsyncIterable<string>) {
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

  /** Closes the connections kept open for reuse. */
  close(): void {
    this.agent?.agent.destroy();
    this.agent = undefined;
  }

  /** Sends the request; answers the response once its status is below 400. A 401 with renewable credentials is tried once more. */
  private async open(request: HttpRequest, renewed = false): Promise<IncomingMessage> {
    const credentials = await this.credentials.forRequest();
    const response = await this.send(request, credentials.headers, this.agentFor(credentials.tls));
    if (response.statusCode! < 400) return response;
    const body = await readText(response);
    if (response.statusCode === 401 && this.credentials.renewable && !renewed) {
      this.credentials.renew();
      return this.open(request, true);
    }
    throw new HttpStatusError(response.statusCode!, body, response.headers);
  }

  private send(request: HttpRequest, credentialHeaders: Readonly<Record<string, string>>, agent: HttpAgent): Promise<IncomingMessage> {
    const url = new URL(request.path, this.base);
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const body = request.body === undefined ? undefined : JSON.stringify(request.body);
    const headers: http.OutgoingHttpHeaders = { 'Accept': 'application/json', 'User-Agent': USER_AGENT, ...credentialHeaders };
    if (body !== undefined) {
      headers['Content-Type'] = request.contentType ?? 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    const module = this.tlsModule ?? http;
    const signal = request.signal;
    return new Promise((resolve, reject) => {
      signal?.throwIfAborted();
      let response: IncomingMessage | undefined;
      const req = module.request(url, { method: request.method, headers, agent }, (res) => {
        response = res;
        resolve(res);
      });
      // Not http's `signal` option: an abort once the whole answer is in must do nothing
      // (destroying then would raise an 'error' that no reader listens to any more).
      const onAbort = () => {
        if (!response?.complete) req.destroy(Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.once('close', () => signal?.removeEventListener('abort', onAbort));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** One keep-alive agent; made anew only when the CA or the client certificate changes (a rotation). */
  private agentFor(tls: TlsOptions): HttpAgent {
    const current = this.agent;
    if (current && current.tls.ca === tls.ca && current.tls.cert === tls.cert && current.tls.key === tls.key) return current.agent;
    current?.agent.destroy();
    const agent = this.tlsModule ? new this.tlsModule.Agent({ ...tls, keepAlive: true }) : new http.Agent({ keepAlive: true });
    this.agent = { tls, agent };
    return agent;
  }
}

async function readText(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}
