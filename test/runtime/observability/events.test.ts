import { EVENT_REASONS, EventReasons } from '../../../src/runtime/observability/events';

describe('the Event reason catalogue', () => {
  test('each entry is filed under its own reason', () => {
    for (const [key, spec] of Object.entries(EventReasons)) expect(spec.reason).toBe(key);
  });

  test('reasons are CamelCase, as Kubernetes components write them', () => {
    for (const { reason } of EVENT_REASONS) expect(reason).toMatch(/^[A-Z][A-Za-z]+$/);
  });

  test('meanings and examples are single lines', () => {
    for (const e of EVENT_REASONS) {
      expect(e.meaning).not.toContain('\n');
      expect(e.example).not.toContain('\n');
    }
  });

  test('an entry that cannot be offered yet has no PV, so its Event goes on the Node', () => {
    for (const reason of ['VolumeNotMountPoint', 'VolumeRejected', 'StorageClassMissing', 'NoPVSpecConfigMap', 'DeviceHoldsData', 'ConfigInvalid'] as const) {
      expect(EventReasons[reason].regarding).toBe('Node');
    }
  });

  test('keeps the Go provisioner\'s mount-point message', () => {
    expect(EventReasons.VolumeNotMountPoint.example).toBe('path "/mnt/disks/vol1" is not a valid mount point');
  });

  test('problems are Warnings and successes are Normal', () => {
    expect(EventReasons.ProvisioningSucceeded.type).toBe('Normal');
    expect(EventReasons.CleanupFailed.type).toBe('Warning');
    expect(EventReasons.CleanupTimedOut.type).toBe('Warning');
  });
});
