import { TestApiServer, startTestApiServer } from './index';
import { call, eventually, localPv } from './raw-client';

let server: TestApiServer;
beforeEach(async () => {
  server = await startTestApiServer();
});
afterEach(async () => {
  await server.stop();
});

const getPv = (name: string) => server.get('v1', 'PersistentVolume', name);
const claim = (name: string) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'default' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'local' },
});
const job = (name: string) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name, namespace: 'default' },
  spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox' }] } } },
});

describe('persistent volume controllers', () => {
  test('a new volume carries the protection finalizer and becomes Available', async () => {
    const created = server.create(localPv('fresh'));
    expect(created.metadata.finalizers).toEqual(['kubernetes.io/pv-protection']);
    expect(created.status.phase).toBe('Pending');
    await eventually(() => getPv('fresh').status.phase === 'Available', 'Available');
  });

  test('a bound volume becomes Released when its claim is deleted', async () => {
    server.create(localPv('bound'));
    server.create(claim('data'));
    server.bindClaim('bound', { namespace: 'default', name: 'data' });
    expect(getPv('bound').status.phase).toBe('Bound');
    expect(getPv('bound').spec.claimRef).toMatchObject({ namespace: 'default', name: 'data' });
    expect(server.get('v1', 'PersistentVolumeClaim', 'data', 'default').status.phase).toBe('Bound');
    await call(server, 'DELETE', '/api/v1/namespaces/default/persistentvolumeclaims/data');
    await eventually(() => getPv('bound').status.phase === 'Released', 'Released');
    expect(server.get('v1', 'PersistentVolumeClaim', 'data', 'default')).toBeUndefined();
  });

  test('a volume reserved for a claim by name only stays Available', async () => {
    const pv: any = localPv('reserved');
    pv.spec.claimRef = { namespace: 'default', name: 'not-yet' };
    server.create(pv);
    await eventually(() => getPv('reserved').status.phase === 'Available', 'Available');
  });

  test('deleting a Bound volume waits for the protection finalizer until it is released', async () => {
    server.create(localPv('held'));
    server.create(claim('holder'));
    server.bindClaim('held', { namespace: 'default', name: 'holder' });
    const r = await call(server, 'DELETE', '/api/v1/persistentvolumes/held');
    expect(r.status).toBe(200);
    expect(r.body.metadata.deletionTimestamp).toBeDefined();
    await new Promise((res) => setTimeout(res, 20));
    expect(getPv('held').metadata.deletionTimestamp).toBeDefined();
    await call(server, 'DELETE', '/api/v1/namespaces/default/persistentvolumeclaims/holder');
    await eventually(() => getPv('held') === undefined, 'volume gone');
  });

  test('a volume being deleted is never bound, even to a claim that names it', async () => {
    const pv: any = localPv('terminating');
    pv.metadata.finalizers = ['example.com/hold'];
    server.create(pv);
    server.create(claim('late'));
    await call(server, 'DELETE', '/api/v1/persistentvolumes/terminating');
    expect(() => server.bindClaim('terminating', { namespace: 'default', name: 'late' })).toThrow('the volume is marked for deletion "terminating"');
    expect(getPv('terminating').spec.claimRef).toBeUndefined();
  });

  test('with protection switched off a volume is deleted at once', async () => {
    server.controllers.pvProtection = false;
    server.create(localPv('bare'));
    const r = await call(server, 'DELETE', '/api/v1/persistentvolumes/bare');
    expect(r.body).toMatchObject({ kind: 'Status', status: 'Success', details: { name: 'bare', kind: 'persistentvolumes' } });
    expect(getPv('bare')).toBeUndefined();
  });
});

describe('finalizers and garbage collection', () => {
  test('an object with a finalizer stays, marked for deletion, until the finalizer is removed', async () => {
    server.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'f', namespace: 'default', finalizers: ['example.com/hold'] } });
    await call(server, 'DELETE', '/api/v1/namespaces/default/configmaps/f');
    const marked = server.get('v1', 'ConfigMap', 'f', 'default');
    expect(marked.metadata.deletionTimestamp).toBeDefined();
    const add = await call(server, 'PATCH', '/api/v1/namespaces/default/configmaps/f', { metadata: { finalizers: ['example.com/hold', 'example.com/more'] } },
      { contentType: 'application/merge-patch+json' });
    expect(add.status).toBe(422);
    await call(server, 'PATCH', '/api/v1/namespaces/default/configmaps/f', { metadata: { finalizers: null } }, { contentType: 'application/merge-patch+json' });
    expect(server.get('v1', 'ConfigMap', 'f', 'default')).toBeUndefined();
  });

  test('dependents of a deleted owner are collected', async () => {
    const owner = server.create(job('cleanup-a'));
    server.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'dep', namespace: 'default', ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'cleanup-a', uid: owner.metadata.uid }] },
    });
    await call(server, 'DELETE', '/apis/batch/v1/namespaces/default/jobs/cleanup-a', { propagationPolicy: 'Background' });
    await eventually(() => server.get('v1', 'ConfigMap', 'dep', 'default') === undefined, 'dependent collected');
  });

  test('Jobs deleted without a policy orphan their dependents, as batch/v1 does', async () => {
    const owner = server.create(job('cleanup-b'));
    server.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'kept', namespace: 'default', ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'cleanup-b', uid: owner.metadata.uid }] },
    });
    await call(server, 'DELETE', '/apis/batch/v1/namespaces/default/jobs/cleanup-b');
    await eventually(() => server.get('batch/v1', 'Job', 'cleanup-b', 'default') === undefined, 'job gone');
    expect(server.get('v1', 'ConfigMap', 'kept', 'default').metadata.ownerReferences).toBeUndefined();
  });

  test('a namespace being deleted is Terminating, refuses new content, and goes once emptied', async () => {
    await call(server, 'POST', '/api/v1/namespaces', { metadata: { name: 'tmp' } });
    await call(server, 'POST', '/api/v1/namespaces/tmp/configmaps', { metadata: { name: 'c' } });
    server.controllers.namespaces = false;
    await call(server, 'DELETE', '/api/v1/namespaces/tmp');
    expect(server.get('v1', 'Namespace', 'tmp').status.phase).toBe('Terminating');
    const refused = await call(server, 'POST', '/api/v1/namespaces/tmp/configmaps', { metadata: { name: 'd' } });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('because it is being terminated');
    server.controllers.namespaces = true;
    await eventually(() => server.get('v1', 'Namespace', 'tmp') === undefined, 'namespace gone');
    expect(server.get('v1', 'ConfigMap', 'c', 'tmp')).toBeUndefined();
  });
});

test('the system namespaces may not be deleted', async () => {
  const r = await call(server, 'DELETE', '/api/v1/namespaces/kube-system');
  expect(r.status).toBe(403);
  expect(r.body.message).toBe('namespaces "kube-system" is forbidden: this namespace may not be deleted');
});

describe('jobs', () => {
  test('a Job never runs; a test marks it Complete', async () => {
    server.create(job('cleanup-c'));
    await eventually(() => server.get('batch/v1', 'Job', 'cleanup-c', 'default').status?.active === 1, 'started');
    server.finishJob('default', 'cleanup-c', 'Complete');
    const done = server.get('batch/v1', 'Job', 'cleanup-c', 'default');
    expect(done.status.succeeded).toBe(1);
    expect(done.status.conditions.map((c: any) => c.type)).toEqual(['SuccessCriteriaMet', 'Complete']);
  });

  test('a Job marked Failed carries the Failed condition', async () => {
    server.create(job('cleanup-d'));
    server.finishJob('default', 'cleanup-d', 'Failed', 'wipe failed');
    const failed = server.get('batch/v1', 'Job', 'cleanup-d', 'default');
    expect(failed.status.failed).toBe(1);
    expect(failed.status.conditions.find((c: any) => c.type === 'Failed')).toMatchObject({ status: 'True', message: 'wipe failed' });
  });

  test('the Job selector and pod labels come from its uid', async () => {
    const j = server.create(job('cleanup-e'));
    expect(j.spec.selector.matchLabels['batch.kubernetes.io/controller-uid']).toBe(j.metadata.uid);
    expect(j.spec.template.metadata.labels['job-name']).toBe('cleanup-e');
  });
});
