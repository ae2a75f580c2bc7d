import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertLibraryCompiled, LIBRARY, LIBRARY_DIR, REPO, run } from './library';

/**
 * The library from Java for real: jsii-pacmak builds the jar, Maven resolves cdk8s,
 * constructs and the jsii runtime from Maven Central, and the example app written in
 * Java (examples/java) synthesizes what the TypeScript one (app/main.ts, committed as
 * dist/) does.
 *
 * Maven Central, as these machines reach it, has no org.cdk8s:cdk8s-plus-28, which the jar
 * depends on: it is built the same way, by jsii-pacmak from the cdk8s-plus-28 package the
 * npm registry serves (node_modules), and installed in the Maven repository the test uses,
 * a cache kept between runs (`$LVP_CACHE_DIR/m2`, as scripts/control-plane.sh keeps its build).
 */
const M2 = join(process.env.LVP_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'local-volume-provisioner'), 'm2');
const PLUS = JSON.parse(readFileSync(join(REPO, 'node_modules', 'cdk8s-plus-28', 'package.json'), 'utf8')) as { version: string };

let work: string;

/** Installs a jar pacmak made (with its pom) into the test's Maven repository. */
function install(dir: string, artifact: string, version: string): void {
  run('mvn', ['-q', `-Dmaven.repo.local=${M2}`, 'install:install-file', `-Dfile=${join(dir, `${artifact}-${version}.jar`)}`,
    `-DpomFile=${join(dir, `${artifact}-${version}.pom`)}`], work);
}

beforeAll(() => {
  assertLibraryCompiled();
  work = mkdtempSync(join(tmpdir(), 'lvp-java-'));
  mkdirSync(M2, { recursive: true });
  if (!existsSync(join(M2, 'org', 'cdk8s', 'cdk8s-plus-28', PLUS.version, `cdk8s-plus-28-${PLUS.version}.jar`))) {
    run('npx', ['jsii-pacmak', '--targets', 'java', '--maven-local-repository', M2, '--outdir', join(work, 'plus')], join(REPO, 'node_modules', 'cdk8s-plus-28'));
    install(join(work, 'plus', 'java', 'org', 'cdk8s', 'cdk8s-plus-28', PLUS.version), 'cdk8s-plus-28', PLUS.version);
  }
  run('npx', ['jsii-pacmak', '--targets', 'java', '--maven-local-repository', M2, '--outdir', join(work, 'pacmak')], LIBRARY_DIR);
  install(join(work, 'pacmak', 'java', 'io', 'github', 'local-volume-provisioner', LIBRARY.name, LIBRARY.version), LIBRARY.name, LIBRARY.version);
}, 900_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

test('the Java example app synthesizes exactly what the TypeScript example app does', () => {
  const app = join(work, 'app');
  cpSync(join(REPO, 'examples', 'java'), app, { recursive: true, filter: (f) => !f.includes('/target') });
  const out = join(work, 'dist');
  run('mvn', ['-q', `-Dmaven.repo.local=${M2}`, 'compile', 'exec:java', `-Dexec.args=${out}`], app);
  expect(readdirSync(out)).toEqual(['local-volume-provisioner.k8s.yaml']);
  expect(readFileSync(join(out, 'local-volume-provisioner.k8s.yaml'), 'utf8'))
    .toBe(readFileSync(join(REPO, 'dist', 'local-volume-provisioner.k8s.yaml'), 'utf8'));
}, 300_000);
