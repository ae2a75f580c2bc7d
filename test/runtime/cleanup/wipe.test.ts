import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sampleRanges, wipeDevice, wipeRanges, type WipeRange } from '../../../src/runtime/cleanup/wipe';
import { blockDeviceSize } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount, pastLoopSetup } from '../../support/privileged';

afterAll(cleanupPrivileged);

/** A wipe, waiting out another suite's losetup holding the device for a moment. */
const wipe = (...args: Parameters<typeof wipeDevice>) => pastLoopSetup(() => wipeDevice(...args));

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const TiB = 1024 * GiB;

describe('wipe ranges', () => {
  test('a device below 1 GiB: its first 100 MiB', () => {
    expect(wipeRanges(GiB - 1)).toEqual([{ offset: 0, length: 100 * MiB }]);
  });

  test('a device smaller than 100 MiB: all of it', () => {
    expect(wipeRanges(50 * MiB)).toEqual([{ offset: 0, length: 50 * MiB }]);
  });

  test('exactly 1 GiB: the offset 1 GiB is past the end', () => {
    expect(wipeRanges(GiB)).toEqual([{ offset: 0, length: 100 * MiB }]);
  });

  test('1 GiB + 5 KiB: the second range is clipped to 5 KiB', () => {
    expect(wipeRanges(GiB + 5 * KiB)).toEqual([{ offset: 0, length: 100 * MiB }, { offset: GiB, length: 5 * KiB }]);
  });

  test('1 GiB + 10 KiB: the second range is clipped to 10 KiB', () => {
    expect(wipeRanges(GiB + 10 * KiB)).toEqual([{ offset: 0, length: 100 * MiB }, { offset: GiB, length: 10 * KiB }]);
  });

  test('2 GiB: 100 MiB at 0 and at 1 GiB', () => {
    expect(wipeRanges(2 * GiB)).toEqual([{ offset: 0, length: 100 * MiB }, { offset: GiB, length: 100 * MiB }]);
  });

  test('10 TiB: 100 MiB at 0, 1, 10, 100 and 1000 GiB', () => {
    expect(wipeRanges(10 * TiB)).toEqual([0, 1, 10, 100, 1000].map((g) => ({ offset: g * GiB, length: 100 * MiB })));
  });

  test('never a range past the end, never an empty one', () => {
    for (const size of [1, 512, 100 * MiB, 100 * MiB + 1, 10 * GiB, 10 * GiB + 1, 1000 * GiB + 4096]) {
      for (const r of wipeRanges(size)) {
        expect(r.length).toBeGreaterThan(0);
        expect(r.offset + r.length).toBeLessThanOrEqual(size);
      }
    }
  });
});

describe('what a whole-device wipe reads back', () => {
  const size = 1100 * GiB;
  const sample = sampleRanges(size, () => 7);

  test('the first and the last MiB', () => {
    expect(sample[0]).toEqual({ offset: 0, length: MiB });
    expect(sample.at(-1)).toEqual({ offset: size - MiB, length: MiB });
  });

  test('the start and end of each of upstream\'s ranges, and the MiB just past each (what upstream left readable)', () => {
    for (const r of wipeRanges(size)) {
      expect(sample).toContainEqual({ offset: r.offset, length: MiB });
      expect(sample).toContainEqual({ offset: r.offset + r.length - MiB, length: MiB });
      expect(sample).toContainEqual({ offset: r.offset + r.length, length: MiB });
    }
  });

  test('random windows, 4 KiB-aligned, all inside the device, for any size', () => {
    for (const sz of [512, 5 * KiB, 100 * MiB, GiB + 5 * KiB, 10 * TiB]) {
      const ranges = sampleRanges(sz);
      expect(ranges.length).toBeGreaterThan(0);
      for (const r of ranges) {
        expect(r.offset % 512).toBe(0);
        expect(r.offset + r.length).toBeLessThanOrEqual(sz);
      }
    }
    expect(sampleRanges(10 * TiB).length).toBeGreaterThan(2 + 3 * 5 + 16);
  });
});

/** Reads `length` bytes at `offset` of a file. */
function readAt(file: string, offset: number, length: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const b = Buffer.alloc(length);
    fs.readSync(fd, b, 0, length, offset);
    return b;
  } finally {
    fs.closeSync(fd);
  }
}

function writeAt(file: string, offset: number, data: Buffer): void {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.writeSync(fd, data, 0, data.length, offset);
  } finally {
    fs.closeSync(fd);
  }
}

const ZEROS = Buffer.alloc(8 * MiB);

/** True when every byte of each range reads zero in `file`, 8 MiB at a time. */
function rangesReadZero(file: string, ranges: readonly WipeRange[]): boolean {
  const buffer = Buffer.alloc(8 * MiB);
  const fd = fs.openSync(file, 'r');
  try {
    for (const r of ranges) {
      for (let done = 0; done < r.length; done += buffer.length) {
        const n = fs.readSync(fd, buffer, 0, Math.min(buffer.length, r.length - done), r.offset + done);
        if (!buffer.subarray(0, n).equals(ZEROS.subarray(0, n))) return false;
      }
    }
    return true;
  } finally {
    fs.closeSync(fd);
  }
}

/** blkid's verdict on a device: the TYPE it finds, or undefined when it finds no signature. */
function blkidType(device: string): string | undefined {
  const r = spawnSync('blkid', ['-p', '-o', 'value', '-s', 'TYPE', device], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** Fills all of `file` with `byte`, 8 MiB at a time. */
function fill(file: string, size: number, byte: number): void {
  const chunk = Buffer.alloc(8 * MiB, byte);
  const fd = fs.openSync(file, 'r+');
  try {
    for (let done = 0; done < size; done += chunk.length) fs.writeSync(fd, chunk, 0, Math.min(chunk.length, size - done), done);
  } finally {
    fs.closeSync(fd);
  }
}

/** The offsets of `file` (8 MiB-chunk granularity) that still hold a non-zero byte; [] when all of it reads zero. */
function nonZeroChunks(file: string, size: number): number[] {
  const found: number[] = [];
  const buffer = Buffer.alloc(8 * MiB);
  const fd = fs.openSync(file, 'r');
  try {
    for (let done = 0; done < size; done += buffer.length) {
      const n = fs.readSync(fd, buffer, 0, Math.min(buffer.length, size - done), done);
      if (!buffer.subarray(0, n).equals(ZEROS.subarray(0, n))) found.push(done);
    }
    return found;
  } finally {
    fs.closeSync(fd);
  }
}

/** A stand-in for blkdiscard that prints `message` on stderr and exits 1 (the device path is its $1, unused). */
const failingZeroOut = (message: string): string[] => ['bash', '-c', `echo "blkdiscard: ${message}" >&2; exit 1`, 'blkdiscard'];

describePrivileged('wiping a device whole (the default)', () => {
  // Past 100 MiB, between upstream's ranges (100 MiB .. 1 GiB) and past the second; not a whole number of 4 KiB blocks.
  const SIZE = GiB + 160 * MiB + 5 * KiB;

  test('no byte of the old data is readable anywhere on the device afterwards', async () => {
    const loop = createLoopDevice(SIZE);
    fill(loop.backingFile, SIZE, 0xab);
    const result = await wipe(loop.device);
    expect(result).toMatchObject({ ok: true, extent: 'full', method: 'zeroout', sizeBytes: SIZE, ranges: [{ offset: 0, length: SIZE }], bytesWritten: SIZE });
    expect(result.zeroOutUnavailable).toBeUndefined();
    expect(nonZeroChunks(loop.backingFile, SIZE)).toEqual([]);
  });

  test('after BLKZEROOUT, the start, the end, upstream\'s offsets and random windows are read back', async () => {
    const loop = createLoopDevice(SIZE);
    const result = await wipe(loop.device);
    expect(result.ok).toBe(true);
    expect(result.verified[0]).toEqual({ offset: 0, length: MiB });
    expect(result.verified.at(-1)).toEqual({ offset: SIZE - MiB, length: MiB });
    expect(result.verified).toContainEqual({ offset: GiB + 100 * MiB, length: MiB });
  });

  test('a zeroout that reports success but leaves the data is caught by the read-back', async () => {
    const loop = createLoopDevice(SIZE);
    fill(loop.backingFile, SIZE, 0xab);
    const result = await wipe(loop.device, { zeroOutCommand: ['true'] });
    // Windows are read back several at a time: whichever is read first names the failure.
    expect(result).toMatchObject({ ok: false, method: 'zeroout', reason: expect.stringMatching(/bytes at \d+\.\.\d+ do not read back as zeros/) });
  });

  test.each([
    ['the kernel does not support BLKZEROOUT on the device', failingZeroOut('BLKZEROOUT ioctl failed: Operation not supported'), 'Operation not supported'],
    ['blkdiscard is too old for --force', failingZeroOut("unrecognized option '--force'"), 'unrecognized option'],
    ['blkdiscard is not installed', ['lvp-no-such-blkdiscard'], 'not an executable program'],
  ])('when %s, zero writes cover the whole device instead', async (_, zeroOutCommand, why) => {
    const loop = createLoopDevice(SIZE);
    fill(loop.backingFile, SIZE, 0xab);
    const result = await wipe(loop.device, { zeroOutCommand });
    expect(result).toMatchObject({ ok: true, method: 'writes', bytesWritten: SIZE, direct: true, zeroOutUnavailable: expect.stringContaining(why) });
    expect(nonZeroChunks(loop.backingFile, SIZE)).toEqual([]);
  });

  test('a zeroout that fails on the device (an I/O error) fails the wipe, and is not hidden by writes', async () => {
    const loop = createLoopDevice(256 * MiB);
    fill(loop.backingFile, 256 * MiB, 0xab);
    const result = await wipe(loop.device, { zeroOutCommand: failingZeroOut('BLKZEROOUT ioctl failed: Input/output error') });
    expect(result).toMatchObject({ ok: false, method: 'zeroout', bytesWritten: 0, reason: expect.stringContaining('Input/output error') });
    expect(readAt(loop.backingFile, 0, 4 * KiB)).toEqual(Buffer.alloc(4 * KiB, 0xab));
  });

  test('a zeroout is stopped when the wipe is aborted, and the wipe says so', async () => {
    const loop = createLoopDevice(256 * MiB);
    const controller = new AbortController();
    setTimeout(() => controller.abort('timed out'), 200);
    // A zeroout that did not stop would run 1000 s: the test's own timeout fails it.
    const result = await wipe(loop.device, { signal: controller.signal, zeroOutCommand: ['bash', '-c', 'sleep 1000', 'blkdiscard'] });
    expect(result).toMatchObject({ ok: false, method: 'zeroout', reason: expect.stringContaining('stopped: timed out') });
  });

  test('an ext4 filesystem is gone afterwards: blkid finds no signature', async () => {
    const loop = createLoopDevice(2 * GiB);
    mkfsExt4(loop.device);
    expect(blkidType(loop.device)).toBe('ext4');
    expect(await wipe(loop.device)).toMatchObject({ ok: true });
    expect(blkidType(loop.device)).toBeUndefined();
    expect(nonZeroChunks(loop.device, 2 * GiB)).toEqual([]);
  });

  test('a mounted device is refused and keeps its filesystem', async () => {
    const loop = createLoopDevice(256 * MiB);
    mkfsExt4(loop.device);
    const mnt = path.join(makeTempDir(), 'mnt');
    mount(loop.device, mnt);
    fs.writeFileSync(path.join(mnt, 'data'), 'precious');
    const result = await wipe(loop.device);
    expect(result).toMatchObject({ ok: false, bytesWritten: 0, reason: expect.stringContaining('in use') });
    expect(fs.readFileSync(path.join(mnt, 'data'), 'utf8')).toBe('precious');
    execFileSync('umount', [mnt]);
    expect(blkidType(loop.device)).toBe('ext4');
  });

  test('a device held open by another process is refused', async () => {
    const loop = createLoopDevice(256 * MiB);
    const holder = spawn('bash', ['-c', `exec 3<>${loop.device}; echo ready; sleep 1000`], { stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise((r) => holder.stdout!.once('data', r));
    try {
      expect(await wipe(loop.device)).toMatchObject({ ok: false, bytesWritten: 0, reason: expect.stringContaining(`held open by process ${holder.pid}`) });
    } finally {
      holder.kill('SIGKILL');
    }
  });

  test('an aborted wipe stops and says so', async () => {
    const loop = createLoopDevice(2 * GiB);
    const controller = new AbortController();
    controller.abort('timed out');
    expect(await wipe(loop.device, { signal: controller.signal })).toMatchObject({ ok: false, reason: expect.stringContaining('stopped: timed out') });
  });
});

describePrivileged('wiping only upstream\'s ranges (wipe: upstream-ranges, opt-in)', () => {
  const marker = Buffer.alloc(4 * KiB, 0xab);

  /** Marks data at the start and the last 4 KiB of each range, and just past each range's end (which must survive). */
  function markData(backingFile: string, ranges: readonly WipeRange[], size: number): number[] {
    const survivors: number[] = [];
    for (const r of ranges) {
      writeAt(backingFile, r.offset, marker);
      writeAt(backingFile, r.offset + r.length - marker.length, marker);
      if (r.offset + r.length + marker.length <= size) {
        writeAt(backingFile, r.offset + r.length, marker);
        survivors.push(r.offset + r.length);
      }
    }
    return survivors;
  }

  test.each([
    ['1 GiB - 1', GiB - 1],
    ['1 GiB', GiB],
    ['1 GiB + 5 KiB', GiB + 5 * KiB],
    ['1 GiB + 10 KiB', GiB + 10 * KiB],
    ['2 GiB', 2 * GiB],
  ])('zeroes exactly the ranges of a %s device and verifies them, leaving the rest readable', async (_, backingSize) => {
    const loop = createLoopDevice(backingSize);
    // A loop device ends at the last whole 512-byte sector of its file.
    const size = await blockDeviceSize(loop.device);
    expect(size).toBe(Math.floor(backingSize / 512) * 512);
    const ranges = wipeRanges(size);
    const survivors = markData(loop.backingFile, ranges, size);

    const result = await wipe(loop.device, { extent: 'upstream-ranges' });
    expect(result).toMatchObject({
      ok: true, extent: 'upstream-ranges', method: 'writes', sizeBytes: size, ranges, verified: ranges, bytesWritten: ranges.reduce((n, r) => n + r.length, 0), direct: true,
    });
    expect(rangesReadZero(loop.backingFile, ranges)).toBe(true);
    for (const offset of survivors) expect(readAt(loop.backingFile, offset, marker.length)).toEqual(marker);
  });

  test('a sparse 10 TiB device gets its five ranges written and nothing else: the backing file stays sparse', async () => {
    const loop = createLoopDevice(10 * TiB);
    const ranges = wipeRanges(10 * TiB);
    const survivors = markData(loop.backingFile, ranges, 10 * TiB);

    const result = await wipe(loop.device, { extent: 'upstream-ranges' });
    expect(result).toMatchObject({ ok: true, sizeBytes: 10 * TiB, ranges });
    expect(ranges.map((r) => r.offset / GiB)).toEqual([0, 1, 10, 100, 1000]);
    expect(rangesReadZero(loop.backingFile, ranges)).toBe(true);
    for (const offset of survivors) expect(readAt(loop.backingFile, offset, marker.length)).toEqual(marker);
    const allocated = fs.statSync(loop.backingFile).blocks * 512;
    expect(allocated).toBeLessThanOrEqual(5 * 100 * MiB + 16 * MiB);
  });
});
