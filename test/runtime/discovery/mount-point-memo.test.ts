import type { DiscoveredVolume } from '../../../src/runtime/discovery/directory-discovery';
import { MountPointMemo } from '../../../src/runtime/discovery/mount-point-memo';
import type { MountEntry } from '../../../src/runtime/discovery/mount-table';

const key = { className: 'local-fs', mountDir: '/mnt/disks', hostDir: '/mnt/disks', volumeMode: 'Filesystem', entryName: 'vol1' };
const mount: MountEntry = {
  mountId: 812,
  parentId: 22,
  major: 7,
  minor: 3,
  root: '/',
  mountPoint: '/mnt/disks/vol1',
  mountOptions: 'rw,relatime',
  fsType: 'ext4',
  source: '/dev/loop3',
  superOptions: 'rw',
  diskSequence: '41',
};
const volume: DiscoveredVolume = {
  className: 'local-fs',
  entryName: 'vol1',
  hostPath: '/mnt/disks/vol1',
  mountPath: '/mnt/disks/vol1',
  volumeMode: 'Filesystem',
  capacityBytes: 16 * 1024 * 1024,
  source: 'mount-point',
  identity: 'fs:/@loop:/disks/a.img@0',
};

test('a finding is recalled while the same mount is at the entry', () => {
  const memo = new MountPointMemo();
  memo.remember(key, mount, volume);
  expect(memo.recall(key, { ...mount })).toBe(volume);
});

test('a finding is not recalled for a mount that agrees on every field of the table but is on a disk attached anew under its number', () => {
  const memo = new MountPointMemo();
  memo.remember(key, mount, volume);
  expect(memo.recall(key, { ...mount, diskSequence: '42' })).toBeUndefined();
});

test('a finding is not recalled for another mount at the entry (a reused id with another device)', () => {
  const memo = new MountPointMemo();
  memo.remember(key, mount, volume);
  expect(memo.recall(key, { ...mount, minor: 4, source: '/dev/loop4' })).toBeUndefined();
});
