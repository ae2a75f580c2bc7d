/**
 * Where the API server is and who we are to it: a kubeconfig file (`--kubeconfig`,
 * `KUBECONFIG`) or the Pod's service account (in-cluster). The model keeps the field
 * names of client-node's KubeConfig, so one of those (the tests' clients) fits as is.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface KubeConfigCluster {
  readonly name: string;
  readonly server: string;
  /** PEM, base64-encoded (`certificate-authority-data`). */
  readonly caData?: string;
  readonly caFile?: string;
  readonly skipTLSVerify?: boolean;
  readonly tlsServerName?: string;
  readonly proxyUrl?: string;
}

/** An exec credential plugin, as the kubeconfig writes it (`users[].user.exec`). */
export interface ExecPluginConfig {
  readonly command: string;
  readonly args?: readonly string[];
  readonly env?: ReadonlyArray<{ readonly name: string; readonly value: string }> | null;
  readonly apiVersion?: string;
  readonly provideClusterInfo?: boolean;
}

export interface KubeConfigUser {
  readonly name: string;
  readonly token?: string;
  /** A file holding the token, re-read as it rotates (client-go's `tokenFile`). */
  readonly tokenFile?: string;
  /** PEM, base64-encoded (`client-certificate-data`). */
  readonly certData?: string;
  readonly certFile?: string;
  readonly keyData?: string;
  readonly keyFile?: string;
  readonly username?: string;
  readonly password?: string;
  readonly exec?: ExecPluginConfig;
  /** Not supported (gcp, azure, oidc); named in the error. */
  readonly authProvider?: { readonly name?: string };
  readonly impersonateUser?: string;
}

export interface KubeConfigContext {
  readonly name: string;
  readonly cluster: string;
  readonly user: string;
  readonly namespace?: string;
}

export interface KubeConfigData {
  readonly clusters: readonly KubeConfigCluster[];
  readonly users: readonly KubeConfigUser[];
  readonly contexts: readonly KubeConfigContext[];
  readonly currentContext: string;
}

/** The cluster and user of the current context. */
export interface KubeContext {
  readonly cluster: KubeConfigCluster;
  readonly user: KubeConfigUser;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The kubeconfig `file` names (a KUBECONFIG list of several is merged: kubeConfigFromFiles),
 * its current cluster's server replaced by `server` when given (as client-go's
 * BuildConfigFromFlags does with a master URL); or the service account when `file` is
 * undefined.
 */
export function loadKubeConfig(file: string | undefined, server?: string): KubeConfigData {
  if (file === undefined) return inClusterConfig();
  const config = kubeConfigFromFiles(file);
  if (!server) return config;
  const current = config.contexts.find((c) => c.name === config.currentContext)?.cluster;
  return { ...config, clusters: config.clusters.map((c) => (c.name === current ? { ...c, server } : c)) };
}

/**
 * The Pod's service account: the API server from KUBERNETES_SERVICE_HOST/PORT, its CA
 * and the projected token, which the kubelet rotates (so it is a file, re-read).
 */
export function inClusterConfig(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): KubeConfigData {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error('not in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset): pass --kubeconfig or set KUBECONFIG');
  }
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return {
    clusters: [{ name: 'in-cluster', server: `https://${hostPart}:${port}`, caFile: path.join(dir, 'ca.crt') }],
    users: [{ name: 'service-account', tokenFile: path.join(dir, 'token') }],
    contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'service-account' }],
    currentContext: 'in-cluster',
  };
}

/**
 * KUBECONFIG as client-go reads it: a list of files (separated by ':'), merged so that the
 * first file to define a cluster, user or context of a name (or a current context) wins;
 * files of the list that do not exist are skipped. One file is read as it is.
 */
export function kubeConfigFromFiles(paths: string): KubeConfigData {
  const files = paths.split(path.delimiter).filter((f) => f !== '');
  if (files.length === 1) return kubeConfigFromFile(files[0]);
  const existing = files.filter((f) => fs.existsSync(f));
  if (existing.length === 0) throw new Error(`kubeconfig: none of the files of ${paths} exists`);
  const configs = existing.map(kubeConfigFromFile);
  return {
    clusters: firstOfEachName(configs.map((c) => c.clusters)),
    users: firstOfEachName(configs.map((c) => c.users)),
    contexts: firstOfEachName(configs.map((c) => c.contexts)),
    currentContext: configs.find((c) => c.currentContext !== '')?.currentContext ?? '',
  };
}

function firstOfEachName<T extends { readonly name: string }>(lists: ReadonlyArray<readonly T[]>): T[] {
  const byName = new Map<string, T>();
  for (const item of lists.flat()) if (!byName.has(item.name)) byName.set(item.name, item);
  return [...byName.values()];
}

/** A kubeconfig file (YAML or JSON); relative file paths in it are relative to its directory. */
export function kubeConfigFromFile(file: string): KubeConfigData {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`kubeconfig ${file} cannot be read: ${(err as Error).message}`);
  }
  try {
    return kubeConfigFromDocument(parseDocument(text), path.dirname(path.resolve(file)));
  } catch (err) {
    throw new Error(`kubeconfig ${file}: ${(err as Error).message}`);
  }
}

/** JSON is YAML too, and needs no parser loaded: the yaml package is loaded only for YAML. */
function parseDocument(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (require('yaml') as typeof import('yaml')).parse(text);
  }
}

/** The model of a parsed kubeconfig document; `dir` anchors relative paths. */
export function kubeConfigFromDocument(doc: unknown, dir: string): KubeConfigData {
  const d = record(doc, 'the document');
  const file = (p: unknown) => (typeof p === 'string' && p ? path.resolve(dir, p) : undefined);
  const clusters = list(d.clusters, 'clusters').map((entry, i) => {
    const c = record(entry.cluster, `clusters[${i}].cluster`);
    return {
      name: str(entry.name, `clusters[${i}].name`),
      server: str(c.server, `clusters[${i}].cluster.server`),
      caData: optionalText(c['certificate-authority-data']),
      caFile: file(c['certificate-authority']),
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      tlsServerName: optionalText(c['tls-server-name']),
      proxyUrl: optionalText(c['proxy-url']),
    };
  });
  const users = list(d.users, 'users').map((entry, i) => {
    const u = entry.user === undefined || entry.user === null ? {} : record(entry.user, `users[${i}].user`);
    const exec = u.exec === undefined || u.exec === null ? undefined : record(u.exec, `users[${i}].user.exec`);
    return {
      name: str(entry.name, `users[${i}].name`),
      token: optionalText(u.token),
      tokenFile: file(u.tokenFile),
      certData: optionalText(u['client-certificate-data']),
      certFile: file(u['client-certificate']),
      keyData: optionalText(u['client-key-data']),
      keyFile: file(u['client-key']),
      username: optionalText(u.username),
      password: optionalText(u.password),
      exec: exec && {
        command: str(exec.command, `users[${i}].user.exec.command`),
        args: exec.args as string[] | undefined,
        env: exec.env as ExecPluginConfig['env'],
        apiVersion: optionalText(exec.apiVersion),
        provideClusterInfo: exec.provideClusterInfo === true,
      },
      authProvider: u['auth-provider'] as KubeConfigUser['authProvider'],
      impersonateUser: optionalText(u.as),
    };
  });
  const contexts = list(d.contexts, 'contexts').map((entry, i) => {
    const c = record(entry.context, `contexts[${i}].context`);
    return {
      name: str(entry.name, `contexts[${i}].name`),
      cluster: str(c.cluster, `contexts[${i}].context.cluster`),
      user: str(c.user ?? '', `contexts[${i}].context.user`),
      namespace: optionalText(c.namespace),
    };
  });
  return { clusters, users, contexts, currentContext: optionalText(d['current-context']) ?? '' };
}

/** The cluster and user the current context names, or an error saying which is missing. */
export function currentContext(config: KubeConfigData): KubeContext {
  const context = config.contexts.find((c) => c.name === config.currentContext);
  if (!context) throw new Error(`kubeconfig has no context "${config.currentContext}" (current-context)`);
  const cluster = config.clusters.find((c) => c.name === context.cluster);
  if (!cluster) throw new Error(`kubeconfig context "${context.name}" names cluster "${context.cluster}", which it does not define`);
  const user = config.users.find((u) => u.name === context.user) ?? { name: context.user };
  return { cluster, user };
}

function record(value: unknown, where: string): Record<string, unknown> {
  if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  throw new Error(`${where} must be a mapping`);
}

function list(value: unknown, where: string): Array<Record<string, unknown>> {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Error(`${where} must be a list`);
  return value.map((v, i) => record(v, `${where}[${i}]`));
}

function str(value: unknown, where: string): string {
  if (typeof value === 'string') return value;
  throw new Error(`${where} must be a string`);
}

function optionalText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
