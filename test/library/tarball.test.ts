import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LIBRARY, LIBRARY_DIR, packLibrary, Packed, REPO } from './library';
import { IMAGE_REPOSITORY } from '../../src/constructs';

/** What `npm install cdk8s-local-volume-provisioner` puts in an app: the tarball. */
let dir: string;
let packed: Packed;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lvp-pack-'));
  packed = packLibrary(dir);
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const paths = () => packed.files.map((f) => f.path);

test('it holds the compiled construct and configuration model, the jsii assembly, README, LICENSE and the bundled yaml, nothing else', () => {
  const unexpected = paths().filter((p) => !(
    /^lib\/(index|(constructs|constructs\/resolve|config)\/[a-z0-9-]+)\.(js|d\.ts)$/.test(p)
    || ['.jsii', 'README.md', 'LICENSE', 'package.json'].includes(p)
    || p.startsWith('node_modules/yaml/')
  ));
  expect(unexpected).toEqual([]);
  expect(paths()).toEqual(expect.arrayContaining(['.jsii', 'README.md', 'LICENSE', 'lib/index.js', 'lib/index.d.ts', 'lib/constructs/local-volume-provisioner.js', 'node_modules/yaml/package.json']));
});

test('the node agent is not in it', () => {
  expect(paths().filter((p) => p.includes('runtime'))).toEqual([]);
});

test('its version is a release, the one of the repository', () => {
  const repository = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
  expect(LIBRARY.version).toMatch(/^\d+\.\d+\.\d+$/);
  expect(LIBRARY.version).not.toBe('0.0.0');
  expect(LIBRARY.version).toBe(repository.version);
  expect(packed.tarball.endsWith(`${LIBRARY.name}-${LIBRARY.version}.tgz`)).toBe(true);
});

test('its default image is the one `npx projen image` builds: tagged with that version', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const compiled = require(join(LIBRARY_DIR, 'lib', 'index.js')) as { DEFAULT_IMAGE: string };
  expect(compiled.DEFAULT_IMAGE).toBe(`${IMAGE_REPOSITORY}:${LIBRARY.version}`);
});
