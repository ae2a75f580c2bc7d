/**
 * node-cleanup's --kube-api-endpoint, as upstream builds its client with
 * client-go's BuildConfigFromFlags(masterUrl, kubeconfig): with a kubeconfig,
 * the URL replaces its current cluster's server; credentials stay.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { currentContext, loadKubeConfig } from '../../../src/runtime/kube/kubeconfig';
import { cleanupPrivileged, makeTempDir } from '../../support/privileged';

afterAll(cleanupPrivileged);

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: { server: "https://kubeconfig.example:6443" }
- name: other
  cluster: { server: "https://other.example:6443" }
users:
- name: u
  user: { token: secret }
contexts:
- name: ctx
  context: { cluster: c, user: u }
current-context: ctx
`;

function kubeconfigFile(): string {
  const file = path.join(makeTempDir('lvp-kubeconfig-'), 'config');
  fs.writeFileSync(file, KUBECONFIG);
  return file;
}

test('the endpoint replaces the current cluster\'s server and keeps the user', () => {
  const kc = loadKubeConfig(kubeconfigFile(), 'https://endpoint.example:6443');
  expect(currentContext(kc).cluster.server).toBe('https://endpoint.example:6443');
  expect(currentContext(kc).user.token).toBe('secret');
  expect(kc.clusters.find((c) => c.name === 'other')?.server).toBe('https://other.example:6443');
});

test('without an endpoint the kubeconfig\'s server stays', () => {
  expect(currentContext(loadKubeConfig(kubeconfigFile())).cluster.server).toBe('https://kubeconfig.example:6443');
});
