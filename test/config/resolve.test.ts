import { errorsOf, valid, warningsOf } from './helpers';
import { resolveDeviceSpec, resolveProvisionerConfig } from '../../src/config';
import type { ProvisionerConfigInput } from '../../src/config';

// The construct's path: typed input, resolved by the same code the parsers use.
describe('resolveProvisionerConfig from typed input', () => {
  test('applies the same defaults as the ConfigMap parser', () => {
    const config = valid(resolveProvisionerConfig({ storageClassMap: { fast: { hostDir: '/mnt/fast', mountDir: '/mnt/fast' } } }));
    expect(config.storageClassMap.fast).toMatchObject({ blockCleanerCommand: ['/scripts/quick_reset.sh'], volumeMode: 'Filesystem', namePattern: '*' });
    expect(config).toMatchObject({ minResyncPeriod: 300_000, cleanupTimeout: 0, cleanupStallTimeout: 600_000, maxConcurrentCleanups: 2 });
  });

  test('takes durations as milliseconds or Go text', () => {
    const config = valid(resolveProvisionerConfig({ minResyncPeriod: 90_000, cleanupTimeout: '2h30m' }));
    expect(config).toMatchObject({ minResyncPeriod: 90_000, cleanupTimeout: 9_000_000 });
  });

  test.each([-1, 1.5, Number.NaN])('rejects %d milliseconds', (ms) => {
    expect(errorsOf(resolveProvisionerConfig({ cleanupTimeout: ms }))).toEqual([`cleanupTimeout: ${ms} is not a non-negative whole number of milliseconds`]);
  });

  test('checks values whatever their static type, so untyped callers get issues, not crashes', () => {
    const input = { storageClassMap: { fast: { hostDir: 5, mountDir: '/m', volumeMode: 'block' } }, extra: true } as unknown as ProvisionerConfigInput;
    const result = resolveProvisionerConfig(input);
    expect(errorsOf(result)).toEqual([
      'storageClassMap.fast.hostDir: "5" is not an absolute path',
      'storageClassMap.fast.volumeMode: "block" is not one of Filesystem, Block',
    ]);
    expect(warningsOf(result)).toEqual([
      'extra: is not a known key and is ignored',
      'storageClassMap.fast.hostDir: 5 was read as a YAML number and is used as the text "5"; quote it to keep it as written',
    ]);
  });
});

describe('resolveDeviceSpec from typed input', () => {
  test('applies the extension defaults', () => {
    expect(valid(resolveDeviceSpec({ storageClassName: 'nvme', volumeMode: 'Block', deviceDir: '/dev/disk/by-id', deviceNameFilter: '^nvme-' }))).toEqual({
      storageClassName: 'nvme',
      volumeMode: 'Block',
      fsType: '',
      deviceDir: '/dev/disk/by-id',
      deviceNameFilter: '^nvme-',
      reclaimPolicy: 'Delete',
      wipeDevicesHoldingData: false,
      wipe: 'full',
    });
  });

  test('reports every problem', () => {
    expect(errorsOf(resolveDeviceSpec({ storageClassName: 'nvme', volumeMode: 'Filesystem', deviceDir: 'dev', deviceNameFilter: '*' }))).toEqual([
      'fsType: is required (one of ext4, xfs, btrfs, with volumeMode Filesystem)',
      'deviceDir: "dev" is not an absolute path',
      'deviceNameFilter: "*" is not a valid regular expression: error parsing regexp: missing argument to repetition operator: `*`',
    ]);
  });
});
