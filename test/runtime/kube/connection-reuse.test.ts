import { KubeApi } from '../../../src/runtime/kube/api-client';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;

beforeAll(async () => {
  server = await Kubernetes.start();
});
afterAll(() => server.stop());

describe('connection reuse', () => {
  test('sequential requests over TLS share a connection, verified against the kubeconfig CA', async () => {
    const api = new KubeApi(server.kubeConfig());
    const before = server.proxy.connectionsAccepted;
    for (let i = 0; i < 20; i++) await api.getNode(`n-${i}`);
    // Without reuse this is 20; a socket handed back a moment late may make it 2.
    expect(server.proxy.connectionsAccepted - before).toBeLessThanOrEqual(2);
    api.close();
  });
});
