import { JsonFile, javascript, typescript } from 'projen';

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
 * The release: the construct library's version and the tag of the image it deploys by
 * default (src/constructs/image.ts reads it from the package.json beside lib/ or src/,
 * which is the repository's or the library's, both written here).
 */
const VERSION = '0.1.0';

/** The construct library's npm name; construct-library/ is its package. */
const LIBRARY = 'cdk8s-local-volume-provisioner';

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

  // The agent's own dependencies (the construct library's are in construct-library/), bundled
  // into it for the image (image/Dockerfile). It loads none of client-node, prom-client or pino
  // (src/runtime/kube's HTTP client, observability's registry and logger): each cost it tens
  // of MB of RSS. yaml: YAML 1.1 booleans ("yes") and exact round trips for ConfigMap values;
  // gRPC for its CSI services (src/runtime/csi), which load the protos scripts/protos.sh
  // fetches at start rather than generated code.
  deps: ['yaml@^2.8.0', '@grpc/grpc-js@^1.14.0', '@grpc/proto-loader@^0.8.0'],
  devDeps: [
    // The construct library's peers (construct-library/package.json), at the versions
    // this repository's tests, app/ and bench/ use.
    'cdk8s@^2.70.0',
    // Frozen upstream at 2.5.6; its unsafe defaults are overridden in src/constructs.
    'cdk8s-plus-28@2.5.6',
    'constructs@^10.4.0',
    // The construct library's compiler (jsii ~5.9 is TypeScript 5.9) and its Python and
    // Java code generator.
    'jsii@~5.9.54',
    'jsii-pacmak@^1.140.0',
    // The tests' own clients and the runtime's object types. 1.4 is the last line that
    // loads on Node 20.19+ (2.x needs undici 8 and Node >= 22.19).
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
    // The base of test/support/suite-order.ts (jest's own test order).
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
      // The node VM's suite first, beside the others; the container image's suites last (see the test task).
      testSequencer: '<rootDir>/test/support/suite-order.ts',
      // jest's 5 s default is an idle machine's margin: a test on a loaded 2-core CI machine waits for
      // conditions, and this is only a guard against a hang (the node VM's and the image's suites set their own).
      testTimeout: 180_000,
      // Three suites at once, even on 2 cores (jest's default there is one): the node VM's suite holds one
      // worker for most of the run while its VM takes about a core, and the other suites spend much of their
      // time waiting on their own control plane (each suite has one), which another suite's work overlaps.
      maxWorkers: 3,
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
  version: VERSION,
  // This package is the repository: the node agent (shipped as the container image,
  // image/Dockerfile) and its tests. The construct ships as construct-library/.
  private: true,
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

// node_modules as a link (to another worktree's install) too: projen's pattern matches only a directory.
project.gitignore.exclude('/node_modules');

// dist/ holds the synthesized manifests (committed, and the README's main job), not an npm pack.
project.gitignore.include('/dist/');
project.gitignore.exclude('/examples/java/target/');
// Fetched from the Go module proxy by scripts/protos.sh, never written here.
project.gitignore.exclude('/protos/');

// Node 24 with vm modules lets Jest 30 require() ES modules (client-node).
// ts-jest only transpiles (isolatedModules), so the tests are type-checked here once;
// jest then runs in a private mount namespace so no test mount outlives the run, while
// the container image builds in the background for the suites that run it (last).
project.testTask.reset('tsc --noEmit -p test/tsconfig.json');
// The real Kubernetes control plane the tests talk to, built from the Go module proxy once and cached (a no-op after).
project.testTask.exec('scripts/control-plane.sh > /dev/null');
// The CSI spec's and kubelet's plugin registration protos the agent serves, from the Go module proxy (a no-op after).
project.testTask.exec('scripts/protos.sh > /dev/null');
// The upstream snapshot controller, its CRDs and csi-sanity, from the Go module proxy (a no-op after).
project.testTask.exec('scripts/csi-tools.sh > /dev/null');
project.testTask.exec('scripts/in-private-mount-namespace.sh scripts/with-image-build.sh jest --passWithNoTests --ci', { receiveArgs: true });
project.testTask.spawn(project.tasks.tryFind('eslint')!);
project.testTask.env('NODE_OPTIONS', '--experimental-vm-modules --no-warnings=ExperimentalWarning');

// app/ has no tsconfig of its own; lint it with the default project, like .projenrc.ts.
project.tryFindObjectFile('.eslintrc.json')?.addOverride('parserOptions.projectService.allowDefaultProject', ['.projenrc.ts', 'app/*.ts']);
// bench/ is compiled with the tests' settings (it uses their control plane and helpers); this names it for the linter.
new JsonFile(project, 'bench/tsconfig.json', { obj: { extends: '../test/tsconfig.json', include: ['**/*.ts'] } });

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

// --- The construct library: construct-library/ is its package ---
// jsii compiles only sources inside the package directory, so construct-library/src/
// links to the repository's src/constructs and src/config (preserveSymlinks keeps those
// paths), and its index.ts is the library's entry. The runtime is not in it: a cdk8s app
// that installs the library gets the construct, the configuration model and yaml.
const LIBRARY_DIR = 'construct-library';
new JsonFile(project, `${LIBRARY_DIR}/package.json`, {
  obj: {
    name: LIBRARY,
    description: 'The cdk8s construct that deploys local-volume-provisioner, a Kubernetes local PersistentVolume provisioner (drop-in for the Go local static provisioner and the device-selecting local-pv-provisioner).',
    version: VERSION,
    license: 'Apache-2.0',
    author: { name: 'local-volume-provisioner authors', url: 'https://github.com/local-volume-provisioner', organization: true },
    repository: { type: 'git', url: 'https://github.com/local-volume-provisioner/local-volume-provisioner.git', directory: LIBRARY_DIR },
    keywords: ['cdk8s', 'kubernetes', 'local-volume', 'persistentvolume', 'storage', 'provisioner'],
    stability: 'experimental',
    engines: { node: '>=20' },
    main: 'lib/index.js',
    types: 'lib/index.d.ts',
    // package.json and .jsii are read by jsii's runtimes and tools (and image.ts reads the version).
    exports: {
      '.': { types: './lib/index.d.ts', default: './lib/index.js' },
      './package.json': './package.json',
      './.jsii': './.jsii',
    },
    files: ['lib/**/*.js', 'lib/**/*.d.ts', '.jsii', 'README.md', 'LICENSE'],
    // The widest ranges the consumer matrix proves (test/library/consumers.test.ts):
    // the lower ends are cdk8s-plus-28's first release and the peers it needs. The k8s
    // types of the props (tolerations, affinity, probes, ...) are cdk8s-plus-28's.
    peerDependencies: { 'cdk8s': '^2.68.12', 'constructs': '^10.3.0', 'cdk8s-plus-28': '^2.0.3' },
    // Not a jsii module, so jsii's runtimes need it inside the tarball.
    dependencies: { yaml: '^2.8.0' },
    bundledDependencies: ['yaml'],
    jsii: {
      outdir: 'dist',
      tsconfig: 'tsconfig.json',
      // 'minimal': the strict rule set forbids preserveSymlinks, which the links in src/ need.
      validateTsconfig: 'minimal',
      targets: {
        python: { distName: LIBRARY, module: 'cdk8s_local_volume_provisioner' },
        java: {
          package: 'io.github.localvolumeprovisioner.cdk8s',
          maven: { groupId: 'io.github.local-volume-provisioner', artifactId: LIBRARY },
        },
      },
    },
  },
});
new JsonFile(project, `${LIBRARY_DIR}/tsconfig.json`, {
  obj: {
    compilerOptions: {
      rootDir: 'src',
      outDir: 'lib',
      preserveSymlinks: true,
      target: 'es2022',
      lib: ['es2022'],
      module: 'commonjs',
      declaration: true,
      strict: true,
      noEmitOnError: true,
      esModuleInterop: true,
      skipLibCheck: true,
      noUnusedLocals: true,
      noUnusedParameters: true,
      noImplicitReturns: true,
      noFallthroughCasesInSwitch: true,
      experimentalDecorators: true,
      types: ['node'],
    },
    include: ['src/index.ts'],
  },
});
// src/constructs and src/config are the library's sources: their imports are checked
// against its package.json (cdk8s, constructs and cdk8s-plus-28 are its peers) as well.
project.eslint?.addOverride({
  files: ['src/constructs/**/*.ts', 'src/config/**/*.ts'],
  rules: {
    'import/no-extraneous-dependencies': ['error', { packageDir: ['.', LIBRARY_DIR], devDependencies: false, optionalDependencies: false, peerDependencies: true }],
  },
});
// The node agent runs on every node: nothing in it may call ICU, whose data stays resident
// for the life of the process once touched (3 MiB for localeCompare, 7–8 for Intl formats).
const ICU = 'touches ICU data, resident for the life of the agent;';
project.eslint?.addOverride({
  files: ['src/runtime/**/*.ts'],
  rules: {
    'no-restricted-properties': ['error',
      { property: 'localeCompare', message: `${ICU} sort with codeUnitOrder (runtime/code-unit-order.ts)` },
      ...['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString'].map((property) => ({ property, message: `${ICU} format without the locale` }))],
    'no-restricted-globals': ['error', { name: 'Intl', message: `${ICU} format without the locale` }],
  },
});
project.gitignore.exclude(...['lib/', 'dist/', '.jsii', 'node_modules/', 'LICENSE'].map((f) => `/${LIBRARY_DIR}/${f}`));

// Compiles the library with jsii (zero errors, or the build fails). yaml is bundled, so
// npm pack and jsii take it from the package's own node_modules: the repository's copy.
// Warnings silenced: reserved words (names like `default` need renaming only in some
// languages, which jsii-pacmak does), and devDependencies of the peers at their lowest
// versions (the library builds from the repository's install, whose versions are newer).
const library = project.addTask('library', {
  description: 'Compile the construct library (construct-library/) with jsii',
  steps: [
    { exec: 'rm -rf node_modules && mkdir node_modules && cp -R ../node_modules/yaml node_modules/yaml', cwd: LIBRARY_DIR },
    // npm pack leaves symbolic links out, so the repository's LICENSE is copied in.
    { exec: 'cp ../LICENSE LICENSE', cwd: LIBRARY_DIR },
    { exec: 'jsii --silence-warnings=reserved-word --silence-warnings=metadata/missing-dev-dependency', cwd: LIBRARY_DIR },
  ],
});
project.postCompileTask.spawn(library);

// The Python and Java packages' sources (construct-library/dist/{python,java}); building
// them needs PyPI and Maven Central, which these machines cannot reach.
project.addTask('library:pacmak', {
  description: 'Build the Python wheel of the construct library, and its Java package\'s sources, into construct-library/dist/',
  // Java as sources: its jar needs org.cdk8s:cdk8s-plus-28 in the Maven repository, which Maven Central lacks here
  // (test/library/java-app.test.ts builds it from the npm package first).
  steps: [
    { exec: 'jsii-pacmak --targets python' },
    { exec: 'jsii-pacmak --code-only --targets java' },
  ],
  cwd: LIBRARY_DIR,
});

project.synth();
