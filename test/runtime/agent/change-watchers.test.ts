import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DirectoryWatcher, MountTableWatcher } from '../../../src/runtime/agent/change-watchers';
import { cleanupPrivileged, describePrivileged, makeMountPoint, makeTempDir, unmount } from '../../support/privileged';
import { eventually } from '../kube/fixtures';

describe('DirectoryWatcher', () => {
  let root: string;
  let watcher: DirectoryWatcher;
  let changes: string[];
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-watch-'));
    changes = [];
    watcher = new DirectoryWatcher();
    watcher.onChange((dir) => changes.push(dir));
  });
  afterEach(() => {
    watcher.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  test('reports a new entry in a watched directory', async () => {
    const dir = path.join(root, 'disks');
    fs.mkdirSync(dir);
    expect(watcher.refresh([dir])).toEqual([dir]);
    fs.writeFileSync(path.join(dir, 'vol1'), '');
    await eventually(async () => changes.includes(dir), 'the change is reported');
  });

  test('a refresh reports only the directories it started watching', () => {
    const dir = path.join(root, 'disks');
    fs.mkdirSync(dir);
    expect(watcher.refresh([dir])).toEqual([dir]);
    expect(watcher.refresh([dir])).toEqual([]);
  });

  test('a directory missing at first is watched by the refresh after it appears', async () => {
    const dir = path.join(root, 'later');
    expect(watcher.refresh([dir])).toEqual([]);
    fs.mkdirSync(dir);
    expect(watcher.refresh([dir])).toEqual([dir]);
    fs.writeFileSync(path.join(dir, 'vol1'), '');
    await eventually(async () => changes.includes(dir), 'the change is reported');
  });

  test('a directory removed and made again is watched anew', async () => {
    const dir = path.join(root, 'disks');
    fs.mkdirSync(dir);
    watcher.refresh([dir]);
    fs.rmdirSync(dir);
    await eventually(async () => changes.includes(dir), 'the removal is reported');
    fs.mkdirSync(dir);
    expect(watcher.refresh([dir])).toEqual([dir]);
    changes = [];
    fs.writeFileSync(path.join(dir, 'vol1'), '');
    await eventually(async () => changes.includes(dir), 'the change in the new directory is reported');
  });

  test('a directory no longer wanted is no longer watched', async () => {
    const dir = path.join(root, 'disks');
    fs.mkdirSync(dir);
    watcher.refresh([dir]);
    watcher.refresh([]);
    fs.writeFileSync(path.join(dir, 'vol1'), '');
    await new Promise((r) => setTimeout(r, 100));
    expect(changes).toEqual([]);
  });
});

describePrivileged('MountTableWatcher', () => {
  afterAll(cleanupPrivileged);

  test('reports a mount and an unmount as they happen, through findmnt --poll', async () => {
    let changes = 0;
    const watcher = new MountTableWatcher(() => changes++);
    try {
      // findmnt reports only what changes after it has started: mount until it has said so.
      const dir = path.join(makeTempDir('lvp-mounts-'), 'vol');
      fs.mkdirSync(dir);
      await eventually(async () => {
        makeMountPoint(dir);
        unmount(dir);
        return changes > 0;
      }, 'a mount is reported');
      const seen = changes;
      makeMountPoint(dir);
      await eventually(async () => changes > seen, 'the next mount is reported');
    } finally {
      watcher.close();
    }
  });
});

describe('MountTableWatcher without findmnt', () => {
  test('re-reads the mount table and says why, when the command cannot run', async () => {
    const table = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-mountinfo-')), 'mountinfo');
    fs.writeFileSync(table, 'one\n');
    const warnings: object[] = [];
    const logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (fields: object) => warnings.push(fields) };
    let changes = 0;
    const watcher = new MountTableWatcher(() => changes++, { command: ['/nonexistent/findmnt'], file: table, fallbackIntervalMs: 10, logger });
    try {
      await eventually(async () => warnings.length === 1, 'the fallback is logged');
      expect(warnings[0]).toMatchObject({ command: '/nonexistent/findmnt', reason: expect.stringContaining('ENOENT') });
      const seen = changes;
      fs.writeFileSync(table, 'one\ntwo\n');
      await eventually(async () => changes > seen, 'the change is seen by re-reading');
    } finally {
      watcher.close();
    }
  });
});
