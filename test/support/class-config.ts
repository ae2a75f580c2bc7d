import * as fs from 'node:fs';
import * as path from 'node:path';
import { CLASS_DEFAULTS, type ClassConfig, type ProvisionerConfigInput, resolveProvisionerConfig, serializeProvisionerConfig } from '../../src/config';

/** A resolved class with the model's defaults over `hostDir` and `mountDir`, for tests that skip the parser. */
export function classConfigOf(hostDir: string, mountDir: string, overrides: Partial<ClassConfig> = {}): ClassConfig {
  return { ...CLASS_DEFAULTS, hostDir, mountDir, ...overrides };
}

/**
 * The provisioner ConfigMap for `input`, one file per key in `dir` (made if missing), as the
 * agent's `--config-dir` reads it; throws with the model's errors when `input` is not valid.
 */
export function writeConfigDir(dir: string, input: ProvisionerConfigInput): string {
  const resolved = resolveProvisionerConfig(input);
  if (!resolved.ok) throw new Error(JSON.stringify(resolved.errors));
  fs.mkdirSync(dir, { recursive: true });
  for (const [key, value] of Object.entries(serializeProvisionerConfig(resolved.config))) fs.writeFileSync(path.join(dir, key), value);
  return dir;
}
