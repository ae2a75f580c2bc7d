import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';

describe('ES-module-only dependencies load under jest', () => {
  test('@kubernetes/client-node builds an API client from a kubeconfig', () => {
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser({ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: false }, { name: 'u' });
    expect(kc.makeApiClient(CoreV1Api)).toBeInstanceOf(CoreV1Api);
    expect(kc.getCurrentCluster()?.server).toBe('http://127.0.0.1:1');
  });

  test('prometheus-operator models validate a ServiceMonitor', () => {
    const sm = new ServiceMonitor({ metadata: { name: 'x' }, spec: { endpoints: [{ port: 'metrics' }], selector: {} } });
    expect(() => sm.validate()).not.toThrow();
  });
});
