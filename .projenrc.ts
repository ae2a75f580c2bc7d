import { javascript, typescript } from 'projen';

/**
 * Node 24-era output that still loads the ES-module-only client-node through
 * require(esm) (`module: nodenext`); ts-jest transpiles file by file (isolatedModules).
 */
const compilerOptions: javascript.TypeScriptCompilerOptions = {
  lib: ['es2022'],
  target: 'ES2022',
  module: 'nodenext',
  moduleResolution: javascript.TypeScriptModuleResolution.NODE_NEXT,
  esModuleInterop: true,
  skipLibCheck: true,
  isolatedModules: true,
};

/**
 * The one source of package.json, tsconfig, jest and eslint settings.
 * Versions are pinned on purpose; the reasons are in README.md ("Development")
 * and ../shared/reference/toolchain.md.
 */
const project = new typescript.TypeScriptProject({
  name: 'local-volume-provisioner',
  description:
    'A Kubernetes local PersistentVolume provisioner (drop-in for the Go local static provisioner and the device-selecting local-pv-provisioner) and the cdk8s construct that deploys it.',
  license: 'Apache-2.0',
  defaultReleaseBranch: 'main',
  packageManager: javascript.NodePackageManager.NPM,
  projenrcTs: true,
  projenVersion: '0.103.25',

  // TypeScript 7 has no JavaScript compiler API (ts-jest, ts-node and
  // typescript-eslint need one).
  typescriptVersion: '~5.9.3',
  minNodeVersion: '20.19.0',

  // The node agent loads none of client-node, prom-client or pino (src/runtime/kube's
  // HTTP client, observability's registry and logger): each cost it tens of MB of RSS.
  deps: [
    'cdk8s@^2.70.0',
    // Frozen upstream at 2.5.6; its unsafe defaults are overridden in src/constructs.
    'cdk8s-plus-28@2.5.6',
    'constructs@^10.4.0',
    // YAML 1.1 booleans ("yes") and exact round trips for ConfigMap values.
    'yaml@^2.8.0',
  ],
  devDeps: [
    // The tests' own clients (the test API server is proven against the real one) and the
    // runtime's object types. 1.4 is the last line that loads on Node 20.19+ (2.x needs
    // undici 8 and Node >= 22.19).
    '@kubernetes/client-node@~1.4.0',
    // Node 24 LTS from the registry: tests run on the same Node as the image, and
    // Jest 30 can require() the ES-module-only client-node there (see README).
    'node@~24.21.0',
    '@types/node@^24',
    'fast-check@^4.3.0',
    'kubernetes-models@^4.5.1',
    '@kubernetes-models/prometheus-operator@^6.0.0',
    'cdk8s-cli@^2.200.0',
    // Bundles the agent into one file for the container image (image/Dockerfile).
    'esbuild@^0.28.2',
    // The base of test/support/image-suites-last.ts (jest's own test order).
    '@jest/test-sequencer@^30',
  ],
  peerDeps: [],

  jestOptions: {
    jestVersion: '^30',
    // Snapshot tests must be able to fail in CI, so never rewrite them implicitly.
    updateSnapshot: javascript.UpdateSnapshot.NEVER,
    jestConfig: {
      testEnvironment: 'node',
      collectCoverage: false,
      testPathIgnorePatterns: ['/node_modules/', '/lib/', '/dist/'],
      // The container image's suites run last, while the image builds (see the test task).
      testSequencer: '<rootDir>/test/support/image-suites-last.ts',
      // jest's 5 s default is an idle machine's margin: a suite on a loaded 2-core CI machine
      // waits for conditions, and gives up only after this long (longer suites set their own).
      testTimeout: 30_000,
      // This package exports only an "import" condition, which jest's CommonJS resolver skips.
      moduleNameMapper: {
        '^@kubernetes-models/prometheus-operator/(.*)$': '<rootDir>/node_modules/@kubernetes-models/prometheus-operator/$1.js',
      },
    },
  },
  tsconfig: { compilerOptions },
  // app/ is the example cdk8s app behind `npx projen synth`.
  eslintOptions: { dirs: ['src'], devdirs: ['test', 'app', 'bench', 'build-tools', 'projenrc'] },
  tsconfigDev: {
    include: ['../app/**/*.ts', '../bench/**/*.ts'],
    compilerOptions,
  },

  // CI here is .ci/run on a clean clone, not GitHub Actions; nothing is published.
  github: false,
  release: false,
  package: false,
  depsUpgrade: false,
  buildWorkflow: false,
  pullRequestTemplate: false,
  sampleCode: false,
  gitignore: ['/coverage/', '/test-reports/', '/.cache/', '*.tgz'],
});

project.addFields({
  engines: { node: '>=20.19.0' },
  // npm 11 warns about install scripts it was not told to allow (and will block them):
  // `node` must run its preinstall to put Node 24 at node_modules/.bin/node for the tests;
  // @parcel/watcher (cdk8s-cli's file watcher) builds its native module. esbuild's
  // only swaps its JavaScript launcher for the binary, which works without it.
  allowScripts: { 'node': true, '@parcel/watcher': true, 'esbuild': false },
  // `local-pv-provisioner` is the device-selecting provisioner's name: the same binary
  // started under it speaks that dialect, so its users change only the image.
  bin: {
    'local-volume-provisioner': 'lib/runtime/cli/main.js',
    'local-pv-provisioner': 'lib/runtime/cli/main.js',
  },
});

// dist/ holds the synthesized manifests (committed, and the README's main job), not an npm pack.
project.gitignore.include('/dist/');

// Node 24 with vm modules lets Jest 30 require() ES modules (client-node).
// ts-jest only transpiles (isolatedModules), so the tests are type-checked here once;
// jest then runs in a private mount namespace so no test mount outlives the run, while
// the container image builds in the background for the suites that run it (last).
project.testTask.reset('tsc --noEmit -p test/tsconfig.json');
project.testTask.exec('scripts/in-private-mount-namespace.sh scripts/with-image-build.sh jest --passWithNoTests --ci', { receiveArgs: true });
project.testTask.spawn(project.tasks.tryFind('eslint')!);
project.testTask.env('NODE_OPTIONS', '--experimental-vm-modules --no-warnings=ExperimentalWarning');

// app/ and bench/ have no tsconfig of their own; lint them with the default project, like .projenrc.ts.
project.tryFindObjectFile('.eslintrc.json')?.addOverride('parserOptions.projectService.allowDefaultProject', ['.projenrc.ts', 'app/*.ts', 'bench/*.ts']);

// The test Kubernetes API server in the foreground: --kubeconfig FILE [--port N] [--rbac].
project.addTask('test-apiserver', {
  description: 'Run the test Kubernetes API server in the foreground',
  exec: 'ts-node --transpile-only -P test/tsconfig.json test/apiserver/main.ts',
  receiveArgs: true,
});

// Benchmarks (as root): prints a table and writes docs/benchmarks.md.
project.addTask('bench', {
  description: 'Benchmarks (as root): prints a table and writes docs/benchmarks.md',
  exec: 'scripts/in-private-mount-namespace.sh ts-node --transpile-only -P test/tsconfig.json bench/run.ts',
});

// The container image the construct deploys by default, built with docker when an
// engine answers, else with podman (as root; base images made locally when missing).
project.addTask('image', {
  description: 'Build image/Dockerfile as the construct\'s default image (docker, else podman)',
  exec: 'scripts/image.sh',
});

// The README's main job: `npx projen synth` writes dist/*.k8s.yaml from app/main.ts.
// --no-check-upgrade: cdk8s-cli's update check asks the npm registry before any command
// runs (cdk8s.yaml cannot turn it off) and prints a stack trace offline.
// Extra args (e.g. --output DIR) go to cdk8s synth.
project.addTask('synth', {
  description: 'Synthesize dist/*.k8s.yaml from the example app (app/main.ts)',
  exec: 'cdk8s synth --no-check-upgrade',
  receiveArgs: true,
});

project.synth();
