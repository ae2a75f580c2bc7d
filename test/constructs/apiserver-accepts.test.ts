import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DEFAULTS, DEVICES, FULL, JOB_CLEANING, NODE_CLEANUP, POOLS } from './stacks';
import { Manifest, synth } from './support';
import { Kubernetes } from '../support/kubernetes';

/**
 * What the construct synthesizes passes a real apiserver's validation (pod templates
 * included, and the Prometheus operator's own CRD schemas for the ServiceMonitor and
 * PrometheusRule): the committed dist/local-volume-provisioner.k8s.yaml and every stack
 * the snapshots pin.
 */
const DIST = join(__dirname, '..', '..', 'dist', 'local-volume-provisioner.k8s.yaml');

let server: Kubernetes | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Creates every object in a fresh server, its namespaces first; returns the errors, one line per refused object. */
async function refusals(manifests: Manifest[]): Promise<string[]> {
  server = await Kubernetes.start({ monitoringCrds: true });
  const namespaces = new Set(manifests.filter((m) => m.metadata?.namespace).map((m) => m.metadata.namespace as string));
  for (const m of manifests.filter((o) => o.kind === 'Namespace')) namespaces.delete(m.metadata.name);
  for (const name of namespaces) {
    if (!await server.get('v1', 'Namespace', name)) await server.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }
  const ordered = [...manifests.filter((m) => m.kind === 'Namespace'), ...manifests.filter((m) => m.kind !== 'Namespace')];
  const errors: string[] = [];
  for (const m of ordered) {
    try {
      await server.create(m);
    } catch (e) {
      errors.push(`${m.kind} ${m.metadata?.name}: ${(e as Error).message}`);
    }
  }
  return errors;
}

test('the committed dist/local-volume-provisioner.k8s.yaml is accepted', async () => {
  const manifests = parseAllDocuments(readFileSync(DIST, 'utf8')).map((d) => d.toJSON()).filter(Boolean);
  expect(manifests.map((m) => m.kind)).toContain('DaemonSet');
  expect(await refusals(manifests)).toEqual([]);
});

test.each(Object.entries({ DEFAULTS, DEVICES, JOB_CLEANING, NODE_CLEANUP, POOLS, FULL }))('the %s stack is accepted', async (_name, props) => {
  expect(await refusals(synth(props))).toEqual([]);
});
