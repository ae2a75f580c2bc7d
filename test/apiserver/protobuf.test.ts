import { TestApiServer, startTestApiServer } from './index';
import { call } from './raw-client';

/**
 * Protobuf request bodies, as client-go's typed clients send them: the `k8s\0`
 * magic, a runtime.Unknown envelope, the object in the Go types' wire format.
 * The bodies here are encoded by hand; kubectl.test.ts sends real ones.
 */
let server: TestApiServer;
beforeAll(async () => {
  server = await startTestApiServer();
});
afterAll(async () => {
  await server.stop();
});

const PROTOBUF = 'application/vnd.kubernetes.protobuf';

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = BigInt.asUintN(64, BigInt(n));
  do {
    out.push(Number(v % 128n) + (v >= 128n ? 128 : 0));
    v /= 128n;
  } while (v > 0n);
  return Buffer.from(out);
}

const key = (n: number, wireType: number) => varint(n * 8 + wireType);

/** One field: a number, a string or a nested message (an array of fields). */
type Field = [number, number | string | Field[]];

function message(fields: Field[]): Buffer {
  return Buffer.concat(fields.map(([n, v]) => {
    if (typeof v === 'number') return Buffer.concat([key(n, 0), varint(v)]);
    const bytes = typeof v === 'string' ? Buffer.from(v, 'utf8') : message(v);
    return Buffer.concat([key(n, 2), varint(bytes.length), bytes]);
  }));
}

/** The wire body: magic, then runtime.Unknown{typeMeta{apiVersion, kind}, raw}. */
function body(apiVersion: string, kind: string, object: Field[]): Buffer {
  const raw = message(object);
  const envelope = Buffer.concat([message([[1, [[1, apiVersion], [2, kind]]]]), key(2, 2), varint(raw.length), raw]);
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), envelope]);
}

async function post(path: string, payload: Buffer, accept = `${PROTOBUF},application/json`) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'Authorization': `Bearer ${server.tokenFor('admin')}`, 'Content-Type': PROTOBUF, 'Accept': accept },
    body: new Uint8Array(payload),
  });
  return { status: res.status, contentType: res.headers.get('content-type'), body: await res.json() as any };
}

/** ObjectMeta as Go's marshaller writes it: every non-pointer string, even empty. */
const meta = (name: string, extra: Field[] = []): Field => [1, [[1, name], [2, ''], [3, ''], [4, ''], [5, ''], [6, ''], [7, 0], [8, []], ...extra]];

describe('protobuf bodies are decoded as the Go types decode them', () => {
  test('a ConfigMap is created from protobuf and answered in JSON, which the client accepts', async () => {
    const r = await post('/api/v1/namespaces/default/configmaps', body('v1', 'ConfigMap', [
      meta('from-proto', [[11, [[1, 'team'], [2, 'storage']]]]),
      [2, [[1, 'a'], [2, '1']]],
      [2, [[1, 'b'], [2, 'two']]],
    ]));
    expect(r.status).toBe(201);
    expect(r.contentType).toBe('application/json');
    expect(r.body).toMatchObject({ kind: 'ConfigMap', metadata: { name: 'from-proto', namespace: 'default', labels: { team: 'storage' } }, data: { a: '1', b: 'two' } });
    expect(r.body.metadata).not.toHaveProperty('generateName');
  });

  test('a zero the sender set through a pointer is kept; a plain zero is dropped as omitempty drops it', async () => {
    const r = await post('/api/v1/namespaces/default/configmaps', body('v1', 'ConfigMap', [meta('mutable'), [4, 0]]));
    expect(r.body.immutable).toBe(false);
    expect(r.body.metadata).not.toHaveProperty('generation');
  });

  test('Secret bytes arrive base64-encoded in JSON', async () => {
    const r = await post('/api/v1/namespaces/default/secrets', body('v1', 'Secret', [meta('token'), [2, [[1, 'token'], [2, 's3cret']]], [3, 'Opaque']]));
    expect(r.status).toBe(201);
    expect(r.body.data).toEqual({ token: Buffer.from('s3cret').toString('base64') });
  });

  test('a decoded object is validated like any other', async () => {
    const r = await post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', body('rbac.authorization.k8s.io/v1', 'ClusterRoleBinding', [
      meta('no-namespace'),
      [2, [[1, 'ServiceAccount'], [2, ''], [3, 'agent'], [4, '']]],
      [3, [[1, 'rbac.authorization.k8s.io'], [2, 'ClusterRole'], [3, 'view']]],
    ]));
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([{ reason: 'FieldValueRequired', field: 'subjects[0].namespace', message: 'Required value' }]);
  });

  test('a body without the k8s magic is a bad request', async () => {
    const r = await post('/api/v1/namespaces/default/configmaps', message([meta('no-magic')]));
    expect(r.status).toBe(400);
    expect(r.body.message).toBe('provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  });

  test('a field the wire layout does not describe is refused, not guessed', async () => {
    const r = await post('/api/v1/namespaces/default/configmaps', body('v1', 'ConfigMap', [meta('unknown-field'), [9, 'x']]));
    expect(r.status).toBe(415);
    expect(r.body.message).toBe('the test API server does not decode protobuf field 9 of ConfigMap; send application/json');
  });

  test('a kind without a protobuf layout gets the 415 of a server without that codec', async () => {
    const r = await post('/api/v1/persistentvolumes', body('v1', 'PersistentVolume', [meta('pv')]));
    expect(r.status).toBe(415);
    expect(r.body.message).toBe('the body of the request was in an unknown format - accepted media types include: application/json, application/yaml');
  });

  test('a client that accepts protobuf only is answered 406', async () => {
    const r = await post('/api/v1/namespaces/default/configmaps', body('v1', 'ConfigMap', [meta('proto-only')]), PROTOBUF);
    expect(r.status).toBe(406);
    expect(r.body.reason).toBe('NotAcceptable');
  });
});

describe('Secrets', () => {
  test('stringData is merged into data and not stored, as the v1 conversion does', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/secrets', { metadata: { name: 'merged' }, data: { a: 'YQ==' }, stringData: { b: 'bee' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ type: 'Opaque', data: { a: 'YQ==', b: Buffer.from('bee').toString('base64') } });
    expect(r.body).not.toHaveProperty('stringData');
  });

  test('a TLS Secret needs its certificate and key', async () => {
    const r = await call(server, 'POST', '/api/v1/namespaces/default/secrets', { metadata: { name: 'tls' }, type: 'kubernetes.io/tls', data: {} });
    expect(r.status).toBe(422);
    expect(r.body.details.causes.map((c: any) => c.field)).toEqual(['data[tls.crt]', 'data[tls.key]']);
  });

  test('a Secret type may not change', async () => {
    const created = (await call(server, 'POST', '/api/v1/namespaces/default/secrets', { metadata: { name: 'typed' } })).body;
    const r = await call(server, 'PUT', '/api/v1/namespaces/default/secrets/typed', { ...created, type: 'example.com/other' });
    expect(r.status).toBe(422);
    expect(r.body.details.causes).toEqual([{ reason: 'FieldValueInvalid', field: 'type', message: 'Invalid value: "example.com/other": field is immutable' }]);
  });
});
