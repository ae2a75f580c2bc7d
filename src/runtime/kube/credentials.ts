/**
 * Who we are to the API server, per request: a bearer token (fixed, from a file the
 * kubelet rotates, or from an exec plugin), a client certificate, or basic auth; and
 * how we check the server (CA, server name, or not at all).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import { KubeConfigCluster, KubeConfigUser } from './kubeconfig';

/** TLS settings of the connection, as node:https takes them. */
export interface TlsOptions {
  readonly ca?: Buffer;
  readonly cert?: Buffer | string;
  readonly key?: Buffer | string;
  readonly rejectUnauthorized: boolean;
  readonly servername?: string;
}

/** What one request carries: headers, and the client certificate its connection presents. */
export interface RequestCredentials {
  readonly headers: Readonly<Record<string, string>>;
  readonly tls: TlsOptions;
}

/** A token file is re-read after this long, as client-go does: the kubelet rotates it well before it expires. */
const TOKEN_FILE_MAX_AGE_MS = 60_000;
/**
 * CA and client certificate files are re-read after this long, as client-go's transport
 * reloads them (cert_rotation.go and ca_rotation.go, every 5 minutes): a rotated
 * certificate is used without a restart.
 */
const TLS_FILE_MAX_AGE_MS = 5 * 60_000;
/** An exec credential is renewed this long before its expirationTimestamp. */
const EXEC_EXPIRY_MARGIN_MS = 10_000;
const EXEC_TIMEOUT_MS = 60_000;

interface ExecCredential {
  readonly token?: string;
  readonly cert?: string;
  readonly key?: string;
  /** Epoch ms; undefined: valid until the server says otherwise (401). */
  readonly expiresAt?: number;
}

export class Credentials {
  private baseTls: TlsOptions;
  private tlsReadAt: number;
  private readonly staticHeaders: Record<string, string> = {};
  private fileToken?: { value: string; readAt: number };
  private exec?: Promise<ExecCredential>;

  constructor(private readonly cluster: KubeConfigCluster, private readonly user: KubeConfigUser, private readonly now: () => number = Date.now) {
    const where = `kubeconfig user "${user.name}"`;
    if (user.authProvider) {
      throw new Error(`${where}: auth-provider "${user.authProvider.name ?? '?'}" is not supported; use a token, a client certificate or an exec plugin`);
    }
    if (cluster.proxyUrl) throw new Error(`kubeconfig cluster "${cluster.name}": proxy-url is not supported`);
    this.baseTls = this.readTls();
    this.tlsReadAt = now();
    if (user.token) this.staticHeaders.Authorization = `Bearer ${user.token}`;
    else if (user.username !== undefined) this.staticHeaders.Authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
    if (user.impersonateUser) this.staticHeaders['Impersonate-User'] = user.impersonateUser;
  }

  /** True when a 401 may be cured by fetching the credentials again (a rotated file, an expired exec token). */
  get renewable(): boolean {
    return !this.user.token && (this.user.tokenFile !== undefined || this.user.exec !== undefined);
  }

  async forRequest(): Promise<RequestCredentials> {
    this.refreshTlsFiles();
    if (!this.user.token && this.user.tokenFile) {
      return { headers: { ...this.staticHeaders, Authorization: `Bearer ${this.readTokenFile()}` }, tls: this.baseTls };
    }
    if (!this.user.token && this.user.exec) {
      const credential = await this.execCredential();
      const headers = credential.token ? { ...this.staticHeaders, Authorization: `Bearer ${credential.token}` } : this.staticHeaders;
      const tls = credential.cert && credential.key ? { ...this.baseTls, cert: credential.cert, key: credential.key } : this.baseTls;
      return { headers, tls };
    }
    return { headers: this.staticHeaders, tls: this.baseTls };
  }

  /** The server refused the credentials (401): fetch them anew for the next request. */
  renew(): void {
    this.fileToken = undefined;
    this.exec = undefined;
  }

  /** The connection's TLS settings, PEM read from the kubeconfig's data or files (an error names the unreadable one). */
  private readTls(): TlsOptions {
    const { cluster, user } = this;
    const where = `kubeconfig user "${user.name}"`;
    return {
      ca: readPem(cluster.caFile, cluster.caData, `kubeconfig cluster "${cluster.name}" certificate-authority`),
      cert: readPem(user.certFile, user.certData, `${where} client-certificate`),
      key: readPem(user.keyFile, user.keyData, `${where} client-key`),
      rejectUnauthorized: !cluster.skipTLSVerify,
      servername: cluster.tlsServerName,
    };
  }

  /**
   * Re-reads CA and client certificate files once they are TLS_FILE_MAX_AGE_MS old. The
   * settings change (and so the connection: see http-transport's agentFor) only when a
   * file's content did; a file unreadable mid-rotation leaves the last settings.
   */
  private refreshTlsFiles(): void {
    const { cluster, user } = this;
    if (!cluster.caFile && !user.certFile && !user.keyFile) return;
    if (this.now() - this.tlsReadAt < TLS_FILE_MAX_AGE_MS) return;
    this.tlsReadAt = this.now();
    let fresh: TlsOptions;
    try {
      fresh = this.readTls();
    } catch {
      return;
    }
    const same = (a: Buffer | string | undefined, b: Buffer | string | undefined) =>
      a === b || (a !== undefined && b !== undefined && Buffer.from(a).equals(Buffer.from(b)));
    const old = this.baseTls;
    if (same(old.ca, fresh.ca) && same(old.cert, fresh.cert) && same(old.key, fresh.key)) return;
    this.baseTls = fresh;
  }

  private readTokenFile(): string {
    const cached = this.fileToken;
    if (cached && this.now() - cached.readAt < TOKEN_FILE_MAX_AGE_MS) return cached.value;
    try {
      const value = fs.readFileSync(this.user.tokenFile!, 'utf8').trim();
      this.fileToken = { value, readAt: this.now() };
      return value;
    } catch (err) {
      // A rotation in progress (or a brief hiccup): the last token is better than none.
      if (cached) return cached.value;
      throw new Error(`kubeconfig user "${this.user.name}": token file ${this.user.tokenFile} cannot be read: ${(err as Error).message}`);
    }
  }

  private async execCredential(): Promise<ExecCredential> {
    if (this.exec) {
      const current = await this.exec.catch(() => undefined);
      if (current && (current.expiresAt === undefined || current.expiresAt - EXEC_EXPIRY_MARGIN_MS > this.now())) return current;
      this.exec = undefined;
    }
    const running = runExecPlugin(this.user, this.cluster);
    this.exec = running;
    // A failed run is not cached: the next request runs the plugin again.
    running.catch(() => {
      if (this.exec === running) this.exec = undefined;
    });
    return running;
  }
}

/** Runs the kubeconfig's exec plugin (client.authentication.k8s.io ExecCredential) and reads its status. */
async function runExecPlugin(user: KubeConfigUser, cluster: KubeConfigCluster): Promise<ExecCredential> {
  const exec = user.exec!;
  const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1';
  const spec: Record<string, unknown> = { interactive: false };
  if (exec.provideClusterInfo) {
    spec.cluster = { 'server': cluster.server, 'tls-server-name': cluster.tlsServerName, 'insecure-skip-tls-verify': cluster.skipTLSVerify };
  }
  const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion, kind: 'ExecCredential', spec }) };
  for (const e of exec.env ?? []) env[e.name] = e.value;
  const where = `kubeconfig user "${user.name}": exec plugin "${exec.command}"`;
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(exec.command, [...exec.args ?? []], { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: 1024 * 1024 }, (err, out, errOut) => {
      if (err) reject(new Error(`${where} failed: ${String(errOut).trim() || err.message}`));
      else resolve(String(out));
    });
  });
  let status: Record<string, unknown> | undefined;
  try {
    status = (JSON.parse(stdout) as { status?: Record<string, unknown> }).status;
  } catch {
    throw new Error(`${where} printed no ExecCredential JSON`);
  }
  const token = typeof status?.token === 'string' ? status.token : undefined;
  const cert = typeof status?.clientCertificateData === 'string' ? status.clientCertificateData : undefined;
  const key = typeof status?.clientKeyData === 'string' ? status.clientKeyData : undefined;
  if (!token && !(cert && key)) throw new Error(`${where} returned neither a token nor a client certificate and key`);
  const expiry = typeof status?.expirationTimestamp === 'string' ? Date.parse(status.expirationTimestamp) : NaN;
  return { token, cert, key, expiresAt: Number.isNaN(expiry) ? undefined : expiry };
}

function readPem(file: string | undefined, base64: string | undefined, what: string): Buffer | undefined {
  if (base64) return Buffer.from(base64, 'base64');
  if (!file) return undefined;
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new Error(`${what} ${file} cannot be read: ${(err as Error).message}`);
  }
}
