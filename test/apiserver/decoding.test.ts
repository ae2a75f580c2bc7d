import { TestApiServer, startTestApiServer } from './index';
import { call } from './raw-client';

let server: TestApiServer;
beforeEach(async () => {
  server = await startTestApiServer();
});
afterEach(async () => {
  await server.stop();
});

describe('bodies are decoded as the Go types decode them', () => {
  test('unknown fields are dropped with a warning, or refused under Strict', async () => {
    const lease = { metadata: { name: 'l' }, spec: { holderIdentity: 'me', leaderTransitions: 1 } };
    const warn = await call(server, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', lease);
    expect(warn.status).toBe(201);
    expect(warn.body.spec).toEqual({ holderIdentity: 'me' });
    expect(warn.headers.get('warning')).toBe('299 - "unknown field \\"spec.leaderTransitions\\""');
    const strict = await call(server, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases?fieldValidation=Strict', { ...lease, metadata: { name: 'm' } });
    expect(strict.status).toBe(400);
    expect(strict.body.message).toBe('strict decoding error: unknown field "spec.leaderTransitions"');
  });

  test('times are stored as metav1.Time (seconds) and MicroTime (microseconds)', async () => {
    const r = await call(server, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', {
      metadata: { name: 't' },
      spec: { holderIdentity: 'me', renewTime: '2026-01-02T03:04:05.678Z' },
    });
    expect(r.body.spec.renewTime).toBe('2026-01-02T03:04:05.678000Z');
    const e = await call(server, 'POST', '/api/v1/namespaces/default/events', {
      metadata: { name: 'e' }, involvedObject: { kind: 'Node', name: 'n' }, lastTimestamp: '2026-01-02T05:04:05.999+02:00',
    });
    expect(e.body.lastTimestamp).toBe('2026-01-02T03:04:05Z');
  });

  test('a time that is not RFC 3339 cannot be decoded (400)', async () => {
    const r = await call(server, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', { metadata: { name: 'bad' }, spec: { renewTime: 'yesterday' } });
    expect(r.status).toBe(400);
    expect(r.body.reason).toBe('BadRequest');
  });
});
