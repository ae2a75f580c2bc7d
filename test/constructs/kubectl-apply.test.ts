import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { FULL } from './stacks';
import { synth } from './support';
import { Kubernetes } from '../support/kubernetes';

/**
 * The synthesized manifests go through the real `kubectl apply` to a real apiserver (with
 * the Prometheus operator's CRDs); applying twice changes nothing.
 */
let server: Kubernetes;
let dir: string;
let kubeconfig: string;

beforeAll(async () => {
  server = await Kubernetes.start({ monitoringCrds: true });
  dir = mkdtempSync(join(tmpdir(), 'lvp-apply-'));
  kubeconfig = join(dir, 'kubeconfig');
  await server.writeKubeconfig(kubeconfig);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs kubectl without blocking the event loop, which serves the fault proxy. */
async function kubectl(...args: string[]): Promise<string> {
  try {
    return (await promisify(execFile)('kubectl', ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8', timeout: 30_000 })).stdout;
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
  }
}

test('kubectl apply accepts every object of the full-options stack, twice', async () => {
  const manifests = synth({ ...FULL, createNamespace: true });
  const file = join(dir, 'full.k8s.yaml');
  writeFileSync(file, manifests.map((m) => stringify(m)).join('---\n'));
  // The ServiceMonitor and PrometheusRule go to an existing monitoring namespace.
  await server.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'monitoring' } });
  const first = await kubectl('apply', '-f', file);
  expect(first.trim().split('\n')).toHaveLength(manifests.length);
  const second = await kubectl('apply', '-f', file);
  expect(second.trim().split('\n').filter((l) => !l.endsWith(' unchanged'))).toEqual([]);
  expect(await server.get('apps/v1', 'DaemonSet', 'lvp', 'storage')).toBeDefined();
  expect(await server.get('monitoring.coreos.com/v1', 'ServiceMonitor', 'lvp', 'monitoring')).toBeDefined();
}, 180_000);
