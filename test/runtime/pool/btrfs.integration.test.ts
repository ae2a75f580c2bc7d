import * as fs from 'node:fs';
import * as path from 'node:path';
import { resolveProvisionerConfig, serializeProvisionerConfig } from '../../../src/config';
import { formatPlan, makePlan } from '../../../src/runtime/plan/run-plan';
import { createVolume, deleteVolume, isPoolVolumeName, poolUsage, preparePool, volumeExists } from '../../../src/runtime/pool/btrfs';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';

const MiB = 1024 * 1024;
const A = 'pvc-00000000-0000-0000-0000-00000000000a';
const B = 'pvc-00000000-0000-0000-0000-00000000000b';

describePrivileged('a btrfs pool', () => {
  let pool: string;
  beforeAll(async () => {
    const loop = createLoopDevice(256 * MiB);
    mkfsBtrfs(loop.device);
    pool = makeTempDir('lvp-btrfs-');
    mount(loop.device, pool, { type: 'btrfs' });
    await preparePool(pool);
  });
  afterAll(cleanupPrivileged);

  let volumeA = '';
  test('a volume is a subvolume whose qgroup limits it to its size; made again, it is the same volume', async () => {
    volumeA = await createVolume(pool, A, 8 * MiB);
    expect(volumeA).toMatch(/^[0-9a-f-]{36}$/);
    expect(volumeExists(pool, A)).toBe(true);
    expect(await createVolume(pool, A, 8 * MiB)).toBe(volumeA);
    expect((await poolUsage(pool)).get(A)).toMatchObject({ limitBytes: 8 * MiB });
  });

  test('deleting a volume removes it and its qgroup', async () => {
    const volumeB = await createVolume(pool, B, 8 * MiB);
    fs.writeFileSync(path.join(pool, B, 'data'), 'tenant data');
    await deleteVolume(pool, volumeB);
    expect(fs.existsSync(path.join(pool, B))).toBe(false);
    expect((await poolUsage(pool)).has(B)).toBe(false);
    await deleteVolume(pool, volumeB);
  });

  test('a volume is deleted by its identity: a symlink swapped in under its name to another tenant\'s volume is never followed', async () => {
    const volumeB = await createVolume(pool, B, 8 * MiB);
    fs.writeFileSync(path.join(pool, A, 'data'), 'tenant A');
    fs.renameSync(path.join(pool, B), path.join(pool, 'moved'));
    fs.symlinkSync(path.join(pool, A), path.join(pool, B));
    await deleteVolume(pool, volumeB);
    expect(fs.readFileSync(path.join(pool, A, 'data'), 'utf8')).toBe('tenant A');
    expect(fs.existsSync(path.join(pool, 'moved'))).toBe(false);
    fs.unlinkSync(path.join(pool, B));
  });

  test('a plain directory or a symlink under a volume\'s name is never taken for a volume', async () => {
    fs.mkdirSync(path.join(pool, B));
    await expect(createVolume(pool, B, 8 * MiB)).rejects.toThrow(/is not a subvolume; it is left alone/);
    fs.rmdirSync(path.join(pool, B));
    fs.symlinkSync(path.join(pool, A), path.join(pool, B));
    await expect(createVolume(pool, B, 8 * MiB)).rejects.toThrow(/is not a subvolume; it is left alone/);
    expect((await poolUsage(pool)).get(A)).toMatchObject({ limitBytes: 8 * MiB });
    fs.unlinkSync(path.join(pool, B));
  });

  test('only names of the form pvc-<claim UID> are pool volumes: no path can be smuggled in', async () => {
    expect(isPoolVolumeName(A)).toBe(true);
    expect(isPoolVolumeName('../etc')).toBe(false);
    expect(isPoolVolumeName(`${A}/..`)).toBe(false);
    await expect(createVolume(pool, '../etc', MiB)).rejects.toThrow(/not the name of a pool volume/);
  });

  test('plan shows a pool class with its volumes and what a new one could have, and says why one cannot be used', async () => {
    const config = resolveProvisionerConfig({
      storageClassMap: {
        'local-pool': { hostDir: pool, mountDir: pool, pool: 'btrfs' },
        'not-btrfs': { hostDir: makeTempDir('lvp-plan-'), mountDir: makeTempDir('lvp-plan-'), pool: 'btrfs' },
      },
    });
    if (!config.ok) throw new Error(JSON.stringify(config.errors));
    const configDir = makeTempDir('lvp-plan-config-');
    for (const [key, value] of Object.entries(serializeProvisionerConfig(config.config))) fs.writeFileSync(path.join(configDir, key), value);
    const before = await poolUsage(pool);
    const plan = await makePlan({ configDir, pvSpecDir: '', nodeName: 'worker-1', output: 'table' });
    expect(plan.volumes).toEqual([]);
    expect(plan.pools).toEqual([
      { storageClass: 'local-pool', path: pool, backend: 'btrfs', volumes: before.size, available: expect.stringMatching(/^\d+Mi$/) },
      { storageClass: 'not-btrfs', path: expect.any(String), backend: 'btrfs', volumes: 0, note: expect.stringContaining('is not on a btrfs filesystem') },
    ]);
    expect(formatPlan(plan, 'table')).toContain(`Pool class local-pool (btrfs) at ${pool}: ${before.size} volume(s)`);
  });

  test('a directory not on btrfs is no pool', async () => {
    await expect(preparePool(makeTempDir('lvp-not-btrfs-'))).rejects.toThrow(/not on a btrfs filesystem/);
  });
});
