import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertLibraryCompiled, LIBRARY_DIR, REPO, run } from './library';

/**
 * The library from Python for real: jsii-pacmak builds the wheel, a virtual environment
 * gets it with cdk8s and cdk8s-plus-28 from PyPI (its install_requires), and the example
 * app written in Python (examples/python/app.py) synthesizes what the TypeScript one
 * (app/main.ts, committed as dist/) does.
 */
let work: string;
let python: string;
beforeAll(() => {
  assertLibraryCompiled();
  work = mkdtempSync(join(tmpdir(), 'lvp-python-'));
  run('npx', ['jsii-pacmak', '--targets', 'python', '--outdir', join(work, 'pacmak')], LIBRARY_DIR);
  const wheel = readdirSync(join(work, 'pacmak', 'python')).find((f) => f.endsWith('.whl'));
  if (!wheel) throw new Error('jsii-pacmak made no wheel');
  run('python3', ['-m', 'venv', join(work, 'venv')], work);
  python = join(work, 'venv', 'bin', 'python');
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', join(work, 'pacmak', 'python', wheel)], work);
}, 600_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

test('the Python example app synthesizes exactly what the TypeScript example app does', () => {
  const out = join(work, 'dist');
  run(python, [join(REPO, 'examples', 'python', 'app.py'), out], work);
  expect(readdirSync(out)).toEqual(['local-volume-provisioner.k8s.yaml']);
  expect(readFileSync(join(out, 'local-volume-provisioner.k8s.yaml'), 'utf8'))
    .toBe(readFileSync(join(REPO, 'dist', 'local-volume-provisioner.k8s.yaml'), 'utf8'));
});

test('a prop error is raised in Python with the construct\'s message', () => {
  const script = [
    'from cdk8s import App, Chart',
    'from cdk8s_local_volume_provisioner import LocalStorageClassProps, LocalVolumeProvisioner',
    'chart = Chart(App(), "c")',
    'LocalVolumeProvisioner(chart, "p", storage_classes=[LocalStorageClassProps(name="a", host_dir="mnt/a")])',
    'chart.to_json()',
  ].join('\n');
  expect(() => run(python, ['-c', script], work)).toThrow(/storageClasses\[0\]\.hostDir: "mnt\/a" is not an absolute path/);
});
