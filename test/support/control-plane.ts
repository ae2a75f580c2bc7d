/**
 * A real Kubernetes control plane on loopback for the tests: etcd and kube-apiserver
 * (RBAC, ServiceAccount tokens, real validation and admission), and where a suite needs
 * binding, kube-controller-manager and kube-scheduler. The binaries are Kubernetes' own,
 * built from the Go module proxy by scripts/control-plane.sh (control-plane/), which the
 * test task runs first; the certificates are made here with openssl.
 *
 * Fault injection the real server does not make belongs in a proxy in front of it, never
 * in a second server.
 */
import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { AuthenticationV1TokenRequest, CoreV1Api, KubeConfig } from '@kubernetes/client-node';

const REPO = path.resolve(__dirname, '../..');
const STARTUP_TIMEOUT_MS = 120_000;
/** The administrator's static token (--token-auth-file): the control plane is the test's own, on loopback. */
export const ADMIN_TOKEN = 'lvp-test-admin-token';

/** The directory of the control plane's binaries, built on first use (scripts/control-plane.sh). */
export function controlPlaneBinaries(): string {
  return execFileSync(path.join(REPO, 'scripts/control-plane.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** A TCP port free on 127.0.0.1 now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** The address a node VM (qemu's user networking) reaches this machine's loopback at. */
export const HOST_FROM_NODE_VM = '10.0.2.2';
/** The kubernetes Service's address, which pods reach the apiserver at (a node VM routes it to HOST_FROM_NODE_VM). */
export const KUBERNETES_SERVICE_IP = '10.96.0.1';

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A key and a certificate signed by the plane's CA, as `<name>.key` and `<name>.crt` in `dir`. */
function signedCertificate(dir: string, name: string, subject: string, extensions: string): void {
  openssl(['req', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
  fs.writeFileSync(path.join(dir, `${name}.ext`), extensions);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '3',
    '-extfile', `${name}.ext`], dir);
}

/**
 * A CA, the apiserver's serving certificate for 127.0.0.1 (and, where node VMs join, for
 * the addresses they and their pods reach it at), an admin client certificate
 * (system:masters), a ServiceAccount signing key.
 */
function makeCertificates(dir: string, nodes: boolean): void {
  openssl(['req', '-x509', ...EC_KEY, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=lvp-test-ca', '-days', '3'], dir);
  const nodeAddresses = nodes ? `,IP:${HOST_FROM_NODE_VM},IP:${KUBERNETES_SERVICE_IP}` : '';
  signedCertificate(dir, 'serving', '/CN=kube-apiserver', `subjectAltName=IP:127.0.0.1,DNS:localhost${nodeAddresses}\nextendedKeyUsage=serverAuth\n`);
  signedCertificate(dir, 'admin', '/O=system:masters/CN=lvp-test-admin', 'extendedKeyUsage=clientAuth\n');
  // The administrator's bearer token too, for clients behind a proxy, which passes tokens on but cannot pass on a client certificate.
  fs.writeFileSync(path.join(dir, 'tokens.csv'), `${ADMIN_TOKEN},lvp-test-admin,lvp-test-admin,"system:masters"\n`);
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'sa.key'], dir);
  openssl(['ec', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
}

/**
 * One component's process, its output appended to its log. A supervised one is started
 * again when it exits, as kubelet restarts a static pod: the controller manager exits when
 * the apiserver goes away while it starts, and a test that restarts the apiserver must not
 * lose it.
 */
class Component {
  private child!: ChildProcess;
  private exited!: Promise<number | null>;
  private stopping = false;

  constructor(readonly name: string, private readonly binary: string, private readonly args: string[], private readonly logFile: string,
    private readonly supervised = false) {
    this.spawn();
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts it again after stop(). */
  start(): void {
    this.stopping = false;
    if (!this.running) this.spawn();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await this.exited;
    clearTimeout(timer);
  }

  private spawn(): void {
    const log = fs.openSync(this.logFile, 'a');
    this.child = spawn(this.binary, this.args, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => {
      resolve(code);
      if (this.supervised && !this.stopping) setTimeout(() => this.stopping || this.spawn(), 1000);
    }));
  }
}

export interface ControlPlaneOptions {
  /** Also run kube-controller-manager (PV binder, garbage collector, ...) and kube-scheduler. @default false */
  readonly controllers?: boolean;
  /** Install the Prometheus operator's ServiceMonitor and PrometheusRule CRDs (its own, from its Go module). @default false */
  readonly monitoringCrds?: boolean;
  /** Keep the audit log denials() reads (every request written before it is answered). The bench leaves it out. @default true */
  readonly audit?: boolean;
  /**
   * Real nodes join (test/support/node-vm.ts): the serving certificate names the addresses
   * a VM and its pods reach the apiserver at, kubelets get client certificates
   * (nodeCredentials) under NodeRestriction, the apiserver reaches each kubelet (logs,
   * exec) through a tunnel to the port its VM forwards, and the controller manager runs
   * the node lifecycle controllers (a Ready node loses its not-ready taint). Implies controllers.
   * @default false
   */
  readonly nodes?: boolean;
}

/** The fields of an audit log line that denials() reads. */
interface AuditEvent {
  readonly stage: string;
  readonly verb: string;
  readonly user: { readonly username: string };
  readonly objectRef?: { readonly resource?: string; readonly subresource?: string; readonly apiGroup?: string; readonly name?: string };
  readonly annotations?: Readonly<Record<string, string>>;
  readonly responseStatus?: { readonly message?: string };
}

/** A request the apiserver's authorizer (RBAC) refused, from its audit log. */
export interface Denial {
  readonly user: string;
  readonly verb: string;
  readonly apiGroup: string;
  readonly resource: string;
  /** The object's name, '' for a request about a collection. */
  readonly name: string;
}

/** A request admission refused (a 403 the authorizer allowed: an admission policy's, such as the claim guard's), from the audit log. */
export interface AdmissionRefusal extends Denial {
  readonly message: string;
}

export class ControlPlane {
  /** Starts etcd and kube-apiserver (and the controllers when asked) and waits until the apiserver is ready. */
  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const bin = controlPlaneBinaries();
    // Not a makeTempDir(): suites remove those in their afterAll, while this plane may outlive a describe block.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-control-plane-'));
    const nodes = options.nodes ?? false;
    makeCertificates(dir, nodes);
    const tunnel = nodes ? await KubeletTunnel.start(path.join(dir, 'kubelet-tunnel.sock')) : undefined;
    const plane = new ControlPlane(bin, dir, await freePort(), await freePort(), await freePort(), options.audit ?? true, tunnel);
    try {
      plane.startEtcd();
      await plane.startApiServer();
      if (options.monitoringCrds) await plane.installCrds();
      if (options.controllers || nodes) plane.startControllers();
    } catch (e) {
      await plane.stop();
      throw e;
    }
    return plane;
  }

  private etcd?: Component;
  private apiserver?: Component;
  private readonly controllers: Component[] = [];

  private constructor(
    private readonly bin: string,
    /** Certificates, data and each component's log. */
    readonly dir: string,
    private readonly etcdPort: number,
    private readonly etcdPeerPort: number,
    readonly port: number,
    private readonly audit: boolean,
    /** How the apiserver reaches node VMs' kubelets, where nodes join. */
    private readonly tunnel?: KubeletTunnel,
  ) {}

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** The path of one of the plane's binaries (the kubelet among them, for node VMs). */
  binary(name: string): string {
    return path.join(this.bin, name);
  }

  /** The apiserver's log so far (for failure messages). */
  log(component = 'kube-apiserver'): string {
    const file = path.join(this.dir, `${component}.log`);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  }

  /** A kubeconfig as the test's administrator (system:masters), or as `token`'s owner. */
  kubeConfig(token?: string): KubeConfig {
    const kc = new KubeConfig();
    const read = (name: string) => fs.readFileSync(path.join(this.dir, name)).toString('base64');
    kc.loadFromOptions({
      clusters: [{ name: 'test', server: this.url, caData: read('ca.crt') }],
      users: [token !== undefined ? { name: 'user', token } : { name: 'user', certData: read('admin.crt'), keyData: read('admin.key') }],
      contexts: [{ name: 'test', cluster: 'test', user: 'user' }],
      currentContext: 'test',
    });
    return kc;
  }

  /** Writes kubeConfig(token) to `file`, for a process such as the agent. */
  writeKubeconfig(file: string, token?: string): void {
    fs.writeFileSync(file, this.kubeConfig(token).exportConfig());
  }

  /** A real token of ServiceAccount `namespace/name` (TokenRequest), so RBAC applies to what it does. */
  async serviceAccountToken(namespace: string, name: string): Promise<string> {
    const core = this.kubeConfig().makeApiClient(CoreV1Api);
    const request: AuthenticationV1TokenRequest = { spec: { audiences: ['https://kubernetes.default.svc'], expirationSeconds: 3600 } };
    const answer = await core.createNamespacedServiceAccountToken({ name, namespace, body: request });
    return answer.status!.token;
  }

  /** The apiserver's version, as `/version` says. */
  async version(): Promise<string> {
    const { status, body } = await this.get('/version');
    if (status !== 200) throw new Error(`/version answered ${status}`);
    return (JSON.parse(body) as { gitVersion: string }).gitVersion;
  }

  /** Stops and starts kube-apiserver again on the same port and etcd, as an upgrade or a crash would. */
  async restartApiServer(): Promise<void> {
    await this.stopApiServer();
    await this.startApiServer();
  }

  /** Stops kube-apiserver (etcd and the controllers stay): an outage, until startApiServer(). */
  async stopApiServer(): Promise<void> {
    await this.apiserver?.stop();
  }

  /** Stops the controller manager and scheduler (the apiserver stays): a controller lagging behind, for as long as a test needs. */
  async pauseControllers(): Promise<void> {
    for (const c of [...this.controllers].reverse()) await c.stop();
  }

  /** Starts the controller manager and scheduler again after pauseControllers(). */
  resumeControllers(): void {
    for (const c of this.controllers) c.start();
  }

  async stop(): Promise<void> {
    for (const c of this.controllers.splice(0).reverse()) await c.stop();
    await this.apiserver?.stop();
    await this.etcd?.stop();
    this.tunnel?.close();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /**
   * A kubelet's client certificate and key (CN=system:node:<node>, O=system:nodes: the
   * Node authorizer and NodeRestriction apply), and the CA, as PEM text; where nodes join.
   */
  nodeCredentials(node: string): { readonly cert: string; readonly key: string; readonly ca: string } {
    if (!this.tunnel) throw new Error('this control plane was started without nodes: true');
    const name = `node-${node}`;
    signedCertificate(this.dir, name, `/O=system:nodes/CN=system:node:${node}`, 'extendedKeyUsage=clientAuth\n');
    return this.credentials(name);
  }

  /**
   * The administrator's client certificate and key (system:masters) and the CA, as PEM text: for a client that is not
   * given a kubeconfig, such as a request to a node's kubelet (whose webhook authorization asks the apiserver).
   */
  adminCredentials(): { readonly cert: string; readonly key: string; readonly ca: string } {
    return this.credentials('admin');
  }

  /** The client certificate `<name>.crt` and key made in this plane's directory, and the CA, as PEM text. */
  private credentials(name: string): { readonly cert: string; readonly key: string; readonly ca: string } {
    const read = (file: string) => fs.readFileSync(path.join(this.dir, file), 'utf8');
    return { cert: read(`${name}.crt`), key: read(`${name}.key`), ca: read('ca.crt') };
  }

  /** Where the apiserver reaches node `node`'s kubelet from now on: this machine's loopback port its VM forwards to it. */
  routeKubelet(node: string, port: number): void {
    if (!this.tunnel) throw new Error('this control plane was started without nodes: true');
    this.tunnel.route(node, port);
  }

  /** The requests the authorizer refused so far (the audit log's), each kind once, optionally only those of `user`. */
  denials(user?: string): Denial[] {
    if (!this.audit) throw new Error('denials() reads the audit log, which this control plane was started without (audit: false)');
    const file = path.join(this.dir, 'audit.log');
    if (!fs.existsSync(file)) return [];
    const seen = new Map<string, Denial>();
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (!line.includes('"code":403')) continue;
      const event = JSON.parse(line) as AuditEvent;
      // An admission policy's refusal is a 403 too (the claim guard's, which the agent's dry-run probe expects): not RBAC's.
      if (event.stage !== 'ResponseComplete' || event.annotations?.['authorization.k8s.io/decision'] !== 'forbid') continue;
      const ref = event.objectRef;
      // A subresource is named as RBAC names it: persistentvolumeclaims/status.
      const resource = ref?.subresource ? `${ref.resource}/${ref.subresource}` : ref?.resource ?? '';
      const denial = { user: event.user.username, verb: event.verb, apiGroup: ref?.apiGroup ?? '', resource, name: ref?.name ?? '' };
      if (user === undefined || denial.user === user) seen.set(JSON.stringify(denial), denial);
    }
    return [...seen.values()];
  }

  /** The requests admission refused so far (the authorizer allowed them), in order, optionally only those of `user`. */
  admissionRefusals(user?: string): AdmissionRefusal[] {
    const refused: AdmissionRefusal[] = [];
    for (const event of this.forbiddenAuditEvents()) {
      if (event.annotations?.['authorization.k8s.io/decision'] !== 'allow') continue;
      const ref = event.objectRef;
      const resource = ref?.subresource ? `${ref.resource}/${ref.subresource}` : ref?.resource ?? '';
      const refusal = { user: event.user.username, verb: event.verb, apiGroup: ref?.apiGroup ?? '', resource, name: ref?.name ?? '', message: event.responseStatus?.message ?? '' };
      if (user === undefined || refusal.user === user) refused.push(refusal);
    }
    return refused;
  }

  /** The audit log's answers 403 (ResponseComplete). */
  private forbiddenAuditEvents(): AuditEvent[] {
    if (!this.audit) throw new Error('the audit log is read only where this control plane was started with it (audit: true)');
    const file = path.join(this.dir, 'audit.log');
    if (!fs.existsSync(file)) return [];
    return fs.readFileSync(file, 'utf8').split('\n').filter((line) => line.includes('"code":403'))
      .map((line) => JSON.parse(line) as AuditEvent).filter((event) => event.stage === 'ResponseComplete');
  }

  private startEtcd(): void {
    this.etcd = new Component('etcd', path.join(this.bin, 'etcd'), [
      `--data-dir=${path.join(this.dir, 'etcd')}`,
      `--listen-client-url=http://127.0.0.1:${this.etcdPort}`,
      `--listen-peer-url=http://127.0.0.1:${this.etcdPeerPort}`,
      // A test's data need not survive a power cut: without an fsync per write, a create costs the apiserver's work, not the disk's.
      '--unsafe-no-fsync',
    ], path.join(this.dir, 'etcd.log'));
  }

  /** Starts kube-apiserver (again) and waits until it is ready. */
  async startApiServer(): Promise<void> {
    const file = (name: string) => path.join(this.dir, name);
    fs.writeFileSync(file('audit-policy.yaml'), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n  - level: Metadata\n');
    this.apiserver = new Component('kube-apiserver', path.join(this.bin, 'kube-apiserver'), [
      `--etcd-servers=http://127.0.0.1:${this.etcdPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      // The kubernetes Service's endpoints would name a loopback address, which 1.37 refuses; no pod needs it here.
      '--endpoint-reconciler-type=none',
      `--secure-port=${this.port}`,
      `--tls-cert-file=${file('serving.crt')}`,
      `--tls-private-key-file=${file('serving.key')}`,
      `--client-ca-file=${file('ca.crt')}`,
      `--token-auth-file=${file('tokens.csv')}`,
      `--service-account-key-file=${file('sa.pub')}`,
      `--service-account-signing-key-file=${file('sa.key')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      '--api-audiences=https://kubernetes.default.svc',
      '--authorization-mode=Node,RBAC',
      '--service-cluster-ip-range=10.96.0.0/16',
      '--allow-privileged=true',
      '--profiling=false',
      // Real kubelets: each may write only its own Node and pods, and is reached (logs, exec) through the tunnel to its VM.
      ...(this.tunnel ? [
        '--enable-admission-plugins=NodeRestriction',
        `--kubelet-client-certificate=${file('admin.crt')}`,
        `--kubelet-client-key=${file('admin.key')}`,
        `--egress-selector-config-file=${this.writeEgressSelector()}`,
      ] : []),
      // Every request's metadata, for denials(): which requests RBAC refused, and to whom.
      ...(this.audit ? [
        `--audit-policy-file=${file('audit-policy.yaml')}`,
        `--audit-log-path=${file('audit.log')}`,
        '--audit-log-format=json',
        '--audit-log-mode=blocking',
      ] : []),
    ], file('kube-apiserver.log'));
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while ((await this.get('/readyz').catch(() => ({ status: 0, body: '' }))).status !== 200) {
      if (!this.apiserver.running) throw new Error(`kube-apiserver exited at start:\n${this.log().slice(-4000)}`);
      if (Date.now() > deadline) throw new Error(`kube-apiserver not ready after ${STARTUP_TIMEOUT_MS} ms:\n${this.log().slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Creates the CRDs the build put beside the binaries, and waits until each is Established.
   * Through kubectl: client-node's typed serializer would drop their `x-kubernetes-*` keys.
   */
  private async installCrds(): Promise<void> {
    const kubeconfig = path.join(this.dir, 'admin.kubeconfig');
    this.writeKubeconfig(kubeconfig);
    const crds = path.join(this.bin, 'crds');
    const kubectl = (...args: string[]) => promisify(execFile)('kubectl', ['--kubeconfig', kubeconfig, ...args], { timeout: STARTUP_TIMEOUT_MS });
    await kubectl('create', '-f', crds);
    await kubectl('wait', '--for=condition=Established', '--timeout=120s', '-f', crds);
  }

  private startControllers(): void {
    const kubeconfig = path.join(this.dir, 'admin.kubeconfig');
    this.writeKubeconfig(kubeconfig);
    const auth = [`--kubeconfig=${kubeconfig}`, `--authentication-kubeconfig=${kubeconfig}`, `--authorization-kubeconfig=${kubeconfig}`];
    this.controllers.push(new Component('kube-controller-manager', path.join(this.bin, 'kube-controller-manager'), [
      ...auth,
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${path.join(this.dir, 'sa.key')}`,
      `--root-ca-file=${path.join(this.dir, 'ca.crt')}`,
      '--leader-elect=false',
      '--secure-port=0',
      // Only what the tests meet (the PV binder and protections, garbage collection, Jobs and their pods,
      // namespaces and their ServiceAccounts): each suite starts a plane, and the others cost CPU for nothing.
      `--controllers=${[
        'persistentvolume-binder', 'persistentvolume-protection', 'persistentvolumeclaim-protection', 'garbage-collector', 'job',
        'pod-garbage-collector', 'namespace', 'serviceaccount', 'root-ca-certificate-publisher',
        // An admission policy's type-checking against the schemas of what it matches, written to its status.
        'validatingadmissionpolicy-status',
        // With real nodes: the workloads that run on them, and a node's not-ready taint taken off once its kubelet says Ready
        // (fake Nodes, with no kubelet, would be tainted for ever).
        ...(this.tunnel ? ['daemonset', 'statefulset', 'deployment', 'replicaset', 'node-lifecycle', 'taint-eviction'] : []),
      ].map((c) => `${c}-controller`).join(',')}`,
      // Its default 20 requests a second is a large cluster's guard; here it made a churn of 50 claims take ~28 s a round.
      '--kube-api-qps=500',
      '--kube-api-burst=1000',
    ], path.join(this.dir, 'kube-controller-manager.log'), true));
    this.controllers.push(new Component('kube-scheduler', path.join(this.bin, 'kube-scheduler'), [
      ...auth, '--leader-elect=false', '--secure-port=0',
    ], path.join(this.dir, 'kube-scheduler.log'), true));
  }

  /** The egress selector that sends the apiserver's connections to kubelets through the tunnel. */
  private writeEgressSelector(): string {
    const file = path.join(this.dir, 'egress-selector.yaml');
    fs.writeFileSync(file, [
      'apiVersion: apiserver.k8s.io/v1beta1',
      'kind: EgressSelectorConfiguration',
      'egressSelections:',
      '- name: cluster',
      '  connection:',
      '    proxyProtocol: HTTPConnect',
      `    transport: {uds: {udsName: ${this.tunnel!.socket}}}`,
      '',
    ].join('\n'));
    return file;
  }

  /** One GET as the administrator. */
  private get(urlPath: string): Promise<{ status: number; body: string }> {
    const { ca, cert, key } = this.adminCredentials();
    return httpsGet(new URL(`${this.url}${urlPath}`), { ca, cert, key }, 5000);
  }
}

/** One HTTPS GET of `url` with `options` (client certificate, CA...): its status and body, or a rejection once `timeoutMs` passed. */
export function httpsGet(url: URL, options: https.RequestOptions, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ...options, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url.href} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/**
 * The apiserver's way to node VMs' kubelets (logs, exec, port-forward): an HTTP CONNECT
 * proxy on a Unix socket (its egress selector's "cluster" connection). The apiserver asks
 * for `<node>:10250`; every VM has the same address behind qemu's user networking, so
 * the proxy connects to the loopback port that the node's VM forwards to its kubelet.
 */
class KubeletTunnel {
  static async start(socket: string): Promise<KubeletTunnel> {
    const tunnel = new KubeletTunnel(socket);
    await new Promise<void>((resolve, reject) => {
      tunnel.server.once('error', reject);
      tunnel.server.listen(socket, resolve);
    });
    return tunnel;
  }

  private readonly ports = new Map<string, number>();
  private readonly server: net.Server;

  private constructor(readonly socket: string) {
    this.server = net.createServer((client) => this.connect(client));
  }

  route(node: string, port: number): void {
    this.ports.set(node, port);
  }

  close(): void {
    this.server.close();
  }

  private connect(client: net.Socket): void {
    client.on('error', () => client.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      client.off('data', onData);
      const [method, target] = head.subarray(0, end).toString('latin1').split('\r\n')[0].split(' ');
      const port = method === 'CONNECT' ? this.ports.get(target.replace(/:\d+$/, '')) : undefined;
      if (port === undefined) {
        client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
        return;
      }
      const kubelet = net.connect(port, '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        const rest = head.subarray(end + 4);
        if (rest.length > 0) kubelet.write(rest);
        client.pipe(kubelet).pipe(client);
      });
      kubelet.on('error', () => client.destroy());
    };
    client.on('data', onData);
  }
}
