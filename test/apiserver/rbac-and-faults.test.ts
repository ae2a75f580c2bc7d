import { CoreV1Api } from '@kubernetes/client-node';
import { TestApiServer, startTestApiServer } from './index';
import { call, localPv } from './raw-client';

const SA = 'system:serviceaccount:lvp:provisioner';

describe('RBAC', () => {
  let server: TestApiServer;
  beforeEach(async () => {
    server = await startTestApiServer({ rbac: true });
    server.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lvp' } });
    server.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'pv-reader' },
      rules: [{ apiGroups: [''], resources: ['persistentvolumes'], verbs: ['get', 'list', 'watch'] }],
    });
    server.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'pv-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'pv-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'provisioner', namespace: 'lvp' }],
    });
    server.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'jobs', namespace: 'lvp' },
      rules: [{ apiGroups: ['batch'], resources: ['jobs'], verbs: ['*'] }, { apiGroups: [''], resources: ['persistentvolumes/status'], verbs: ['patch'] }],
    });
    server.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'jobs', namespace: 'lvp' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'jobs' },
      subjects: [{ kind: 'ServiceAccount', name: 'provisioner' }],
    });
  });
  afterEach(async () => {
    await server.stop();
  });

  test('a service account may do what its ClusterRoleBinding grants', async () => {
    const api = server.kubeConfig(SA).makeApiClient(CoreV1Api);
    await expect(api.listPersistentVolume()).resolves.toBeDefined();
  });

  test('anything else is 403 Forbidden, worded as the real authorizer words it, and recorded', async () => {
    const r = await call(server, 'POST', '/api/v1/persistentvolumes', localPv('x'), { user: SA });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({
      reason: 'Forbidden',
      message: `persistentvolumes is forbidden: User "${SA}" cannot create resource "persistentvolumes" in API group "" at the cluster scope`,
      details: { kind: 'persistentvolumes' },
    });
    expect(server.rbacDenials).toEqual([{ user: SA, verb: 'create', apiGroup: '', resource: 'persistentvolumes' }]);
  });

  test('a Role grants only in its namespace', async () => {
    const job = { metadata: { name: 'j' }, spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'i' }] } } } };
    expect((await call(server, 'POST', '/apis/batch/v1/namespaces/lvp/jobs', job, { user: SA })).status).toBe(201);
    const elsewhere = await call(server, 'POST', '/apis/batch/v1/namespaces/default/jobs', job, { user: SA });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.body.message).toBe(`jobs.batch is forbidden: User "${SA}" cannot create resource "jobs" in API group "batch" in the namespace "default"`);
  });

  test('a subresource needs its own rule', async () => {
    server.create(localPv('s'));
    const r = await call(server, 'PATCH', '/api/v1/persistentvolumes/s/status', { status: { phase: 'Failed' } }, { user: SA, contentType: 'application/merge-patch+json' });
    expect(r.status).toBe(403);
    expect(r.body.message).toContain('cannot patch resource "persistentvolumes/status"');
  });

  test('discovery is open to every authenticated user', async () => {
    expect((await call(server, 'GET', '/apis', undefined, { user: SA })).status).toBe(200);
  });

  test('a SelfSubjectAccessReview says what the asking user may do, for every authenticated user, and is not stored', async () => {
    const ask = (verb: string, resource: string, namespace?: string, group = '') => call(server, 'POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb, resource, group, namespace } },
    }, { user: SA });
    const allowed = async (verb: string, resource: string, namespace?: string, group?: string) => {
      const r = await ask(verb, resource, namespace, group);
      expect(r.status).toBe(201);
      return r.body.status.allowed;
    };
    expect(await allowed('watch', 'persistentvolumes')).toBe(true);
    expect(await allowed('patch', 'persistentvolumes')).toBe(false);
    expect(await allowed('create', 'jobs', 'lvp', 'batch')).toBe(true);
    expect(await allowed('create', 'jobs', 'default', 'batch')).toBe(false);
    expect(server.rbacDenials).toEqual([]);
    expect((await call(server, 'GET', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', undefined)).status).toBe(405);
  });
});

describe('faults', () => {
  let server: TestApiServer;
  beforeEach(async () => {
    server = await startTestApiServer();
  });
  afterEach(async () => {
    await server.stop();
  });

  test('failNext fails only the matching requests, as many times as asked', async () => {
    server.faults.failNext({ verb: 'list', resource: 'persistentvolumes', code: 500, count: 2 });
    expect((await call(server, 'GET', '/api/v1/nodes')).status).toBe(200);
    const first = await call(server, 'GET', '/api/v1/persistentvolumes');
    expect(first.status).toBe(500);
    expect(first.body).toMatchObject({ kind: 'Status', reason: 'InternalError', code: 500 });
    expect((await call(server, 'GET', '/api/v1/persistentvolumes')).status).toBe(500);
    expect((await call(server, 'GET', '/api/v1/persistentvolumes')).status).toBe(200);
  });

  test('a 429 carries Retry-After', async () => {
    server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 429, retryAfterSeconds: 3 });
    const r = await call(server, 'POST', '/api/v1/persistentvolumes', localPv('later'));
    expect(r.status).toBe(429);
    expect(r.headers.get('retry-after')).toBe('3');
    expect(r.body).toMatchObject({ reason: 'TooManyRequests', details: { retryAfterSeconds: 3 } });
  });

  test('restart keeps the state and the port', async () => {
    server.create(localPv('kept'));
    const url = server.url;
    await server.restart();
    expect(server.url).toBe(url);
    expect((await call(server, 'GET', '/api/v1/persistentvolumes/kept')).status).toBe(200);
  });

  test('a stopped server refuses connections', async () => {
    await server.stop();
    await expect(fetch(`${server.url}/api`)).rejects.toThrow();
    await server.restart();
  });

  test('counters count requests and bytes per verb and resource', async () => {
    await call(server, 'GET', '/api/v1/persistentvolumes');
    await call(server, 'GET', '/api/v1/persistentvolumes');
    const c = server.counters.get('list', 'persistentvolumes');
    expect(c.requests).toBe(2);
    expect(c.bytes).toBeGreaterThan(0);
    expect(server.counters.get('get', 'persistentvolumes').requests).toBe(0);
  });
});

describe('TLS', () => {
  test('a TLS server hands out a kubeconfig that trusts it, and client-node authenticates through it', async () => {
    const server = await startTestApiServer({ tls: true, rbac: true });
    try {
      expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const admin = server.kubeConfig().makeApiClient(CoreV1Api);
      expect((await admin.listNamespace()).items.map((n) => n.metadata!.name)).toContain('default');
      const stranger = server.kubeConfig('system:serviceaccount:default:nobody').makeApiClient(CoreV1Api);
      await expect(stranger.listNamespace()).rejects.toMatchObject({ code: 403 });
    } finally {
      await server.stop();
    }
  });
});
