import { CLASS_DEFAULTS, type ClassConfig } from '../../src/config';

/** A resolved class with the model's defaults over `hostDir` and `mountDir`, for tests that skip the parser. */
export function classConfigOf(hostDir: string, mountDir: string, overrides: Partial<ClassConfig> = {}): ClassConfig {
  return { ...CLASS_DEFAULTS, hostDir, mountDir, ...overrides };
}
