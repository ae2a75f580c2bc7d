import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isMountPoint, mountTableReader, parseMountInfo, readMountTable, unescapeMountField } from '../../../src/runtime/discovery';
import { deviceNumberOf, formatDeviceNumber } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir } from '../../support/privileged';

const SAMPLE = [
  '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro',
  '36 22 98:0 /mnt1 /mnt/parent rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue',
  '40 22 0:45 /data/vol\\0401 /mnt/disks/vol\\0401 rw,relatime - ext4 /dev/my\\040disk rw',
  '41 22 0:46 / /mnt/disks/back\\134slash rw - tmpfs tmpfs rw',
  '',
].join('\n');

describe('parseMountInfo', () => {
  test('reads every field of a line', () => {
    expect(parseMountInfo(SAMPLE).entries[1]).toEqual({
      mountId: 36,
      parentId: 22,
      major: 98,
      minor: 0,
      root: '/mnt1',
      mountPoint: '/mnt/parent',
      mountOptions: 'rw,noatime',
      fsType: 'ext3',
      source: '/dev/root',
      superOptions: 'rw,errors=continue',
    });
  });

  test('undoes octal escapes of spaces and backslashes in paths', () => {
    const table = parseMountInfo(SAMPLE);
    expect(table.entries[2]).toMatchObject({ root: '/data/vol 1', mountPoint: '/mnt/disks/vol 1', source: '/dev/my disk' });
    expect(table.entries[3].mountPoint).toBe('/mnt/disks/back\\slash');
  });

  test('handles lines with no optional fields and with several', () => {
    const table = parseMountInfo(SAMPLE);
    expect(table.entries.map((e) => e.fsType)).toEqual(['ext4', 'ext3', 'ext4', 'tmpfs']);
  });

  test('refuses a malformed line, naming its number', () => {
    expect(() => parseMountInfo('22 1 8:1 / / rw shared:1 ext4 /dev/sda1 rw\n')).toThrow(/mountinfo line 1 is not in the expected format/);
  });

  test('an empty table has no mount points', () => {
    expect(parseMountInfo('').mountPoints.size).toBe(0);
  });
});

describe('unescapeMountField', () => {
  test('turns \\040, \\011, \\012 and \\134 back into space, tab, newline and backslash', () => {
    expect(unescapeMountField('a\\040b\\011c\\012d\\134e')).toBe('a b\tc\nd\\e');
  });
});

describe('isMountPoint', () => {
  const table = parseMountInfo(SAMPLE);

  test('is true for a mount point, with spaces in its name', () => {
    expect(isMountPoint('/mnt/disks/vol 1', table)).toBe(true);
  });

  test('ignores a trailing slash and redundant separators', () => {
    expect(isMountPoint('/mnt//parent/', table)).toBe(true);
  });

  test('is false for a directory below a mount point', () => {
    expect(isMountPoint('/mnt/parent/sub', table)).toBe(false);
  });

  test('is false for a parent of a mount point', () => {
    expect(isMountPoint('/mnt/disks', table)).toBe(false);
  });

  test('the root is a mount point', () => {
    expect(isMountPoint('/', table)).toBe(true);
  });
});

describe('mountTableReader', () => {
  test('parses again only when the text changed', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-mountinfo-')), 'mountinfo');
    fs.writeFileSync(file, SAMPLE);
    const read = mountTableReader(file);
    const first = await read();
    expect(await read()).toBe(first);
    fs.writeFileSync(file, SAMPLE.split('\n').slice(1).join('\n'));
    const changed = await read();
    expect(changed).not.toBe(first);
    expect(changed.entries.map((e) => e.mountId)).toEqual([36, 40, 41]);
    fs.rmSync(path.dirname(file), { recursive: true });
  });

  test('a disk attached anew under its number, the text unchanged, makes a new table whose mounts of it carry its new diskseq', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-mountinfo-')), 'mountinfo');
    fs.writeFileSync(file, SAMPLE);
    const sequences = new Map([['8:1', '5'], ['98:0', '9']]);
    const read = mountTableReader(file, (d) => sequences.get(`${d.major}:${d.minor}`));
    const first = await read();
    expect(first.mountPoints.get('/mnt/parent')?.diskSequence).toBe('9');
    expect(await read()).toBe(first);
    sequences.set('98:0', '10');
    const again = await read();
    expect(again).not.toBe(first);
    expect(again.mountPoints.get('/mnt/parent')?.diskSequence).toBe('10');
    expect(again.mountPoints.get('/')?.diskSequence).toBe('5');
    fs.rmSync(path.dirname(file), { recursive: true });
  });

  test('reads the diskseq once per disk on every read, and none for a filesystem without a disk (major 0)', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-mountinfo-')), 'mountinfo');
    fs.writeFileSync(file, `${SAMPLE}42 22 8:1 /srv /srv rw - ext4 /dev/sda1 rw\n`);
    const asked: string[] = [];
    const read = mountTableReader(file, (d) => {
      asked.push(`${d.major}:${d.minor}`);
      return undefined;
    });
    await read();
    await read();
    expect(asked).toEqual(['8:1', '98:0', '8:1', '98:0']);
    fs.rmSync(path.dirname(file), { recursive: true });
  });
});

describePrivileged('readMountTable', () => {
  afterAll(cleanupPrivileged);

  test('sees a bind mount made after the previous read', async () => {
    const dir = path.join(makeTempDir(), 'vol1');
    expect(isMountPoint(dir, await readMountTable())).toBe(false);
    makeMountPoint(dir);
    expect(isMountPoint(dir, await readMountTable())).toBe(true);
  });

  test('sees a mount point whose name has a space', async () => {
    const dir = path.join(makeTempDir(), 'my vol');
    makeMountPoint(dir);
    expect(isMountPoint(dir, await readMountTable())).toBe(true);
  });

  test('a filesystem with an anonymous device number (btrfs) carries the diskseq of the disk its source names', async () => {
    const disk = createLoopDevice(1024 * 1024).device;
    const number = formatDeviceNumber(deviceNumberOf(fs.statSync(disk, { bigint: true }).rdev));
    const file = path.join(makeTempDir(), 'mountinfo');
    fs.writeFileSync(file, `${SAMPLE}50 22 0:61 /@data /mnt/disks/vol2 rw - btrfs ${disk} rw\n`);
    const sequences = new Map([[number, '30']]);
    const read = mountTableReader(file, (d) => sequences.get(`${d.major}:${d.minor}`));
    const first = await read();
    expect(first.mountPoints.get('/mnt/disks/vol2')?.diskSequence).toBe('30');
    sequences.set(number, '31');
    expect((await read()).mountPoints.get('/mnt/disks/vol2')?.diskSequence).toBe('31');
  });
});
