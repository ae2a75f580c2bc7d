import type { ClassConfig } from '../../src/config';

/** A resolved class with upstream's defaults over `hostDir` and `mountDir`, for tests that skip the parser. */
export function classConfigOf(hostDir: string, mountDir: string, overrides: Partial<ClassConfig> = {}): ClassConfig {
  return {
    hostDir,
    mountDir,
    blockCleanerCommand: ['/scripts/quick_reset.sh'],
    volumeMode: 'Filesystem',
    accessMode: 'ReadWriteOnce',
    fsType: '',
    namePattern: '*',
    selector: [],
    ...overrides,
  };
}
