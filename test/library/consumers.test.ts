import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { LIBRARY, packLibrary, REPO, run } from './library';

/**
 * The packed library installed into fresh cdk8s apps, compiled with strict tsc and
 * synthesized. Each app keeps its install directory under .cache/ between runs (only the
 * library is installed anew); npm takes the rest from its cache (--prefer-offline).
 */
interface Consumer {
  readonly dir: string;
  /** The app's own dependencies, exact versions. */
  readonly deps: Record<string, string>;
  /** The cdk8s-plus the app uses itself. */
  readonly plus: string;
}

const MATRIX: Record<string, Consumer> = {
  // What `cdk8s init` makes today, on a constructs patch other than this repository's.
  'the newest cdk8s and cdk8s-plus-33, constructs 10.8.0': {
    dir: 'plus-33', plus: 'cdk8s-plus-33', deps: { 'cdk8s': '2.70.106', 'cdk8s-plus-33': '2.5.57', 'constructs': '10.8.0' },
  },
  // The lowest end of every peer range.
  'cdk8s-plus-28 2.0.3, cdk8s 2.68.12, constructs 10.3.0': {
    dir: 'plus-28-lowest', plus: 'cdk8s-plus-28', deps: { 'cdk8s': '2.68.12', 'cdk8s-plus-28': '2.0.3', 'constructs': '10.3.0' },
  },
};

const CACHE = join(REPO, '.cache', 'consumers');
const IMAGE = 'registry.example.com/storage/local-volume-provisioner:0.1.0';

/** The app: the construct beside one of the app's own cdk8s-plus objects, given that binding's k8s types. */
const main = (plus: string) => `import { App, Chart, Duration } from 'cdk8s';
import * as kplus from '${plus}';
import { LocalVolumeProvisioner } from '${LIBRARY.name}';

const app = new App();
const chart = new Chart(app, 'storage');
new kplus.ConfigMap(chart, 'settings', { data: { mode: 'local' } });
const tolerations: kplus.k8s.Toleration[] = [{ key: 'storage', operator: 'Exists', effect: 'NoSchedule' }];
new LocalVolumeProvisioner(chart, 'provisioner', {
  image: '${IMAGE}',
  storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }],
  tolerations,
  serviceMonitor: { interval: Duration.seconds(30) },
});
app.synth();
`;

const TSCONFIG = {
  compilerOptions: { strict: true, noEmitOnError: true, skipLibCheck: false, types: [], target: 'ES2022', lib: ['es2022'], module: 'commonjs', outDir: 'out' },
  files: ['main.ts'],
};

interface PodSpec { containers: Array<{ image: string }>; tolerations?: unknown[] }
interface K8sObject { kind: string; spec?: { template?: { spec?: PodSpec } } }

let tarball: string;
beforeAll(() => {
  mkdirSync(CACHE, { recursive: true });
  tarball = packLibrary(CACHE).tarball;
}, 300_000);

describe.each(Object.entries(MATRIX))('a cdk8s app on %s', (_name, consumer) => {
  const dir = join(CACHE, consumer.dir);
  let objects: K8sObject[];

  beforeAll(() => {
    mkdirSync(dir, { recursive: true });
    const dependencies = { ...consumer.deps, [LIBRARY.name]: `file:${tarball}` };
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `consumer-${consumer.dir}`, private: true, dependencies }, null, 2));
    // The library's tarball changes with every build; everything else stays installed.
    rmSync(join(dir, 'node_modules', LIBRARY.name), { recursive: true, force: true });
    rmSync(join(dir, 'package-lock.json'), { force: true });
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund'], dir);
    writeFileSync(join(dir, 'main.ts'), main(consumer.plus));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
    rmSync(join(dir, 'out'), { recursive: true, force: true });
    rmSync(join(dir, 'dist'), { recursive: true, force: true });
  }, 600_000);

  test('the library needs only its peers and the yaml inside it: none of the agent\'s dependencies', () => {
    const tree = JSON.parse(run('npm', ['ls', '--all', '--json'], dir)) as { dependencies: Record<string, { dependencies?: Record<string, unknown> }> };
    const needs = Object.keys(tree.dependencies[LIBRARY.name].dependencies ?? {});
    expect(needs.sort()).toEqual([...Object.keys(LIBRARY.peerDependencies), 'yaml'].sort());
    expect(readdirSync(join(dir, 'node_modules', LIBRARY.name, 'node_modules')).filter((name) => !name.startsWith('.'))).toEqual(['yaml']);
  });

  test('it has one copy each of cdk8s and constructs, its own', () => {
    for (const peer of ['cdk8s', 'constructs']) {
      const copies = run('npm', ['ls', peer, '--all', '--parseable'], dir).trim().split('\n');
      expect(copies).toEqual([join(dir, 'node_modules', peer)]);
      expect(JSON.parse(readFileSync(join(copies[0], 'package.json'), 'utf8')).version).toBe(consumer.deps[peer]);
    }
  });

  test('it compiles with strict tsc, the library\'s declarations included', () => {
    run(process.execPath, [join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], dir);
  }, 300_000);

  test('it synthesizes the provisioner beside the app\'s own objects', () => {
    run(process.execPath, [join('out', 'main.js')], dir);
    objects = parseAllDocuments(readFileSync(join(dir, 'dist', 'storage.k8s.yaml'), 'utf8')).map((d) => d.toJS() as K8sObject);
    const kinds = objects.map((o) => o.kind);
    expect(kinds).toEqual(expect.arrayContaining(['ConfigMap', 'StorageClass', 'DaemonSet', 'ClusterRole', 'ServiceMonitor']));
    const daemonSet = objects.find((o) => o.kind === 'DaemonSet')!;
    expect(daemonSet.spec!.template!.spec!.containers[0].image).toBe(IMAGE);
    expect(daemonSet.spec!.template!.spec!.tolerations).toEqual([{ key: 'storage', operator: 'Exists', effect: 'NoSchedule' }]);
  }, 300_000);
});
