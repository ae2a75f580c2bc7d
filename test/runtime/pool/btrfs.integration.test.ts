import * as fs from 'node:fs';
import * as path from 'node:path';
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

  test('a directory not on btrfs is no pool', async () => {
    await expect(preparePool(makeTempDir('lvp-not-btrfs-'))).rejects.toThrow(/not on a btrfs filesystem/);
  });
});
