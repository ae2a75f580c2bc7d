import { Socket } from 'node:net';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { startTestApiServer, TestApiServer } from '../../apiserver';

let server: TestApiServer;

beforeAll(async () => {
  server = await startTestApiServer({ tls: true });
});
afterAll(() => server.stop());

/** Counts TCP connections this process opens while `work` runs. */
async function connectionsOpenedBy(work: () => Promise<void>): Promise<number> {
  const connect = Socket.prototype.connect;
  let opened = 0;
  Socket.prototype.connect = function (this: Socket, ...args: unknown[]) {
    opened++;
    return (connect as (...a: unknown[]) => Socket).apply(this, args);
  } as typeof connect;
  try {
    await work();
  } finally {
    Socket.prototype.connect = connect;
  }
  return opened;
}

describe('connection reuse', () => {
  test('sequential requests over TLS share a connection, verified against the kubeconfig CA', async () => {
    const api = new KubeApi(server.kubeConfig());
    const opened = await connectionsOpenedBy(async () => {
      for (let i = 0; i < 20; i++) await api.getNode(`n-${i}`);
    });
    // Without reuse this is 20; a socket handed back a moment late may make it 2.
    expect(opened).toBeLessThanOrEqual(2);
    api.close();
  });
});
