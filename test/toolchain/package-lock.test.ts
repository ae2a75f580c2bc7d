import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface LockEntry {
  readonly optionalDependencies?: Record<string, string>;
}

/**
 * `npm ci` (the README's first step, and projen's install under CI) refuses a lock
 * that misses an optional dependency of any package. The registry these machines
 * reach does not serve every platform's binary package (unrs-resolver's android,
 * darwin, win32 ... bindings), so `npm install` here leaves them out of the lock; they
 * are listed by hand with their os/cpu, which npm keeps and skips on other platforms.
 */
test('package-lock.json lists every optional dependency, so npm ci accepts it', () => {
  const lock = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const missing: string[] = [];
  for (const [key, entry] of Object.entries(lock.packages)) {
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) {
      // npm resolves a dependency from the package's own node_modules upwards.
      const candidates: string[] = [];
      for (let base = key; ; base = base.slice(0, base.lastIndexOf('/node_modules/'))) {
        candidates.push(`${base === '' ? '' : `${base}/`}node_modules/${dep}`);
        if (!base.includes('/node_modules/')) {
          candidates.push(`node_modules/${dep}`);
          break;
        }
      }
      if (!candidates.some((c) => lock.packages[c])) missing.push(`${dep} (optional dependency of ${key || 'the project'})`);
    }
  }
  expect(missing).toEqual([]);
});
