import { ConfigMapData, parseProvisionerConfig, ProvisionerConfig } from '../../../src/config';
import { ConfigReloader } from '../../../src/runtime/agent/config-reloader';
import { requireJobImage } from '../../../src/runtime/agent/run-directory';

const GOOD: ConfigMapData = { storageClassMap: 'fast-disks:\n  hostDir: /mnt/fast-disks\n  mountDir: /mnt/fast-disks\n' };
const OTHER: ConfigMapData = { storageClassMap: 'slow:\n  hostDir: /mnt/slow\n  mountDir: /mnt/slow\n' };
const BAD: ConfigMapData = { storageClassMap: 'fast-disks:\n  hostDir: /mnt/fast-disks\n  mountDir: /mnt/fast-disks\n  volumeMode: block\n' };

function reloaderOver(source: { data: ConfigMapData | Error }) {
  const applied: ProvisionerConfig[] = [];
  const rejected: string[] = [];
  const reloader = new ConfigReloader(
    {
      describe: 'ConfigMap directory /etc/provisioner/config',
      read: () => {
        if (source.data instanceof Error) throw source.data;
        return source.data;
      },
    },
    parseProvisionerConfig,
    60_000,
  );
  reloader.onApply(({ config }) => applied.push(config));
  reloader.onReject((m) => rejected.push(m));
  return { reloader, applied, rejected };
}

describe('ConfigReloader', () => {
  test('applies the first valid configuration', () => {
    const { reloader, applied } = reloaderOver({ data: GOOD });
    expect(reloader.reload()).toEqual([]);
    expect(applied).toHaveLength(1);
    expect(Object.keys(reloader.current!.storageClassMap)).toEqual(['fast-disks']);
  });

  test('does not re-apply an unchanged configuration', () => {
    const { reloader, applied } = reloaderOver({ data: GOOD });
    reloader.reload();
    reloader.reload();
    expect(applied).toHaveLength(1);
  });

  test('applies a changed valid configuration', () => {
    const source = { data: GOOD as ConfigMapData | Error };
    const { reloader, applied } = reloaderOver(source);
    reloader.reload();
    source.data = OTHER;
    reloader.reload();
    expect(applied).toHaveLength(2);
    expect(Object.keys(reloader.current!.storageClassMap)).toEqual(['slow']);
  });

  test('rejects an invalid new configuration naming the problem and keeps the last good one', () => {
    const source = { data: GOOD as ConfigMapData | Error };
    const { reloader, rejected } = reloaderOver(source);
    reloader.reload();
    source.data = BAD;
    const problems = reloader.reload();
    expect(problems[0]).toContain('keeping the last good configuration');
    expect(problems[0]).toContain('storageClassMap.fast-disks.volumeMode: "block" is not one of Filesystem, Block');
    expect(rejected).toHaveLength(1);
    expect(reloader.current!.storageClassMap['fast-disks'].volumeMode).toBe('Filesystem');
  });

  test('reports the same bad configuration once, not on every period', () => {
    const { reloader, rejected } = reloaderOver({ data: BAD });
    reloader.reload();
    reloader.reload();
    expect(rejected).toHaveLength(1);
    expect(reloader.current).toBeUndefined();
  });

  test('a rejected edit that is reverted counts as applied again (the ConfigRejected alert clears)', () => {
    const source = { data: GOOD as ConfigMapData | Error };
    const { reloader, applied } = reloaderOver(source);
    reloader.reload();
    source.data = BAD;
    reloader.reload();
    source.data = GOOD;
    reloader.reload();
    expect(applied).toHaveLength(2);
    reloader.reload();
    expect(applied).toHaveLength(2);
  });

  test('useJobForCleaning turned on by an edit, without a cleanup Job image, is rejected as at startup', () => {
    const source = { data: GOOD as ConfigMapData | Error };
    const rejected: string[] = [];
    const reloader = new ConfigReloader({ describe: 'ConfigMap directory /etc/provisioner/config', read: () => source.data as ConfigMapData },
      (d) => requireJobImage(parseProvisionerConfig(d), ''), 60_000);
    reloader.onReject((m) => rejected.push(m));
    reloader.reload();
    source.data = { ...GOOD, useJobForCleaning: 'yes' };
    reloader.reload();
    expect(rejected).toEqual([expect.stringContaining('useJobForCleaning: is on, so cleanup Jobs need an image: set JOB_CONTAINER_IMAGE')]);
    expect(reloader.current!.useJobForCleaning).toBe(false);
  });

  test('an unreadable source is reported with its name', () => {
    const { reloader } = reloaderOver({ data: new Error('ENOENT: no such file or directory') });
    expect(reloader.reload()[0]).toBe('ConfigMap directory /etc/provisioner/config: cannot be read: ENOENT: no such file or directory');
  });
});
