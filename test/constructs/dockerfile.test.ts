import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_BLOCK_CLEANER_COMMAND } from '../../src/config';
import { DEFAULT_IMAGE, IMAGE_REPOSITORY } from '../../src/constructs';

/**
 * The Dockerfile read statically: what it copies exists, its entry point is the
 * package's bin, and the construct's default image and cleaner commands match what it
 * ships. test/image/ builds the image and runs it.
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

test('it builds on Node 24 LTS and runs on the same Debian release, with that Node', () => {
  const [build, runtime] = of('FROM').map((i) => i.args.split(' ')[0]);
  const release = /^node:24-(\w+)-slim$/.exec(build)?.[1];
  expect(release).toBeDefined();
  expect(runtime).toBe(`debian:${release}-slim`);
  expect(of('COPY').map((i) => i.args)).toContainEqual(expect.stringMatching(/^--from=build \/usr\/local\/bin\/node\S* \/usr\/local\/bin\/node$/));
});

test('every file it copies from the build context exists in the repository', () => {
  const sources = of('COPY')
    .filter((i) => !i.args.startsWith('--from'))
    .flatMap((i) => i.args.split(' ').slice(0, -1));
  expect(sources).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'src', 'image/scripts/']));
  for (const source of sources) expect([source, existsSync(join(ROOT, source))]).toEqual([source, true]);
});

test('its entry point is the package bin local-volume-provisioner under tini, with no subcommand', () => {
  expect(JSON.parse(of('ENTRYPOINT')[0].args)).toEqual(['/usr/bin/tini', '--', 'local-volume-provisioner']);
});

test('the package bins and the upstream images\' binary paths are links to the bin file it copies', () => {
  const workdir = of('WORKDIR').at(-1)!.args;
  const run = of('RUN').map((i) => i.args).join('\n');
  const binFile = join(workdir, pkg.bin['local-volume-provisioner']);
  expect(of('COPY').map((i) => i.args)).toContainEqual(expect.stringMatching(new RegExp(`^--from=build \\S+ \\.\\/${pkg.bin['local-volume-provisioner']}$`)));
  const links = [...Object.keys(pkg.bin).map((name) => `/usr/local/bin/${name}`), '/local-provisioner', '/local-pv-provisioner', '/main'];
  for (const file of Object.values(pkg.bin)) expect(join(workdir, file)).toBe(binFile);
  for (const link of links) expect(run).toContain(`ln -s ${binFile} ${link}`);
});

test('the runtime installs only what the agent and the cleaner scripts run, and tini', () => {
  const installs = of('RUN').flatMap((i) => [...i.args.matchAll(/apt-get install -y --no-install-recommends ([^&]+)/g)].map((m) => m[1].trim().split(/\s+/)));
  // The runtime stage's are the last two (the build stage's installs binutils, to strip Node).
  // attr: getfattr and setfattr, with which a clean gives a volume's root its recorded xattrs and ACLs back.
  // btrfs-progs: pool classes make, limit and destroy their volumes with btrfs (6.7+, from backports: simple quotas).
  // xfsprogs: XFS and ext4 pool classes set and read their volumes' project quotas with xfs_quota.
  expect(installs.slice(-2)).toEqual([['util-linux', 'e2fsprogs', 'xfsprogs', 'coreutils', 'attr', 'tini'], ['-t', 'bookworm-backports', 'btrfs-progs']]);
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
