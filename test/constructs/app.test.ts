import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { Manifest, schemaErrors } from './support';

/** The root cdk8s app, run the way the README says: `npx projen synth` (cdk8s synth with cdk8s.yaml). */
const ROOT = join(__dirname, '..', '..');
let out: string;
let stderr: string;
let manifests: Manifest[];

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'lvp-synth-'));
  // A fresh HOME, so no cached answer of cdk8s-cli's update check (~/.cdk8s-cli.version)
  // hides the check; npm keeps the user's own settings.
  const home = mkdtempSync(join(tmpdir(), 'lvp-home-'));
  const run = spawnSync('npx', ['projen', 'synth', '--output', out], {
    cwd: ROOT, encoding: 'utf8', env: { ...process.env, HOME: home, npm_config_userconfig: join(homedir(), '.npmrc') },
  });
  rmSync(home, { recursive: true, force: true });
  stderr = run.stderr;
  if (run.status !== 0) throw new Error(`npx projen synth failed:\n${run.stdout}${run.stderr}`);
  manifests = readdirSync(out)
    .filter((f) => f.endsWith('.k8s.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(out, f), 'utf8')).map((d) => d.toJS() as Manifest));
}, 180_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

test('the README\'s synth command is the quiet one', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  expect(readme).toContain('npm ci && npx projen synth');
  expect(readme).not.toMatch(/npx cdk8s synth(?! --no-check-upgrade)/);
});

test('synth prints no stack trace and no update notice (cdk8s-cli\'s update check is off)', () => {
  expect(stderr).not.toMatch(/\n\s+at |new version|Error/);
});

test('synth says the example\'s default image must be built and pushed, naming the image prop', () => {
  expect(stderr).toMatch(/Warning: LocalVolumeProvisioner local-volume-provisioner\/provisioner: image: not given, .* is not published; build it/);
});

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
