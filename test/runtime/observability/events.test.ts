import * as fs from 'node:fs';
import * as path from 'node:path';
import { EVENT_REASONS, EventReasons } from '../../../src/runtime/observability/events';

/** The runtime's sources, but the catalogue's own. */
function runtimeSources(dir = path.join(__dirname, '../../../src/runtime')): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory()
    ? runtimeSources(path.join(dir, e.name))
    : e.name.endsWith('.ts') && e.name !== 'events.ts' ? [fs.readFileSync(path.join(dir, e.name), 'utf8')] : []);
}

describe('the Event reason catalogue', () => {
  test('each entry is filed under its own reason', () => {
    for (const [key, spec] of Object.entries(EventReasons)) expect(spec.reason).toBe(key);
  });

  test('every reason it documents is recorded somewhere in the runtime: operators are never told of an Event that never comes', () => {
    const sources = runtimeSources().join('\n');
    expect(EVENT_REASONS.map((e) => e.reason).filter((r) => !sources.includes(`EventReasons.${r}`))).toEqual([]);
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
