import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_BLOCK_CLEANER_COMMAND } from '../../src/config';
import { DEFAULT_IMAGE, IMAGE_REPOSITORY } from '../../src/constructs';

/**
 * No Docker engine runs here, so the image is checked statically: what it copies
 * exists, its entry point is the package's bin, and the construct's default image and
 * cleaner commands match what it ships.
 */
const ROOT = join(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };

interface Instruction { readonly op: string; readonly args: string }

/** Dockerfile instructions, continuation lines joined and comments dropped. */
function instructions(): Instruction[] {
  const text = readFileSync(join(ROOT, 'image', 'Dockerfile'), 'utf8');
  return text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [op, ...rest] = line.trim().split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

const all = instructions();
const of = (op: string) => all.filter((i) => i.op === op);

test('every stage is built on Node 24 LTS', () => {
  const bases = of('FROM').map((i) => i.args.split(' ')[0]);
  expect(bases.length).toBeGreaterThan(0);
  for (const base of bases) expect(base).toMatch(/^node:24-/);
});

test('every file it copies from the build context exists in the repository', () => {
  const sources = of('COPY')
    .filter((i) => !i.args.startsWith('--from'))
    .flatMap((i) => i.args.split(' ').slice(0, -1));
  expect(sources).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'src', 'image/scripts/']));
  for (const source of sources) expect([source, existsSync(join(ROOT, source))]).toEqual([source, true]);
});

test('its entry point is the package bin local-volume-provisioner, linked to the bin file', () => {
  const entrypoint = JSON.parse(of('ENTRYPOINT')[0].args) as string[];
  const bin = entrypoint[entrypoint.length - 1];
  expect(bin).toBe('local-volume-provisioner');
  const workdir = of('WORKDIR').at(-1)!.args;
  const run = of('RUN').map((i) => i.args).join('\n');
  for (const [name, file] of Object.entries(pkg.bin)) {
    expect(run).toContain(`ln -s ${join(workdir, file)} /usr/local/bin/${name}`);
  }
});

test('it installs the tools the cleaner scripts use', () => {
  const run = of('RUN').map((i) => i.args).join('\n');
  for (const tool of ['util-linux', 'e2fsprogs', 'xfsprogs', 'coreutils']) expect(run).toMatch(new RegExp(`apt-get install .*\\b${tool}\\b`));
});

test('it ships the cleaner scripts at /scripts, including the default cleaner command', () => {
  expect(of('COPY').map((i) => i.args)).toContain('image/scripts/ /scripts/');
  const scripts = readdirSync(join(ROOT, 'image', 'scripts'));
  expect(scripts).toEqual(expect.arrayContaining(['quick_reset.sh', 'shred.sh', 'dd_zero.sh', 'blkdiscard.sh', 'fsclean.sh']));
  expect(DEFAULT_BLOCK_CLEANER_COMMAND[0]).toBe('/scripts/quick_reset.sh');
});

test('the construct defaults to this image, tagged with the package version', () => {
  expect(DEFAULT_IMAGE).toBe(`${IMAGE_REPOSITORY}:${pkg.version}`);
  expect(readFileSync(join(ROOT, 'image', 'Dockerfile'), 'utf8')).toContain(`-t ${IMAGE_REPOSITORY}:`);
});

test('its ignore file lets every copied path into the build context', () => {
  const rules = readFileSync(join(ROOT, 'image', 'Dockerfile.dockerignore'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
  expect(rules[0]).toBe('*');
  const included = rules.filter((r) => r.startsWith('!')).map((r) => r.slice(1).replace(/\/$/, ''));
  const sources = of('COPY').filter((i) => !i.args.startsWith('--from')).flatMap((i) => i.args.split(' ').slice(0, -1));
  for (const source of sources) expect([source, included.includes(source.replace(/\/$/, ''))]).toEqual([source, true]);
});
