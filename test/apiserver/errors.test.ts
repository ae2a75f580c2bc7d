import { TestApiServer, startTestApiServer } from './index';
import { call, localPv } from './raw-client';

let server: TestApiServer;
beforeEach(async () => {
  server = await startTestApiServer();
});
afterEach(async () => {
  await server.stop();
});

describe('error responses are Status objects as the real server sends them', () => {
  test('a missing object is 404 NotFound naming the resource', async () => {
    const r = await call(server, 'GET', '/apis/batch/v1/namespaces/default/jobs/nope');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'jobs.batch "nope" not found',
      reason: 'NotFound',
      details: { name: 'nope', group: 'batch', kind: 'jobs' },
      code: 404,
    });
  });

  test('creating an existing name is 409 AlreadyExists', async () => {
    await call(server, 'POST', '/api/v1/persistentvolumes', localPv('dup'));
    const r = await call(server, 'POST', '/api/v1/persistentvolumes', localPv('dup'));
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ reason: 'AlreadyExists', message: 'persistentvolumes "dup" already exists', details: { name: 'dup', kind: 'persistentvolumes' } });
  });

  test('an update with a stale resourceVersion is 409 Conflict', async () => {
    const created = (await call(server, 'POST', '/api/v1/persistentvolumes', localPv('stale'))).body;
    await call(server, 'PUT', '/api/v1/persistentvolumes/stale', { ...created, metadata: { ...created.metadata, labels: { a: '1' } } });
    const r = await call(server, 'PUT', '/api/v1/persistentvolumes/stale', { ...created, metadata: { ...created.metadata, labels: { b: '2' } } });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      reason: 'Conflict',
      message: 'Operation cannot be fulfilled on persistentvolumes "stale": the object has been modified; please apply your changes to the latest version and try again',
    });
  });

  test('an invalid object is 422 Invalid with one cause per field', async () => {
    const r = await call(server, 'POST', '/api/v1/persistentvolumes', { metadata: { name: 'no-spec' }, spec: {} });
    expect(r.status).toBe(422);
    expect(r.body.reason).toBe('Invalid');
    expect(r.body.details.kind).toBe('PersistentVolume');
    expect(r.body.details.causes).toEqual(expect.arrayContaining([
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.accessModes' },
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.capacity' },
      { reason: 'FieldValueRequired', message: 'Required value: must specify a volume type', field: 'spec' },
    ]));
  });

  test('a volume has a positive storage capacity and no other', async () => {
    const zero: any = localPv('zero');
    zero.spec.capacity = { storage: '0' };
    expect((await call(server, 'POST', '/api/v1/persistentvolumes', zero)).body.details.causes)
      .toEqual([{ reason: 'FieldValueInvalid', field: 'spec.capacity[storage]', message: 'Invalid value: "0": must be greater than zero' }]);
    const cpu: any = localPv('cpu');
    cpu.spec.capacity = { storage: '1Gi', cpu: '1' };
    expect((await call(server, 'POST', '/api/v1/persistentvolumes', cpu)).body.details.causes)
      .toEqual([{ reason: 'FieldValueNotSupported', field: 'spec.capacity', message: 'Unsupported value: {"storage":"1Gi","cpu":"1"}: supported values: "storage"' }]);
  });

  test('a claim asks for a positive amount of storage with at least one access mode', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims', {
      metadata: { name: 'nothing' }, spec: { accessModes: [], resources: { requests: { storage: '0Gi' } } },
    });
    expect(r.body.details.causes).toEqual([
      { reason: 'FieldValueRequired', field: 'spec.accessModes', message: 'Required value: at least 1 access mode is required' },
      { reason: 'FieldValueInvalid', field: 'spec.resources[storage]', message: 'Invalid value: "0Gi": must be greater than zero' },
    ]);
  });

  test('a local volume without node affinity is invalid', async () => {
    const pv: any = localPv('loose');
    delete pv.spec.nodeAffinity;
    const r = await call(server, 'POST', '/api/v1/persistentvolumes', pv);
    expect(r.status).toBe(422);
    expect(r.body.message).toContain('spec.nodeAffinity: Required value: Local volume requires node affinity');
  });

  test('a label value that is not a valid label is invalid', async () => {
    const r = await call(server, 'POST', '/api/v1/persistentvolumes', localPv('labelled', { node: 'not valid!' }));
    expect(r.status).toBe(422);
    expect(r.body.details.causes[0]).toMatchObject({ field: 'metadata.labels', reason: 'FieldValueInvalid' });
  });

  test('a body of the wrong type for a built-in field cannot be decoded (400)', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'c' }, data: 'text' });
    expect(r.status).toBe(400);
    expect(r.body.reason).toBe('BadRequest');
  });

  test('creating in a namespace that does not exist is 404 for the namespace', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/ghost/configmaps', { metadata: { name: 'c' } });
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('namespaces "ghost" not found');
  });

  test('an unknown resource path is 404 with the generic message', async () => {
    const r = await call(server, 'GET', '/api/v1/widgets');
    expect(r.status).toBe(404);
    expect(r.body.message).toBe('the server could not find the requested resource');
  });

  test('strategic merge patch on a custom resource is 415', async () => {
    await call(server, 'POST', '/apis/monitoring.coreos.com/v1/namespaces/default/prometheusrules', {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'r' }, spec: { groups: [] },
    });
    const r = await call(server, 'PATCH', '/apis/monitoring.coreos.com/v1/namespaces/default/prometheusrules/r', { spec: {} },
      { contentType: 'application/strategic-merge-patch+json' });
    expect(r.status).toBe(415);
    expect(r.body.reason).toBe('UnsupportedMediaType');
  });

  test('a create that carries a resourceVersion is refused as etcd refuses it (500)', async () => {
    const created = (await call(server, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'once' } })).body;
    await call(server, 'DELETE', '/api/v1/namespaces/default/configmaps/once');
    const r = await call(server, 'POST', '/api/v1/namespaces/default/configmaps', created);
    expect(r.status).toBe(500);
    expect(r.body.message).toBe('resourceVersion should not be set on objects to be created');
  });

  test('an event about a cluster-scoped object must be in the default namespace', async () => {
    const event = (ns: string) => ({ metadata: { name: `e.${ns}` }, involvedObject: { kind: 'PersistentVolume', name: 'pv-1' }, reason: 'R', message: 'm', type: 'Normal' });
    expect((await call(server, 'POST', '/api/v1/namespaces/default/events', event('default'))).status).toBe(201);
    const r = await call(server, 'POST', '/api/v1/namespaces/kube-system/events', event('kube-system'));
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([{ reason: 'FieldValueInvalid', field: 'involvedObject.namespace', message: 'Invalid value: "": does not match event.namespace' }]);
  });

  test('an events.k8s.io event needs eventTime, reporting controller and instance, action and reason', async () => {
    const r = await call(server, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', { metadata: { name: 'bare' }, regarding: { kind: 'Node', name: 'n' }, type: 'Normal' });
    expect(r.status).toBe(422);
    expect(r.body.details.causes.map((c: any) => c.field).sort()).toEqual(['action', 'eventTime', 'reason', 'reportingController', 'reportingInstance']);
  });

  test('a node affinity term with an In requirement and no values is invalid', async () => {
    const pv: any = localPv('affine');
    pv.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values = [];
    const r = await call(server, 'POST', '/api/v1/persistentvolumes', pv);
    expect(r.status).toBe(422);
    expect(r.body.details.causes[0].field).toBe('spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values');
  });

  test('a ConfigMap key that is not a valid config key is invalid', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'keys' }, data: { 'good.key': '1', 'bad key': '2' } });
    expect(r.status).toBe(422);
    expect(r.body.details.causes.map((c: any) => c.field)).toEqual(['data[bad key]']);
  });

  test('RBAC objects are checked as the RBAC registry checks them', async () => {
    const role = await call(server, 'POST', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles', {
      metadata: { name: 'r' }, rules: [{ resources: ['pods'], verbs: ['get'] }, { nonResourceURLs: ['/metrics'], verbs: ['get'] }],
    });
    expect(role.status).toBe(422);
    expect(role.body.details.causes.map((c: any) => c.field)).toEqual(['rules[0].apiGroups', 'rules[1].nonResourceURLs']);
    const binding = await call(server, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'b' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'x' }, subjects: [{ kind: 'ServiceAccount', name: 'sa' }],
    });
    expect(binding.status).toBe(422);
    expect(binding.body.details.causes[0]).toMatchObject({ field: 'subjects[0].namespace', reason: 'FieldValueRequired' });
  });

  test('a DaemonSet whose selector does not select its pod template is invalid', async () => {
    const r = await call(server, 'POST', '/apis/apps/v1/namespaces/default/daemonsets', {
      metadata: { name: 'ds' },
      spec: { selector: { matchLabels: { app: 'a' } }, template: { metadata: { labels: { app: 'b' } }, spec: { containers: [{ name: 'c', image: 'i' }] } } },
    });
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([expect.objectContaining({ field: 'spec.template.metadata.labels', message: expect.stringContaining('`selector` does not match template `labels`') })]);
  });
});
