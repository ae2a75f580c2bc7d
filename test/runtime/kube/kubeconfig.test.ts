import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { currentContext, inClusterConfig, kubeConfigFromDocument, loadKubeConfig } from '../../../src/runtime/kube/kubeconfig';
import { Kubernetes } from '../../support/kubernetes';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-kubeconfig-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function document(cluster: Record<string, unknown>, user: Record<string, unknown>) {
  return {
    'apiVersion': 'v1',
    'kind': 'Config',
    'clusters': [{ name: 'c', cluster }],
    'users': [{ name: 'u', user }],
    'contexts': [{ name: 'ctx', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'ctx',
  };
}

describe('a kubeconfig file', () => {
  let server: Kubernetes;
  beforeAll(async () => {
    server = await Kubernetes.start();
  });
  afterAll(() => server.stop());

  test('as the test harness writes it (YAML, CA data, token) reaches the server over TLS', async () => {
    const file = path.join(dir, 'written');
    await server.writeKubeconfig(file);
    const api = new KubeApi(loadKubeConfig(file), { maxAttempts: 1 });
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    api.close();
  });

  test('in JSON, with the CA as a file named relative to the kubeconfig', async () => {
    const sub = fs.mkdtempSync(path.join(dir, 'json-'));
    const written = currentContext(server.kubeConfig());
    fs.writeFileSync(path.join(sub, 'ca.crt'), Buffer.from(written.cluster.caData!, 'base64'));
    const file = path.join(sub, 'config.json');
    fs.writeFileSync(file, JSON.stringify(document({ 'server': server.url, 'certificate-authority': 'ca.crt' }, { token: await server.tokenFor('admin') })));
    const config = loadKubeConfig(file);
    expect(config.clusters[0].caFile).toBe(path.join(sub, 'ca.crt'));
    const api = new KubeApi(config, { maxAttempts: 1 });
    await expect(api.getNode('absent')).resolves.toBeUndefined();
    api.close();
  });

  test('a server the CA does not vouch for is refused', async () => {
    const file = path.join(dir, 'no-ca.yaml');
    fs.writeFileSync(file, stringify(document({ server: server.url }, { token: await server.tokenFor('admin') })));
    const api = new KubeApi(loadKubeConfig(file), { maxAttempts: 1 });
    await expect(api.getNode('n')).rejects.toThrow(/^get nodes "n": .*certificate/);
    api.close();
  });
});

describe('kubeconfig model', () => {
  test('reads every supported field, relative paths against the directory', () => {
    const config = kubeConfigFromDocument(document(
      { 'server': 'https://api:6443', 'certificate-authority': 'ca.pem', 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes' },
      { 'tokenFile': 'token', 'client-certificate': '/abs/cert.pem', 'client-key-data': 'a2V5', 'as': 'someone', 'exec': { command: 'get-token', args: ['--x'] } },
    ), '/etc/kube');
    expect(currentContext(config)).toEqual({
      cluster: expect.objectContaining({ server: 'https://api:6443', caFile: '/etc/kube/ca.pem', skipTLSVerify: true, tlsServerName: 'kubernetes' }),
      user: expect.objectContaining({
        tokenFile: '/etc/kube/token',
        certFile: '/abs/cert.pem',
        keyData: 'a2V5',
        impersonateUser: 'someone',
        exec: expect.objectContaining({ command: 'get-token', args: ['--x'] }),
      }),
    });
  });

  test('names the entry that is malformed', () => {
    expect(() => kubeConfigFromDocument({ clusters: [{ name: 'c', cluster: { server: 1 } }] }, '/'))
      .toThrow('clusters[0].cluster.server must be a string');
  });

  test('a current context that is not defined is named', () => {
    expect(() => currentContext(kubeConfigFromDocument({ ...document({ server: 'http://x' }, {}), 'current-context': 'other' }, '/')))
      .toThrow('kubeconfig has no context "other" (current-context)');
  });

  test('an unreadable file is named', () => {
    expect(() => loadKubeConfig(path.join(dir, 'missing'))).toThrow(/^kubeconfig .*missing cannot be read/);
  });

  test('a KUBECONFIG list is merged as client-go merges it: the first file to name an entry wins, missing files are skipped', () => {
    const first = path.join(dir, 'first.yaml');
    const second = path.join(dir, 'second.yaml');
    fs.writeFileSync(first, stringify({ clusters: [{ name: 'c', cluster: { server: 'https://first' } }], users: [{ name: 'u', user: { token: 'first' } }] }));
    fs.writeFileSync(second, stringify({
      ...document({ server: 'https://second' }, { token: 'second' }),
      clusters: [{ name: 'c', cluster: { server: 'https://second' } }, { name: 'only-second', cluster: { server: 'https://only' } }],
    }));
    const config = loadKubeConfig([path.join(dir, 'missing.yaml'), first, second].join(path.delimiter));
    expect(config.currentContext).toBe('ctx');
    expect(config.clusters.map((c) => [c.name, c.server])).toEqual([['c', 'https://first'], ['only-second', 'https://only']]);
    expect(currentContext(config)).toMatchObject({ cluster: { server: 'https://first' }, user: { token: 'first' } });
  });

  test('a KUBECONFIG list none of whose files exists is named', () => {
    const list = [path.join(dir, 'none-1'), path.join(dir, 'none-2')].join(path.delimiter);
    expect(() => loadKubeConfig(list)).toThrow(`kubeconfig: none of the files of ${list} exists`);
  });

  test('an auth-provider is refused with what to use instead', () => {
    const config = kubeConfigFromDocument(document({ server: 'https://x' }, { 'auth-provider': { name: 'gcp' } }), '/');
    expect(() => new KubeApi(config)).toThrow('auth-provider "gcp" is not supported; use a token, a client certificate or an exec plugin');
  });
});

describe('in-cluster configuration', () => {
  test('the service account token and CA, the server from the environment (IPv6 in brackets)', () => {
    const config = inClusterConfig({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, '/sa');
    expect(currentContext(config)).toEqual({
      cluster: expect.objectContaining({ server: 'https://[fd00::1]:443', caFile: '/sa/ca.crt' }),
      user: expect.objectContaining({ tokenFile: '/sa/token' }),
    });
  });

  test('outside a cluster says what to pass', () => {
    expect(() => inClusterConfig({}, '/sa')).toThrow('not in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset): pass --kubeconfig or set KUBECONFIG');
  });
});
