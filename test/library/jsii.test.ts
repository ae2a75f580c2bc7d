import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertLibraryCompiled, LIBRARY, LIBRARY_DIR, run } from './library';

/**
 * The library in other languages: jsii-pacmak generates the Python and Java packages
 * from the jsii assembly, here as sources (python-app.test.ts and java-app.test.ts build
 * the wheel and the jar and run an app on each).
 */
let out: string;
beforeAll(() => {
  assertLibraryCompiled();
  out = mkdtempSync(join(tmpdir(), 'lvp-pacmak-'));
  run('npx', ['jsii-pacmak', '--code-only', '--targets', 'python', 'java', '--outdir', out], LIBRARY_DIR);
}, 600_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

interface Assembly {
  readonly types: Record<string, {
    readonly kind: string;
    readonly properties?: ReadonlyArray<{ readonly name: string; readonly type: { readonly fqn?: string; readonly primitive?: string } }>;
  }>;
}

test('the assembly has the construct, its props and the monitoring objects', () => {
  const assembly = JSON.parse(readFileSync(join(LIBRARY_DIR, '.jsii'), 'utf8')) as Assembly;
  const types = Object.keys(assembly.types).map((fqn) => fqn.replace(`${LIBRARY.name}.`, ''));
  expect(types).toEqual(expect.arrayContaining([
    'LocalVolumeProvisioner', 'LocalVolumeProvisionerProps', 'LocalStorageClassProps', 'DeviceDialectProps',
    'NodeCleanupProps', 'ServiceMonitor', 'PrometheusRule',
  ]));
  expect(assembly.types[`${LIBRARY.name}.LocalVolumeProvisioner`].kind).toBe('class');
});

test('every closed set of the props is an enum, so Python and Java callers get typed values', () => {
  const assembly = JSON.parse(readFileSync(join(LIBRARY_DIR, '.jsii'), 'utf8')) as Assembly;
  const typeOf = (struct: string, prop: string) => assembly.types[`${LIBRARY.name}.${struct}`].properties!.find((p) => p.name === prop)!.type;
  const closedSets: Array<[string, string, string]> = [
    ['LocalStorageClassProps', 'volumeMode', 'VolumeMode'],
    ['LocalStorageClassProps', 'accessMode', 'AccessMode'],
    ['StorageClassOptions', 'reclaimPolicy', 'ReclaimPolicy'],
    ['DeviceSpecProps', 'volumeMode', 'VolumeMode'],
    ['DeviceSpecProps', 'fsType', 'DeviceFsType'],
    ['DeviceSpecProps', 'reclaimPolicy', 'ReclaimPolicy'],
    ['DeviceSpecProps', 'wipe', 'DeviceWipe'],
    ['LocalStorageClassProps', 'pool', 'PoolBackend'],
    ['RelabelConfig', 'action', 'RelabelAction'],
  ];
  for (const [struct, prop, enumName] of closedSets) {
    expect([struct, prop, typeOf(struct, prop)]).toEqual([struct, prop, { fqn: `${LIBRARY.name}.${enumName}` }]);
    expect(assembly.types[`${LIBRARY.name}.${enumName}`].kind).toBe('enum');
  }
});

test('the Python package is valid Python with the construct and its props, requiring the same peers', () => {
  const pkg = join(out, 'python', 'src', 'cdk8s_local_volume_provisioner');
  const init = readFileSync(join(pkg, '__init__.py'), 'utf8');
  expect(init).toMatch(/^class LocalVolumeProvisioner\(/m);
  expect(init).toMatch(/^class LocalVolumeProvisionerProps:/m);
  expect(existsSync(join(pkg, '_jsii', `${LIBRARY.name}@${LIBRARY.version}.jsii.tgz`))).toBe(true);
  const compile = spawnSync('python3', ['-m', 'py_compile', join(pkg, '__init__.py'), join(pkg, '_jsii', '__init__.py')], { encoding: 'utf8' });
  expect([compile.status, compile.stderr]).toEqual([0, '']);
  const setup = readFileSync(join(out, 'python', 'setup.py'), 'utf8');
  for (const peer of Object.keys(LIBRARY.peerDependencies)) expect(setup).toContain(`"${peer}>=`);
});

test('the Java package has the construct and its props, and depends on the same peers', () => {
  const sources = join(out, 'java', 'src', 'main', 'java', 'io', 'github', 'localvolumeprovisioner', 'cdk8s');
  expect(readFileSync(join(sources, 'LocalVolumeProvisioner.java'), 'utf8')).toMatch(/public class LocalVolumeProvisioner extends software\.constructs\.Construct/);
  expect(existsSync(join(sources, 'LocalVolumeProvisionerProps.java'))).toBe(true);
  const pom = readFileSync(join(out, 'java', 'pom.xml'), 'utf8');
  for (const artifact of ['cdk8s', 'cdk8s-plus-28', 'constructs']) expect(pom).toContain(`<artifactId>${artifact}</artifactId>`);
});
