import { classifyEntry, type EntryFacts } from '../../../src/runtime/discovery';
import type { EntryInspection } from '../../../src/runtime/volume';

const dir: EntryInspection = { path: '/mnt/disks/vol1', kind: 'directory', resolvedPath: '/mnt/disks/vol1', description: 'a directory' };
const block: EntryInspection = {
  path: '/mnt/disks/vol1',
  kind: 'block-device',
  resolvedPath: '/dev/loop3',
  linkTarget: '/dev/loop3',
  deviceNumber: { major: 7, minor: 3 },
  description: 'a symlink to block device /dev/loop3',
};

function facts(overrides: Partial<EntryFacts>): EntryFacts {
  return { path: '/mnt/disks/vol1', inspection: dir, isMountPoint: true, className: 'local', classVolumeMode: 'Filesystem', ...overrides };
}

describe('classifyEntry', () => {
  test('a mount point directory in a Filesystem class is a Filesystem volume', () => {
    expect(classifyEntry(facts({}))).toEqual({ accept: true, source: 'mount-point', volumeMode: 'Filesystem' });
  });

  test('a directory that is not a mount point is rejected with upstream\'s message', () => {
    expect(classifyEntry(facts({ isMountPoint: false }))).toMatchObject({
      accept: false,
      code: 'not-a-mount-point',
      reason: 'path "/mnt/disks/vol1" is not a valid mount point',
    });
  });

  test('the hint for a symlinked directory says that a symlink is never a mount point', () => {
    const linked: EntryInspection = { ...dir, linkTarget: '/data/vol1', description: 'a symlink to directory /data/vol1' };
    const decision = classifyEntry(facts({ inspection: linked, isMountPoint: false }));
    expect(!decision.accept && decision.hint).toMatch(/^it is a symlink to directory \/data\/vol1, and a symlink is never a mount point/);
  });

  test('a block device in a Block class is a Block volume', () => {
    expect(classifyEntry(facts({ inspection: block, classVolumeMode: 'Block' }))).toEqual({
      accept: true,
      source: 'block-device',
      volumeMode: 'Block',
    });
  });

  test('a block device in a Filesystem class is a Filesystem volume, for kubelet to format', () => {
    expect(classifyEntry(facts({ inspection: block, isMountPoint: false }))).toEqual({
      accept: true,
      source: 'block-device',
      volumeMode: 'Filesystem',
    });
  });

  test('a directory in a Block class is rejected even when it is a mount point', () => {
    expect(classifyEntry(facts({ classVolumeMode: 'Block' }))).toMatchObject({
      accept: false,
      code: 'directory-in-block-class',
      reason: 'path "/mnt/disks/vol1" is a directory, but class "local" has volumeMode Block, which takes only block devices',
    });
  });

  test('a regular file is rejected, saying what it is', () => {
    const file: EntryInspection = { path: '/mnt/disks/f', kind: 'regular-file', resolvedPath: '/mnt/disks/f', description: 'a regular file' };
    expect(classifyEntry(facts({ path: '/mnt/disks/f', inspection: file }))).toEqual({
      accept: false,
      code: 'unsupported-entry',
      reason: 'path "/mnt/disks/f" is a regular file; only mount points and block devices can be volumes',
    });
  });

  test('a broken link is rejected, naming its target', () => {
    const broken: EntryInspection = { path: '/mnt/disks/l', kind: 'broken-link', linkTarget: '/dev/gone', description: 'a broken symlink to /dev/gone (ENOENT)' };
    expect(classifyEntry(facts({ path: '/mnt/disks/l', inspection: broken }))).toEqual({
      accept: false,
      code: 'broken-link',
      reason: 'path "/mnt/disks/l" is a broken symlink to /dev/gone (ENOENT)',
    });
  });
});
