import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const REPO = path.join(__dirname, '..', '..', '..');

/** image/Dockerfile's esbuild command, its arguments as written, the output moved to `outfile`. */
function imageBundleArgs(outfile: string): string[] {
  const dockerfile = fs.readFileSync(path.join(REPO, 'image', 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const command = /node_modules\/esbuild\/bin\/esbuild (.*?)(&&|$)/m.exec(dockerfile);
  if (!command) throw new Error('image/Dockerfile runs no esbuild command');
  return command[1].trim().split(/\s+/).map((arg) => (arg.startsWith('--outfile=') ? `--outfile=${outfile}` : arg));
}

test('the bundled bin is ASCII, so V8 keeps its source one byte per character (one non-ASCII character anywhere, a comment too, doubles it)', () => {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-bundle-')), 'main.js');
  try {
    execFileSync(process.execPath, [require.resolve('esbuild/bin/esbuild'), ...imageBundleArgs(out)], { cwd: REPO });
    const lines = fs.readFileSync(out, 'utf8').split('\n');
    expect(lines.filter((line) => /[^\x00-\x7f]/.test(line)).map((line) => line.trim())).toEqual([]);
  } finally {
    fs.rmSync(path.dirname(out), { recursive: true, force: true });
  }
});
