import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestApiServer, startTestApiServer } from './index';

/** kubectl binaries beside the default one, by client version. */
const KUBECTL_DIR = '/usr/lib/google-cloud-sdk/bin';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let server: TestApiServer;
let dir: string;
let kubeconfig: string;

/** Runs kubectl asynchronously (the server shares this event loop, so a sync spawn would deadlock). */
function kubectl(args: string[], options: { binary?: string; stdin?: string; kubeconfig?: string } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const env = { ...process.env, KUBECONFIG: options.kubeconfig ?? kubeconfig, HOME: dir };
    const child = execFile(options.binary ?? 'kubectl', args, { env }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
    child.stdin?.end(options.stdin ?? '');
  });
}

function manifest(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

const pvYaml = (name: string, labels = 'node: n1') => `apiVersion: v1
kind: PersistentVolume
metadata:
  name: ${name}
  labels: {${labels}}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  local: {path: /mnt/disks/${name}}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]
`;

const deploymentYaml = (env: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: busybox:1.36
        env: [${env}]
      - name: sidecar
        image: busybox:1.36
`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'apiserver-kubectl-'));
  server = await startTestApiServer();
  kubeconfig = join(dir, 'kubeconfig');
  server.writeKubeconfig(kubeconfig);
});

afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('kubectl against the test API server', () => {
  test('get lists the initial namespaces with server-side columns', async () => {
    const r = await kubectl(['get', 'namespaces']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^NAME\s+STATUS\s+AGE\n/);
    expect(r.stdout).toMatch(/^default\s+Active\s/m);
    expect(r.stdout).toMatch(/^kube-system\s+Active\s/m);
  });

  test('get prints the columns the real server prints for nodes and storage classes', async () => {
    server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'worker-1' }, status: { conditions: [{ type: 'Ready', status: 'True' }] } });
    server.create({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'local' }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' });
    expect((await kubectl(['get', 'nodes'])).stdout).toMatch(/^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nworker-1\s+Ready\s+<none>\s/);
    expect((await kubectl(['get', 'storageclasses'])).stdout)
      .toMatch(/^NAME\s+PROVISIONER\s+RECLAIMPOLICY\s+VOLUMEBINDINGMODE\s+ALLOWVOLUMEEXPANSION\s+AGE\nlocal\s+kubernetes.io\/no-provisioner\s+Delete\s+WaitForFirstConsumer\s+false\s/);
  });

  test('create makes an object and a second create is AlreadyExists', async () => {
    const file = manifest('created.yaml', pvYaml('created'));
    expect((await kubectl(['create', '-f', file])).stdout).toBe('persistentvolume/created created\n');
    const again = await kubectl(['create', '-f', file]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('Error from server (AlreadyExists)');
    expect(again.stderr).toContain('persistentvolumes "created" already exists');
  });

  test('apply twice creates then leaves the object unchanged', async () => {
    const file = manifest('applied.yaml', pvYaml('applied'));
    expect((await kubectl(['apply', '-f', file])).stdout).toBe('persistentvolume/applied created\n');
    const rv = server.get('v1', 'PersistentVolume', 'applied').metadata.resourceVersion;
    expect((await kubectl(['apply', '-f', file])).stdout).toBe('persistentvolume/applied unchanged\n');
    expect(server.get('v1', 'PersistentVolume', 'applied').metadata.resourceVersion).toBe(rv);
  });

  test('apply of a changed manifest removes what the manifest no longer has', async () => {
    await kubectl(['apply', '-f', manifest('labels.yaml', pvYaml('relabelled', 'a: "1", b: "2"'))]);
    const r = await kubectl(['apply', '-f', manifest('labels.yaml', pvYaml('relabelled', 'a: "1", c: "3"'))]);
    expect(r.stdout).toBe('persistentvolume/relabelled configured\n');
    expect(server.get('v1', 'PersistentVolume', 'relabelled').metadata.labels).toEqual({ a: '1', c: '3' });
  });

  test('apply merges container env by name through a strategic merge patch', async () => {
    await kubectl(['apply', '-f', manifest('web.yaml', deploymentYaml('{name: A, value: "1"}, {name: B, value: "2"}'))]);
    const r = await kubectl(['apply', '-f', manifest('web.yaml', deploymentYaml('{name: A, value: "1"}, {name: C, value: "3"}'))]);
    expect(r.stdout).toBe('deployment.apps/web configured\n');
    const d = server.get('apps/v1', 'Deployment', 'web', 'default');
    expect(d.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['app', 'sidecar']);
    expect(d.spec.template.spec.containers[0].env).toEqual([{ name: 'A', value: '1' }, { name: 'C', value: '3' }]);
    expect(d.metadata.generation).toBe(2);
  });

  test('apply of a ServiceMonitor twice works through JSON merge patch', async () => {
    const sm = (port: string) => `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: lvp, namespace: default}
spec:
  selector: {matchLabels: {app: lvp}}
  endpoints: [{port: ${port}}]
`;
    expect((await kubectl(['apply', '-f', manifest('sm.yaml', sm('metrics'))])).stdout).toContain('created');
    expect((await kubectl(['apply', '-f', manifest('sm.yaml', sm('metrics'))])).stdout).toContain('unchanged');
    expect((await kubectl(['apply', '-f', manifest('sm.yaml', sm('http'))])).stdout).toContain('configured');
    expect(server.get('monitoring.coreos.com/v1', 'ServiceMonitor', 'lvp', 'default').spec.endpoints).toEqual([{ port: 'http' }]);
  });

  test('patch accepts strategic, merge and JSON patches', async () => {
    await kubectl(['create', '-f', manifest('patched.yaml', pvYaml('patched'))]);
    expect((await kubectl(['patch', 'pv', 'patched', '-p', '{"metadata":{"labels":{"s":"1"}}}'])).stdout).toBe('persistentvolume/patched patched\n');
    await kubectl(['patch', 'pv', 'patched', '--type=merge', '-p', '{"metadata":{"labels":{"m":"2"}}}']);
    await kubectl(['patch', 'pv', 'patched', '--type=json', '-p', '[{"op":"add","path":"/metadata/labels/j","value":"3"}]']);
    expect(server.get('v1', 'PersistentVolume', 'patched').metadata.labels).toEqual({ node: 'n1', s: '1', m: '2', j: '3' });
  });

  test('patch --subresource=status changes only the status', async () => {
    await kubectl(['create', '-f', manifest('failing.yaml', pvYaml('failing'))]);
    const r = await kubectl(['patch', 'pv', 'failing', '--subresource=status', '--type=merge',
      '-p', '{"status":{"phase":"Failed","message":"disk gone"},"spec":{"storageClassName":"other"}}']);
    expect(r.stdout).toBe('persistentvolume/failing patched\n');
    const pv = server.get('v1', 'PersistentVolume', 'failing');
    expect(pv.status).toMatchObject({ phase: 'Failed', message: 'disk gone' });
    expect(pv.spec.storageClassName).toBe('fast');
  });

  test('delete removes an unbound volume once the protection finalizer is released', async () => {
    await kubectl(['create', '-f', manifest('doomed.yaml', pvYaml('doomed'))]);
    expect((await kubectl(['delete', 'pv', 'doomed'])).stdout).toBe('persistentvolume "doomed" deleted\n');
    const r = await kubectl(['get', 'pv', 'doomed']);
    expect(r.stderr).toBe('Error from server (NotFound): persistentvolumes "doomed" not found\n');
  });

  test('label and field selectors choose what get lists', async () => {
    await kubectl(['create', '-f', manifest('sel-a.yaml', pvYaml('sel-a', 'tier: gold, zone: a'))]);
    await kubectl(['create', '-f', manifest('sel-b.yaml', pvYaml('sel-b', 'tier: silver, zone: b'))]);
    await kubectl(['create', '-f', manifest('sel-c.yaml', pvYaml('sel-c', 'zone: c'))]);
    const names = async (...args: string[]) => (await kubectl(['get', 'pv', ...args, '-o', 'name'])).stdout.trim().split('\n').filter(Boolean);
    expect(await names('-l', 'tier=gold')).toEqual(['persistentvolume/sel-a']);
    expect(await names('-l', 'tier in (gold,silver)')).toEqual(['persistentvolume/sel-a', 'persistentvolume/sel-b']);
    expect(await names('-l', 'zone,!tier')).toEqual(['persistentvolume/sel-c']);
    expect(await names('-l', 'zone,tier!=gold')).toEqual(['persistentvolume/sel-b', 'persistentvolume/sel-c']);
    expect(await names('--field-selector', 'metadata.name=sel-b')).toEqual(['persistentvolume/sel-b']);
    const bad = await kubectl(['get', 'pv', '--field-selector', 'spec.capacity=1']);
    expect(bad.stderr).toContain('Error from server (BadRequest)');
    expect(bad.stderr).toContain('field label not supported: spec.capacity');
  });

  test('get --watch prints the changes as they happen', async () => {
    let out = '';
    const watcher: ChildProcess = spawn('kubectl', ['get', 'pv', '--watch', '--output-watch-events', '-l', 'watched=yes'],
      { env: { ...process.env, KUBECONFIG: kubeconfig, HOME: dir } });
    watcher.stdout!.on('data', (d) => { out += d; });
    try {
      const until = async (re: RegExp) => {
        for (let i = 0; i < 200 && !re.test(out); i++) await new Promise((r) => setTimeout(r, 25));
        expect(out).toMatch(re);
      };
      await until(/^$|EVENT/);
      await new Promise((r) => setTimeout(r, 300));
      await kubectl(['create', '-f', manifest('watched.yaml', pvYaml('watched', 'watched: "yes"'))]);
      await until(/ADDED\s+watched\s/);
      await kubectl(['delete', 'pv', 'watched']);
      await until(/DELETED\s+watched\s/);
    } finally {
      watcher.kill();
    }
  });

  test('an invalid object is refused with the fields at fault', async () => {
    const r = await kubectl(['apply', '-f', manifest('invalid.yaml', `apiVersion: v1
kind: PersistentVolume
metadata: {name: Invalid_Name}
spec:
  capacity: {storage: 1Gi}
  hostPath: {path: /x}
`)]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('The PersistentVolume "Invalid_Name" is invalid');
    expect(r.stderr).toContain('metadata.name: Invalid value: "Invalid_Name"');
    expect(r.stderr).toContain('spec.accessModes: Required value');
  });

  test.each(['1.27', '1.33'])('kubectl %s applies a manifest twice', async (version) => {
    const file = manifest(`v${version}.yaml`, pvYaml(`kubectl-${version.replace('.', '-')}`));
    const binary = join(KUBECTL_DIR, `kubectl.${version}`);
    expect((await kubectl(['apply', '-f', file], { binary })).stdout).toContain('created');
    expect((await kubectl(['apply', '-f', file], { binary })).stdout).toContain('unchanged');
  });
});

describe('imperative kubectl create (typed clients: protobuf bodies from kubectl 1.32 on, JSON before)', () => {
  test.each(['1.27', '1.32', '1.33'])('kubectl %s creates each kind it has a command for', async (version) => {
    const ns = `imperative-${version.replace('.', '-')}`;
    const run = (...args: string[]) => kubectl(args, { binary: join(KUBECTL_DIR, `kubectl.${version}`) });
    const created = [
      await run('create', 'namespace', ns),
      await run('create', 'configmap', 'settings', '-n', ns, '--from-literal=a=1', '--from-literal=b=two'),
      await run('create', 'secret', 'generic', 'token', '-n', ns, '--from-literal=token=s3cret'),
      await run('create', 'serviceaccount', 'agent', '-n', ns),
      await run('create', 'clusterrole', `reader-${ns}`, '--verb=get,list', '--resource=pods,nodes'),
      await run('create', 'clusterrolebinding', `reader-${ns}`, `--clusterrole=reader-${ns}`, `--serviceaccount=${ns}:agent`, '--user=alice'),
      await run('create', 'role', 'cm-reader', '-n', ns, '--verb=get', '--resource=configmaps', '--resource-name=settings'),
      await run('create', 'rolebinding', 'cm-reader', '-n', ns, '--role=cm-reader', `--serviceaccount=${ns}:agent`),
      await run('create', 'deployment', 'web', '-n', ns, '--image=busybox:1.36', '--port=8080', '--replicas=2'),
      await run('create', 'job', 'once', '-n', ns, '--image=busybox:1.36', '--', 'echo', 'hi'),
    ];
    expect(created.map((r) => r.stderr).filter(Boolean)).toEqual([]);
    expect(created.map((r) => r.stdout.trim().split(' ')[1])).toEqual(Array(created.length).fill('created'));
    expect(server.get('v1', 'ConfigMap', 'settings', ns).data).toEqual({ a: '1', b: 'two' });
    expect(server.get('v1', 'Secret', 'token', ns)).toMatchObject({ type: 'Opaque', data: { token: Buffer.from('s3cret').toString('base64') } });
    expect(server.get('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', `reader-${ns}`).subjects).toEqual([
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
      { kind: 'ServiceAccount', name: 'agent', namespace: ns },
    ]);
    const web = server.get('apps/v1', 'Deployment', 'web', ns);
    expect(web.spec.replicas).toBe(2);
    expect(web.spec.template.spec.containers).toEqual([expect.objectContaining({ name: 'busybox', image: 'busybox:1.36', ports: [{ containerPort: 8080, protocol: 'TCP' }] })]);
    expect(server.get('batch/v1', 'Job', 'once', ns).spec.template.spec).toMatchObject({ restartPolicy: 'Never', containers: [expect.objectContaining({ command: ['echo', 'hi'] })] });
  }, 60_000);

  test('an invalid object sent as protobuf is refused with the fields at fault', async () => {
    const r = await kubectl(['create', 'deployment', 'Bad_Name', '--image=busybox'], { binary: join(KUBECTL_DIR, 'kubectl.1.33') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Deployment.apps "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"');
  }, 60_000);
});

describe('kubectl under RBAC (over TLS, since kubectl sends tokens only over TLS)', () => {
  let secured: TestApiServer;
  beforeAll(async () => {
    secured = await startTestApiServer({ rbac: true, tls: true });
    secured.writeKubeconfig(join(dir, 'admin-tls'));
    secured.writeKubeconfig(join(dir, 'sa-tls'), 'system:serviceaccount:default:reader');
  });
  afterAll(async () => {
    await secured.stop();
  });

  test('the admin user may do anything', async () => {
    const r = await kubectl(['get', 'pv'], { kubeconfig: join(dir, 'admin-tls') });
    expect(r.stderr).toBe('No resources found\n');
  });

  test('a service account without bindings is Forbidden and the denial is recorded', async () => {
    const r = await kubectl(['get', 'pv'], { kubeconfig: join(dir, 'sa-tls') });
    expect(r.stderr).toContain('Error from server (Forbidden): persistentvolumes is forbidden: '
      + 'User "system:serviceaccount:default:reader" cannot list resource "persistentvolumes" in API group "" at the cluster scope');
    expect(secured.rbacDenials).toContainEqual({ user: 'system:serviceaccount:default:reader', verb: 'list', apiGroup: '', resource: 'persistentvolumes' });
  });
});
