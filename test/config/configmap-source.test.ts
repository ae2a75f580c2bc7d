import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { valid } from './helpers';
import { configMapData, parseProvisionerConfig, readConfigMapDirectory } from '../../src/config';

/**
 * Writes a ConfigMap volume the way kubelet's atomic writer lays it out:
 * a timestamped directory with the files, `..data` pointing at it, and one
 * `key -> ..data/key` link per key. Returns a function that publishes new data
 * the same way (new directory, `..data` swapped by rename, links added/removed).
 */
function kubeletVolume(dir: string, data: Record<string, string>): (next: Record<string, string>, options?: { links: boolean }) => void {
  let generation = 0;
  const publish = (next: Record<string, string>, { links } = { links: true }) => {
    const stamp = `..2024_01_0${++generation}_00_00_00.${100000000 + generation}`;
    fs.mkdirSync(path.join(dir, stamp));
    for (const [key, value] of Object.entries(next)) fs.writeFileSync(path.join(dir, stamp, key), value);
    fs.symlinkSync(stamp, path.join(dir, '..data_tmp'));
    fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
    if (!links) return;
    for (const key of Object.keys(next)) {
      if (!fs.existsSync(path.join(dir, key))) fs.symlinkSync(path.join('..data', key), path.join(dir, key));
    }
  };
  publish(data);
  return publish;
}

describe('readConfigMapDirectory', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-configmap-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('reads each key through kubelet\'s links and skips ..data and the timestamped directory', () => {
    kubeletVolume(dir, { storageClassMap: 'fast:\n  hostDir: /a\n  mountDir: /a\n', useNodeNameOnly: 'true' });
    expect(fs.readdirSync(dir).sort()).toEqual(['..2024_01_01_00_00_00.100000001', '..data', 'storageClassMap', 'useNodeNameOnly']);
    expect(readConfigMapDirectory(dir)).toEqual({ storageClassMap: 'fast:\n  hostDir: /a\n  mountDir: /a\n', useNodeNameOnly: 'true' });
  });

  test('sees new data after kubelet swaps ..data', () => {
    const publish = kubeletVolume(dir, { useNodeNameOnly: 'true' });
    publish({ useNodeNameOnly: 'false', setPVOwnerRef: 'yes' });
    expect(readConfigMapDirectory(dir)).toEqual({ useNodeNameOnly: 'false', setPVOwnerRef: 'yes' });
  });

  test('skips a removed key whose link dangles until kubelet deletes it', () => {
    const publish = kubeletVolume(dir, { useNodeNameOnly: 'true', setPVOwnerRef: 'true' });
    publish({ useNodeNameOnly: 'true' });
    expect(fs.lstatSync(path.join(dir, 'setPVOwnerRef')).isSymbolicLink()).toBe(true);
    expect(readConfigMapDirectory(dir)).toEqual({ useNodeNameOnly: 'true' });
  });

  test('reads the generation ..data points at, even before kubelet links a new key', () => {
    const publish = kubeletVolume(dir, { useNodeNameOnly: 'true' });
    publish({ useNodeNameOnly: 'false', setPVOwnerRef: 'true' }, { links: false });
    expect(fs.existsSync(path.join(dir, 'setPVOwnerRef'))).toBe(false);
    expect(readConfigMapDirectory(dir)).toEqual({ useNodeNameOnly: 'false', setPVOwnerRef: 'true' });
  });

  test('skips a dangling link in a directory without ..data', () => {
    fs.writeFileSync(path.join(dir, 'useNodeNameOnly'), 'true');
    fs.symlinkSync('/nonexistent/target', path.join(dir, 'setPVOwnerRef'));
    expect(readConfigMapDirectory(dir)).toEqual({ useNodeNameOnly: 'true' });
  });

  test('ignores every dot entry and subdirectory', () => {
    kubeletVolume(dir, { useNodeNameOnly: 'true' });
    fs.writeFileSync(path.join(dir, '.hidden'), 'x');
    fs.mkdirSync(path.join(dir, 'not-a-key'));
    expect(readConfigMapDirectory(dir)).toEqual({ useNodeNameOnly: 'true' });
  });

  test('reads plain files too (a directory written by hand or a bind mount)', () => {
    fs.writeFileSync(path.join(dir, 'minResyncPeriod'), '1h30m');
    expect(readConfigMapDirectory(dir)).toEqual({ minResyncPeriod: '1h30m' });
  });

  test('a missing directory is an error naming it', () => {
    expect(() => readConfigMapDirectory(path.join(dir, 'absent'))).toThrow(path.join(dir, 'absent'));
  });

  test('what it reads parses as the directory dialect', () => {
    kubeletVolume(dir, { storageClassMap: 'fast-disks:\n  hostDir: /mnt/fast\n  mountDir: /mnt/fast\n', useJobForCleaning: 'yes', minResyncPeriod: '1h30m' });
    const config = valid(parseProvisionerConfig(readConfigMapDirectory(dir)));
    expect(config).toMatchObject({ useJobForCleaning: true, minResyncPeriod: 5_400_000 });
    expect(config.storageClassMap['fast-disks'].hostDir).toBe('/mnt/fast');
  });
});

describe('configMapData', () => {
  test('takes the data of an API object', () => {
    expect(configMapData({ data: { volumeMode: 'Block' } })).toEqual({ volumeMode: 'Block' });
  });

  test('a ConfigMap without data is empty', () => {
    expect(configMapData({})).toEqual({});
  });

  test('returns a copy', () => {
    const obj = { data: { volumeMode: 'Block' } };
    configMapData(obj).volumeMode = 'Filesystem';
    expect(obj.data.volumeMode).toBe('Block');
  });
});
