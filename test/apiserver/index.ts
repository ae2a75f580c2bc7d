/**
 * A test Kubernetes API server on 127.0.0.1, spoken to over HTTP by the real
 * `@kubernetes/client-node` and `kubectl`. See the README of issue 3 and the
 * files next to this one: resources, store, watch, selectors, patch, validation,
 * defaults, registry, controllers, auth, rbac, discovery, table, faults,
 * counters and http.
 */
import { writeFileSync } from 'node:fs';
import { Server, createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { ADMIN, Authenticator } from './auth';
import { BOOTSTRAP_OBJECTS } from './bootstrap';
import { ControllerSwitches, Controllers } from './controllers';
import { Counters } from './counters';
import { Faults } from './faults';
import { HttpHandler } from './http';
import { Denial, RbacAuthorizer } from './rbac';
import { Registry } from './registry';
import { ResourceType, resourceForKind } from './resources';
import { Store, cloneObject } from './store';
import { servingCertificate } from './tls';
import { WatchHub } from './watch';

export type { ControllerSwitches } from './controllers';
export type { Count, Counters } from './counters';
export type { FailureSpec, Faults } from './faults';
export type { Denial } from './rbac';

export interface TestApiServerOptions {
  /** Port to listen on (127.0.0.1). @default 0 (a free port) */
  readonly port?: number;
  /** Enforce RBAC from the Roles, ClusterRoles and bindings stored in the server. @default false */
  readonly rbac?: boolean;
  /**
   * Serve HTTPS with a self-signed certificate (the kubeconfig carries its CA).
   * kubectl sends its token only over TLS, so kubectl under RBAC needs this;
   * client-node sends it either way. @default false
   */
  readonly tls?: boolean;
  /** How many changes the watch history keeps before older resourceVersions get 410 Gone. @default 10000 */
  readonly historyLimit?: number;
  /** How often watches that allow bookmarks get a BOOKMARK event. @default 1000 */
  readonly bookmarkIntervalMs?: number;
  /** Controllers to switch off (or on) from the start. @default all on */
  readonly controllers?: Partial<ControllerSwitches>;
}

export interface TestApiServer {
  /** `http://127.0.0.1:<port>` (`https://` with `tls`). */
  readonly url: string;
  /** Latency, injected failures, dropped watches, compaction. */
  readonly faults: Faults;
  /** Requests and bytes sent per verb and resource. */
  readonly counters: Counters;
  /** Controller switches; change them at any time. */
  readonly controllers: ControllerSwitches;
  /** Requests RBAC denied (only with `rbac: true`). */
  readonly rbacDenials: readonly Denial[];
  /** Errors controllers met while writing (normally none). */
  readonly controllerErrors: readonly Error[];
  /** How many watches are open. */
  readonly openWatches: number;
  /** A client-node KubeConfig for `user` (a user name such as `system:serviceaccount:ns:sa`). @default the admin user */
  kubeConfig(user?: string): KubeConfig;
  /** Writes a kubeconfig file that kubectl and client-node accept. */
  writeKubeconfig(file: string, user?: string): void;
  /** The bearer token that authenticates as `user`. */
  tokenFor(user: string): string;
  /** Stops listening and drops every connection; the state stays. */
  stop(): Promise<void>;
  /** Stops (if running) and listens again on the same port with the same state. */
  restart(): Promise<void>;
  /** Creates an object directly (no HTTP), through defaulting, admission and validation. */
  create<T = any>(obj: object): T;
  /** Reads an object directly, or undefined. */
  get<T = any>(apiVersion: string, kind: string, name: string, namespace?: string): T | undefined;
  /** Lists objects directly, in key order. */
  list<T = any>(apiVersion: string, kind: string, namespace?: string): T[];
  /** Deletes an object directly, as a DELETE would (finalizers hold it, propagation as the kind defaults). */
  delete(apiVersion: string, kind: string, name: string, namespace?: string): void;
  /** Binds a claim to a volume as the PV controller would (both become Bound). */
  bindClaim(pvName: string, claim: { namespace: string; name: string }): void;
  /** Marks a Job succeeded (`Complete`) or `Failed`, as its pod finishing would. */
  finishJob(namespace: string, name: string, outcome: 'Complete' | 'Failed', message?: string): void;
}

class Instance implements TestApiServer {
  readonly faults: Faults;
  readonly counters = new Counters();
  private readonly store: Store;
  private readonly registry: Registry;
  private readonly hub: WatchHub;
  private readonly ctl: Controllers;
  private readonly auth = new Authenticator();
  private readonly rbac?: RbacAuthorizer;
  private readonly handler: HttpHandler;
  private server?: Server;
  private port: number;
  private readonly tls: boolean;

  constructor(options: TestApiServerOptions) {
    this.store = new Store({ historyLimit: options.historyLimit });
    this.registry = new Registry(this.store);
    this.hub = new WatchHub(this.store, { bookmarkIntervalMs: options.bookmarkIntervalMs });
    this.ctl = new Controllers(this.store, this.registry);
    Object.assign(this.ctl.switches, options.controllers ?? {});
    this.faults = new Faults(() => this.hub.closeAll(), () => this.store.compact());
    this.rbac = options.rbac ? new RbacAuthorizer(this.store) : undefined;
    this.port = options.port ?? 0;
    this.tls = options.tls ?? false;
    this.handler = new HttpHandler({
      store: this.store,
      registry: this.registry,
      hub: this.hub,
      faults: this.faults,
      counters: this.counters,
      auth: this.auth,
      rbac: this.rbac,
      serverAddress: () => `127.0.0.1:${this.port}`,
    });
    for (const obj of BOOTSTRAP_OBJECTS) this.create(obj);
  }

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  get controllers(): ControllerSwitches {
    return this.ctl.switches;
  }

  get controllerErrors(): readonly Error[] {
    return this.ctl.errors;
  }

  get rbacDenials(): readonly Denial[] {
    return this.rbac?.denials ?? [];
  }

  get openWatches(): number {
    return this.hub.size;
  }

  async listen(): Promise<void> {
    const server = this.tls
      ? createTlsServer({ ...servingCertificate(), keepAlive: true }, this.handler.handle)
      : createServer({ keepAlive: true }, this.handler.handle);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.hub.closeAll();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.listen();
  }

  tokenFor(user: string): string {
    return this.auth.tokenFor(user);
  }

  private kubeconfigText(user = ADMIN): string {
    return stringify({
      'apiVersion': 'v1',
      'kind': 'Config',
      'clusters': [{ name: 'test-apiserver', cluster: { server: this.url, ...this.trust() } }],
      'users': [{ name: user, user: { token: this.tokenFor(user) } }],
      'contexts': [{ name: 'test-apiserver', context: { cluster: 'test-apiserver', user, namespace: 'default' } }],
      'current-context': 'test-apiserver',
      'preferences': {},
    });
  }

  /**
   * How the kubeconfig trusts the server: the CA of its certificate, or for
   * plain HTTP the skip flag without which client-node refuses http (kubectl
   * ignores it there).
   */
  private trust(): Record<string, unknown> {
    if (this.tls) return { 'certificate-authority-data': Buffer.from(servingCertificate().cert).toString('base64') };
    return { 'insecure-skip-tls-verify': true };
  }

  kubeConfig(user?: string): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromString(this.kubeconfigText(user));
    return kc;
  }

  writeKubeconfig(file: string, user?: string): void {
    writeFileSync(file, this.kubeconfigText(user), { mode: 0o600 });
  }

  private resource(apiVersion: string, kind: string): ResourceType {
    const r = resourceForKind(apiVersion, kind);
    if (!r) throw new Error(`the test API server does not serve ${apiVersion} ${kind}`);
    return r;
  }

  create<T = any>(obj: object): T {
    const o = obj as any;
    const r = this.resource(o.apiVersion, o.kind);
    // As over HTTP, the server works on its own copy: defaulting must not reach into the caller's object.
    return cloneObject(this.registry.create(r, o.metadata?.namespace, structuredClone(o)));
  }

  get<T = any>(apiVersion: string, kind: string, name: string, namespace?: string): T | undefined {
    const e = this.store.get(this.resource(apiVersion, kind), namespace, name);
    return e ? cloneObject(e) : undefined;
  }

  list<T = any>(apiVersion: string, kind: string, namespace?: string): T[] {
    return this.store.list(this.resource(apiVersion, kind), namespace).map((e) => cloneObject(e));
  }

  delete(apiVersion: string, kind: string, name: string, namespace?: string): void {
    this.registry.delete(this.resource(apiVersion, kind), namespace, name);
  }

  bindClaim(pvName: string, claim: { namespace: string; name: string }): void {
    this.ctl.bindClaim(pvName, claim);
  }

  finishJob(namespace: string, name: string, outcome: 'Complete' | 'Failed', message?: string): void {
    this.ctl.finishJob(namespace, name, outcome, message);
  }
}

/** Starts a test API server on 127.0.0.1. */
export async function startTestApiServer(options: TestApiServerOptions = {}): Promise<TestApiServer> {
  const s = new Instance(options);
  await s.listen();
  return s;
}
