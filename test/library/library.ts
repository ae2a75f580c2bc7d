import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The construct library (construct-library/) as its users get it: compiled by jsii (the
 * build's post-compile step, or `npx projen library`) and packed by npm.
 */
export const REPO = join(__dirname, '..', '..');
export const LIBRARY_DIR = join(REPO, 'construct-library');
export const LIBRARY = JSON.parse(readFileSync(join(LIBRARY_DIR, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  peerDependencies: Record<string, string>;
};

/** Children run without jest's NODE_OPTIONS (vm modules), as a user's shell runs them. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
}

/** Runs a command to completion; a failure throws with everything it printed. */
export function run(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, env: childEnv(), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} (in ${cwd}) exited ${result.status ?? result.signal}:\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

function newestMtime(dir: string): number {
  return Math.max(...readdirSync(dir, { withFileTypes: true }).map((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs;
  }));
}

/**
 * Fails unless the library's assembly is newer than every source: the tests check what
 * the build made, and do not rebuild it under suites that may run in parallel.
 */
export function assertLibraryCompiled(): void {
  const assembly = join(LIBRARY_DIR, '.jsii');
  const sources = Math.max(newestMtime(join(REPO, 'src', 'constructs')), newestMtime(join(REPO, 'src', 'config')), newestMtime(join(LIBRARY_DIR, 'src')));
  if (!existsSync(assembly) || statSync(assembly).mtimeMs < sources) {
    throw new Error('construct-library/ is not compiled, or is older than src/constructs or src/config: run `npx projen library` (the build\'s post-compile step does)');
  }
}

export interface PackedFile { readonly path: string; readonly size: number }
export interface Packed { readonly tarball: string; readonly files: PackedFile[]; readonly size: number; readonly unpackedSize: number }

/** `npm pack` of the compiled library into `destination`. */
export function packLibrary(destination: string): Packed {
  assertLibraryCompiled();
  const [report] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', destination], LIBRARY_DIR)) as Array<{
    filename: string; files: PackedFile[]; size: number; unpackedSize: number;
  }>;
  return { tarball: join(destination, report.filename), files: report.files, size: report.size, unpackedSize: report.unpackedSize };
}
