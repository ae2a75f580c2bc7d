import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DirectoryWatcher } from '../../../src/runtime/controller/change-watchers';
import { eventually } from '../kube/fixtures';

describe('DirectoryWatcher', () => {
  let root: string;
  let watcher: DirectoryWatcher;
  let changes: string[];
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-watch-'));
    changes = [];
    watcher = new DirectoryWatcher((dir) => changes.push(dir));
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
    await eventually(() => changes.includes(dir), 'the change is reported');
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
    await eventually(() => changes.includes(dir), 'the change is reported');
  });

  test('a directory removed and made again is watched anew', async () => {
    const dir = path.join(root, 'disks');
    fs.mkdirSync(dir);
    watcher.refresh([dir]);
    fs.rmdirSync(dir);
    await eventually(() => changes.includes(dir), 'the removal is reported');
    fs.mkdirSync(dir);
    expect(watcher.refresh([dir])).toEqual([dir]);
    changes = [];
    fs.writeFileSync(path.join(dir, 'vol1'), '');
    await eventually(() => changes.includes(dir), 'the change in the new directory is reported');
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
