import { execFileSync, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { wipeDevice, wipeRanges, type WipeRange } from '../../../src/runtime/cleanup/wipe';
import { blockDeviceSize } from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

afterAll(cleanupPrivileged);

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

describePrivileged('wiping a device', () => {
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
  ])('zeroes exactly the ranges of a %s device and verifies them', async (_, backingSize) => {
    const loop = createLoopDevice(backingSize);
    // A loop device ends at the last whole 512-byte sector of its file.
    const size = await blockDeviceSize(loop.device);
    expect(size).toBe(Math.floor(backingSize / 512) * 512);
    const ranges = wipeRanges(size);
    const survivors = markData(loop.backingFile, ranges, size);

    const result = await wipeDevice(loop.device);
    expect(result).toMatchObject({ ok: true, sizeBytes: size, ranges, bytesWritten: ranges.reduce((n, r) => n + r.length, 0), direct: true });
    expect(rangesReadZero(loop.backingFile, ranges)).toBe(true);
    for (const offset of survivors) expect(readAt(loop.backingFile, offset, marker.length)).toEqual(marker);
  });

  test('a sparse 10 TiB device gets its five ranges written and nothing else: the backing file stays sparse', async () => {
    const loop = createLoopDevice(10 * TiB);
    const ranges = wipeRanges(10 * TiB);
    const survivors = markData(loop.backingFile, ranges, 10 * TiB);

    const result = await wipeDevice(loop.device);
    expect(result).toMatchObject({ ok: true, sizeBytes: 10 * TiB, ranges });
    expect(ranges.map((r) => r.offset / GiB)).toEqual([0, 1, 10, 100, 1000]);
    expect(rangesReadZero(loop.backingFile, ranges)).toBe(true);
    for (const offset of survivors) expect(readAt(loop.backingFile, offset, marker.length)).toEqual(marker);
    const allocated = fs.statSync(loop.backingFile).blocks * 512;
    expect(allocated).toBeLessThanOrEqual(5 * 100 * MiB + 16 * MiB);
  });

  test('an ext4 filesystem is gone afterwards: blkid finds no signature', async () => {
    const loop = createLoopDevice(2 * GiB);
    mkfsExt4(loop.device);
    expect(blkidType(loop.device)).toBe('ext4');
    expect(await wipeDevice(loop.device)).toMatchObject({ ok: true });
    expect(blkidType(loop.device)).toBeUndefined();
    expect(rangesReadZero(loop.device, wipeRanges(2 * GiB))).toBe(true);
  });

  test('a mounted device is refused and keeps its filesystem', async () => {
    const loop = createLoopDevice(256 * MiB);
    mkfsExt4(loop.device);
    const mnt = path.join(makeTempDir(), 'mnt');
    mount(loop.device, mnt);
    fs.writeFileSync(path.join(mnt, 'data'), 'precious');
    const result = await wipeDevice(loop.device);
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
      expect(await wipeDevice(loop.device)).toMatchObject({ ok: false, bytesWritten: 0, reason: expect.stringContaining(`held open by process ${holder.pid}`) });
    } finally {
      holder.kill('SIGKILL');
    }
  });

  test('an aborted wipe stops and says so', async () => {
    const loop = createLoopDevice(2 * GiB);
    const controller = new AbortController();
    controller.abort('timed out');
    expect(await wipeDevice(loop.device, { signal: controller.signal })).toMatchObject({ ok: false, reason: expect.stringContaining('stopped: timed out') });
  });
});
