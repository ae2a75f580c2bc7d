import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { Credentials } from '../../../src/runtime/kube/credentials';
import { KubeConfigData, KubeConfigUser } from '../../../src/runtime/kube/kubeconfig';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let dir: string;
beforeAll(async () => {
  server = await Kubernetes.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-credentials-'));
});
afterAll(async () => {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function configFor(user: Omit<KubeConfigUser, 'name'>): KubeConfigData {
  return {
    clusters: [{ name: 'c', server: server.url, skipTLSVerify: true }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  };
}

describe('a token file', () => {
  test('is re-read after a minute, so a rotated token is used', async () => {
    const file = path.join(dir, 'rotating');
    fs.writeFileSync(file, 'first\n');
    let now = 0;
    const credentials = new Credentials({ name: 'c', server: 'http://x' }, { name: 'u', tokenFile: file }, () => now);
    expect((await credentials.forRequest()).headers.Authorization).toBe('Bearer first');
    fs.writeFileSync(file, 'second\n');
    now = 59_000;
    expect((await credentials.forRequest()).headers.Authorization).toBe('Bearer first');
    now = 60_000;
    expect((await credentials.forRequest()).headers.Authorization).toBe('Bearer second');
  });

  test('a 401 re-reads it at once and tries again', async () => {
    const file = path.join(dir, 'renewed');
    fs.writeFileSync(file, 'not-a-token');
    const api = new KubeApi(configFor({ tokenFile: file }), { maxAttempts: 1 });
    await expect(api.getNode('n')).rejects.toThrow('get nodes "n": 401 Unauthorized');
    fs.writeFileSync(file, await server.tokenFor('admin'));
    await expect(api.getNode('n')).resolves.toBeUndefined();
    api.close();
  });
});

describe('CA and client certificate files', () => {
  test('are re-read after five minutes, as client-go reloads them, and a rotated one is used; one unreadable mid-rotation keeps the last', async () => {
    const [ca, cert, key] = ['ca.crt', 'client.crt', 'client.key'].map((f) => path.join(dir, f));
    for (const f of [ca, cert, key]) fs.writeFileSync(f, `first ${path.basename(f)}`);
    let now = 0;
    const credentials = new Credentials({ name: 'c', server: 'https://x', caFile: ca }, { name: 'u', certFile: cert, keyFile: key }, () => now);
    const tls = async () => {
      const t = (await credentials.forRequest()).tls;
      return [t.ca, t.cert, t.key].map(String);
    };
    expect(await tls()).toEqual(['first ca.crt', 'first client.crt', 'first client.key']);
    for (const f of [ca, cert, key]) fs.writeFileSync(f, `second ${path.basename(f)}`);
    now = 299_000;
    expect(await tls()).toEqual(['first ca.crt', 'first client.crt', 'first client.key']);
    now = 300_000;
    expect(await tls()).toEqual(['second ca.crt', 'second client.crt', 'second client.key']);
    fs.rmSync(cert);
    now = 600_000;
    expect(await tls()).toEqual(['second ca.crt', 'second client.crt', 'second client.key']);
  });

  test('unchanged, keep the same settings, so the connection is kept', async () => {
    const ca = path.join(dir, 'steady-ca.crt');
    fs.writeFileSync(ca, 'steady');
    let now = 0;
    const credentials = new Credentials({ name: 'c', server: 'https://x', caFile: ca }, { name: 'u' }, () => now);
    const before = (await credentials.forRequest()).tls;
    now = 600_000;
    expect((await credentials.forRequest()).tls).toBe(before);
  });
});

describe('an exec plugin', () => {
  function plugin(name: string, script: string): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, `#!/bin/sh\n${script}\n`, { mode: 0o755 });
    return file;
  }

  test('gives the token, with the ExecCredential request in KUBERNETES_EXEC_INFO and the env it names', async () => {
    const seen = path.join(dir, 'exec-info');
    const command = plugin('token-plugin', `echo "$KUBERNETES_EXEC_INFO $EXTRA" > ${seen}
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"${await server.tokenFor('admin')}"}}'`);
    const api = new KubeApi(configFor({ exec: { command, env: [{ name: 'EXTRA', value: 'set' }] } }), { maxAttempts: 1 });
    await expect(api.getNode('n')).resolves.toBeUndefined();
    expect(fs.readFileSync(seen, 'utf8')).toBe('{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}} set\n');
    api.close();
  });

  test('runs once while its token is unexpired', async () => {
    const runs = path.join(dir, 'runs');
    const command = plugin('counted-plugin', `echo run >> ${runs}
echo '{"status":{"token":"${await server.tokenFor('admin')}","expirationTimestamp":"2999-01-01T00:00:00Z"}}'`);
    const api = new KubeApi(configFor({ exec: { command } }), { maxAttempts: 1 });
    for (let i = 0; i < 3; i++) await api.getNode('n');
    expect(fs.readFileSync(runs, 'utf8')).toBe('run\n');
    api.close();
  });

  test('a failing plugin is named with what it printed', async () => {
    const command = plugin('failing-plugin', 'echo "no credentials here" >&2; exit 1');
    const api = new KubeApi(configFor({ exec: { command } }), { maxAttempts: 1 });
    await expect(api.getNode('n')).rejects.toThrow(`exec plugin "${command}" failed: no credentials here`);
    api.close();
  });
});
