import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspectEntry } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir } from '../../support/privileged';

afterAll(cleanupPrivileged);

describe('inspectEntry on ordinary entries', () => {
  test('a directory is a directory', () => {
    const dir = makeTempDir();
    expect(inspectEntry(dir)).toMatchObject({ kind: 'directory', description: 'a directory' });
  });

  test('a regular file is a regular file', () => {
    const file = path.join(makeTempDir(), 'f');
    fs.writeFileSync(file, 'x');
    expect(inspectEntry(file)).toMatchObject({ kind: 'regular-file', description: 'a regular file' });
  });

  test('a symlink to a directory is a directory, with its target recorded', () => {
    const dir = makeTempDir();
    const link = path.join(makeTempDir(), 'link');
    fs.symlinkSync(dir, link);
    expect(inspectEntry(link)).toMatchObject({
      kind: 'directory',
      linkTarget: dir,
      resolvedPath: fs.realpathSync(dir),
      description: `a symlink to directory ${fs.realpathSync(dir)}`,
    });
  });

  test('a symlink to nothing is a broken link, not an error', () => {
    const link = path.join(makeTempDir(), 'dangling');
    fs.symlinkSync('/nonexistent/target', link);
    expect(inspectEntry(link)).toEqual({
      path: link,
      kind: 'broken-link',
      linkTarget: '/nonexistent/target',
      description: 'a broken symlink to /nonexistent/target (ENOENT)',
    });
  });

  test('a symlink loop is a broken link', () => {
    const dir = makeTempDir();
    fs.symlinkSync(path.join(dir, 'b'), path.join(dir, 'a'));
    fs.symlinkSync(path.join(dir, 'a'), path.join(dir, 'b'));
    expect(inspectEntry(path.join(dir, 'a')).kind).toBe('broken-link');
  });

  test('a FIFO is some other kind of entry', () => {
    const fifo = path.join(makeTempDir(), 'pipe');
    execFileSync('mkfifo', [fifo]);
    expect(inspectEntry(fifo)).toMatchObject({ kind: 'other', description: 'a FIFO' });
  });

  test('a character device is some other kind of entry', () => {
    expect(inspectEntry('/dev/null')).toMatchObject({ kind: 'other', description: 'a character device' });
  });

  test('a path that does not exist is an error, not a kind', () => {
    expect(() => inspectEntry('/nonexistent/entry')).toThrow(/ENOENT/);
  });
});

describePrivileged('inspectEntry on block devices', () => {
  test('a loop device is a block device with its device number', () => {
    const loop = createLoopDevice(16 * 1024 * 1024);
    const minor = Number(/loop(\d+)$/.exec(loop.device)![1]);
    expect(inspectEntry(loop.device)).toMatchObject({
      kind: 'block-device',
      deviceNumber: { major: 7, minor },
      description: 'a block device',
    });
  });

  test('a symlink to a loop device is a block device resolved to the device', () => {
    const loop = createLoopDevice(16 * 1024 * 1024);
    const link = path.join(makeTempDir(), 'by-id-disk');
    fs.symlinkSync(loop.device, link);
    expect(inspectEntry(link)).toMatchObject({
      kind: 'block-device',
      linkTarget: loop.device,
      resolvedPath: loop.device,
      description: `a symlink to block device ${loop.device}`,
    });
  });
});
