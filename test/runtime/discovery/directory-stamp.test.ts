import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { directoryStamp, RACY_WINDOW_MS } from '../../../src/runtime/discovery';

/** Well past the racy window of every change these tests make. */
const later = () => Date.now() + RACY_WINDOW_MS + 60_000;

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-stamp-'));
  fs.mkdirSync(path.join(dir, 'vol1'));
  fs.symlinkSync('/dev/null', path.join(dir, 'link'));
  // Times an hour old: any change now stamps other times, even within one clock tick of making the directory.
  const old = new Date(Date.now() - 3_600_000);
  fs.utimesSync(dir, old, old);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('directoryStamp', () => {
  test('is the same while nothing in the directory changes', () => {
    expect(directoryStamp(dir, later())).toBeDefined();
    expect(directoryStamp(dir, later())).toBe(directoryStamp(dir, later()));
  });

  test.each<[string, (d: string) => void]>([
    ['an entry is made', (d) => fs.mkdirSync(path.join(d, 'vol2'))],
    ['an entry is removed', (d) => fs.rmdirSync(path.join(d, 'vol1'))],
    ['an entry is renamed', (d) => fs.renameSync(path.join(d, 'vol1'), path.join(d, 'vol9'))],
    ['a symlink is retargeted by a rename over it', (d) => {
      fs.symlinkSync('/dev/zero', path.join(d, 'link.new'));
      fs.renameSync(path.join(d, 'link.new'), path.join(d, 'link'));
    }],
    ['the directory is replaced by another of its name', (d) => {
      fs.renameSync(d, `${d}.old`);
      fs.mkdirSync(d);
      fs.rmSync(`${d}.old`, { recursive: true });
    }],
  ])('changes when %s', (_what, change) => {
    const before = directoryStamp(dir, later());

    change(dir);

    expect(directoryStamp(dir, later())).not.toBe(before);
  });

  test('is withheld while the last change is within the racy window, and given once it is past', () => {
    fs.mkdirSync(path.join(dir, 'vol2'));
    const changedAt = Date.now();

    expect(directoryStamp(dir, changedAt)).toBeUndefined();
    expect(directoryStamp(dir, changedAt + RACY_WINDOW_MS + 1000)).toBeDefined();
  });

  test('is undefined for a directory that does not exist', () => {
    expect(directoryStamp(path.join(dir, 'absent'), later())).toBeUndefined();
  });
});
