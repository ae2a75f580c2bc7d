import { extentsOverlap, storageExtent } from '../../../src/runtime/record';

const overlap = (a: string, b: string) => extentsOverlap(storageExtent(a), storageExtent(b));
const DISK = 'wwid:naa.5000c500a1b2c3d4';

describe('storage extents: one piece of storage is claimed once', () => {
  test('a disk and a filesystem on it overlap', () => {
    expect(overlap(DISK, `fs:/@${DISK}`)).toBe(true);
  });

  test('a disk and each of its partitions overlap', () => {
    expect(overlap(DISK, `partition:2048@${DISK}`)).toBe(true);
    expect(overlap(DISK, `fs:/@partition:2048@${DISK}`)).toBe(true);
  });

  test('two partitions of one disk do not overlap', () => {
    expect(overlap(`partition:2048@${DISK}`, `partition:4096@${DISK}`)).toBe(false);
    expect(overlap(`fs:/@partition:2048@${DISK}`, `fs:/@partition:4096@${DISK}`)).toBe(false);
  });

  test('a filesystem root and a directory bind-mounted from inside it overlap', () => {
    expect(overlap(`fs:/@${DISK}`, `fs:/data/a@${DISK}`)).toBe(true);
    expect(overlap(`fs:/data@${DISK}`, `fs:/data/a@${DISK}`)).toBe(true);
  });

  test('sibling directories of one filesystem do not overlap, nor do names that only share a prefix', () => {
    expect(overlap(`fs:/a@${DISK}`, `fs:/b@${DISK}`)).toBe(false);
    expect(overlap(`fs:/data@${DISK}`, `fs:/data2@${DISK}`)).toBe(false);
  });

  test('a loop device\'s backing file path with an @ in it is still one disk', () => {
    const loop = 'loop:/var/lib/img@home.img@0';
    expect(storageExtent(`fs:/sub@${loop}`)).toEqual({ disk: loop, root: '/sub' });
    expect(overlap(loop, `fs:/sub@${loop}`)).toBe(true);
  });

  test('filesystems without a device (tmpfs) are known by their mount: its root and a directory inside overlap', () => {
    expect(overlap('mount:tmpfs:0:55:/', 'mount:tmpfs:0:55:/x')).toBe(true);
    expect(overlap('mount:tmpfs:0:55:/x', 'mount:tmpfs:0:56:/x')).toBe(false);
  });

  test('different disks never overlap', () => {
    expect(overlap(DISK, 'wwid:naa.other')).toBe(false);
  });
});
