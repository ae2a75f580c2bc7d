import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Manifest, schemaErrors } from './support';

/** The root cdk8s app, run the way a user runs it: `npx cdk8s synth` with cdk8s.yaml. */
const ROOT = join(__dirname, '..', '..');
let out: string;
let manifests: Manifest[];

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'lvp-synth-'));
  // --no-check-upgrade: the CLI would otherwise ask the npm registry for a newer version.
  execFileSync('npx', ['cdk8s', 'synth', '--no-check-upgrade', '--output', out], { cwd: ROOT, stdio: 'pipe' });
  manifests = readdirSync(out)
    .filter((f) => f.endsWith('.k8s.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(out, f), 'utf8')).map((d) => d.toJS() as Manifest));
}, 60_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

test('cdk8s synth writes local-volume-provisioner.k8s.yaml', () => {
  expect(readdirSync(out)).toEqual(['local-volume-provisioner.k8s.yaml']);
});

test('the example deploys the fast-disks class at /mnt/fast-disks with a ServiceMonitor', () => {
  const kinds = manifests.map((m) => `${m.kind}/${m.metadata.name}`);
  expect(kinds).toEqual(expect.arrayContaining([
    'Namespace/local-volume-provisioner',
    'StorageClass/fast-disks',
    'ConfigMap/local-volume-provisioner-config',
    'DaemonSet/local-volume-provisioner',
    'Service/local-volume-provisioner',
    'ServiceMonitor/local-volume-provisioner',
  ]));
  const ds = manifests.find((m) => m.kind === 'DaemonSet')!;
  expect(ds.spec.template.spec.containers[0].volumeMounts).toContainEqual(expect.objectContaining({ mountPath: '/mnt/fast-disks', mountPropagation: 'HostToContainer' }));
});

test('every object of the example validates against its schema', () => {
  expect(schemaErrors(manifests)).toEqual([]);
});

test('the committed dist/ is what the example app synthesizes now (run `npx projen synth` after changing it)', () => {
  const committed = join(ROOT, 'dist', 'local-volume-provisioner.k8s.yaml');
  expect(readFileSync(committed, 'utf8')).toEqual(readFileSync(join(out, 'local-volume-provisioner.k8s.yaml'), 'utf8'));
});
