/**
 * The device dialect's wipe: zero 100 MiB at 0, 1, 10, 100 and 1000 GiB into
 * the device (clipped at its end), where partition tables, filesystem
 * superblocks and their backups, and Ceph BlueStore labels live, so kubelet
 * finds no signature and formats the device afresh for the next user.
 *
 * The device is opened exclusively (a mounted or held device is refused), the
 * zeros are written with O_DIRECT in large chunks with several writes in
 * flight (as fast as the device takes them, without flooding the page cache),
 * fsync'd (flushing the disk's own write cache), and read back with O_DIRECT to
 * verify that the ranges really hold zeros on the device.
 */
import * as fs from 'node:fs';
import { openDeviceExclusively } from './exclusive-open';
import { blockDeviceSize } from '../volume/block-device-size';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface WipeRange {
  /** Byte offset into the device. */
  readonly offset: number;
  /** Bytes to zero from there. */
  readonly length: number;
}

/** Where a wipe writes zeros on a device of `sizeBytes`, in ascending order. */
export function wipeRanges(sizeBytes: number): WipeRange[] {
  const ranges: WipeRange[] = [];
  for (const offset of [0, 1, 10, 100, 1000].map((g) => g * GiB)) {
    if (offset >= sizeBytes) break;
    ranges.push({ offset, length: Math.min(100 * MiB, sizeBytes - offset) });
  }
  return ranges;
}

export interface WipeOptions {
  /** Aborting it stops the wipe between two chunks. */
  readonly signal?: AbortSignal;
  /** Bytes per write (rounded down to a multiple of 4 KiB). @default 8 MiB */
  readonly chunkBytes?: number;
  /** Writes (and reads) in flight at once. @default 4 */
  readonly parallel?: number;
  /** Read the ranges back and check they are zero. @default true */
  readonly verify?: boolean;
}

export interface WipeResult {
  readonly ok: boolean;
  readonly reason?: string;
  readonly device: string;
  readonly sizeBytes: number;
  readonly ranges: readonly WipeRange[];
  readonly bytesWritten: number;
  /** Whether O_DIRECT was used (else buffered writes and fsync; verification then reads the page cache). */
  readonly direct: boolean;
  /** Time to write and fsync. */
  readonly writeMs: number;
  /** Time to read back and verify (0 without verification). */
  readonly verifyMs: number;
}

interface Chunk {
  readonly position: number;
  readonly length: number;
}

function chunksOf(ranges: readonly WipeRange[], chunkBytes: number): Chunk[] {
  const chunks: Chunk[] = [];
  for (const r of ranges) {
    for (let done = 0; done < r.length; done += chunkBytes) {
      chunks.push({ position: r.offset + done, length: Math.min(chunkBytes, r.length - done) });
    }
  }
  return chunks;
}

function writeAsync(fd: number, buffer: Buffer, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => fs.write(fd, buffer, 0, length, position, (e, n) => (e ? reject(e) : resolve(n))));
}

function readAsync(fd: number, buffer: Buffer, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => fs.read(fd, buffer, 0, length, position, (e, n) => (e ? reject(e) : resolve(n))));
}

/**
 * Runs `work` over `chunks` with `parallel` workers, each with its own index.
 * On a failure or abort the others stop after their current chunk, and it
 * settles only when none is left in flight: the fd is closed after it, and
 * closing an fd under an in-flight write could send zeros to whatever file
 * reuses that fd number.
 */
async function forEachChunk(chunks: Chunk[], parallel: number, signal: AbortSignal | undefined,
  work: (chunk: Chunk, worker: number) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const worker = async (w: number): Promise<void> => {
    while (next < chunks.length && failure === undefined) {
      if (signal?.aborted) throw new Error(`stopped: ${String(signal.reason ?? 'aborted')}`);
      await work(chunks[next++], w);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, chunks.length) }, async (_, w) => {
    try {
      await worker(w);
    } catch (e) {
      failure ??= e;
    }
  }));
  if (failure !== undefined) throw failure;
}

/**
 * Node cannot tell a buffer's address, and O_DIRECT needs it aligned to the
 * device's DMA alignment: find an aligned view by trying (the kernel answers
 * EINVAL for a misaligned one before any I/O). The probe writes zeros into the
 * first range, which is being zeroed anyway.
 */
function findAlignedOffset(fd: number, raw: Buffer, probe: Chunk): number | undefined {
  for (let offset = 0; offset <= 4096; offset += 16) {
    try {
      fs.writeSync(fd, raw, offset, probe.length, probe.position);
      return offset;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EINVAL') throw e;
    }
  }
  return undefined;
}

/** Zeroes the wipe ranges of `device` (opened exclusively), fsyncs, and verifies them. Never throws. */
export async function wipeDevice(device: string, options: WipeOptions = {}): Promise<WipeResult> {
  // A multiple of 4 KiB keeps every buffer carved from one aligned base aligned too.
  const chunkBytes = Math.max(4096, Math.floor((options.chunkBytes ?? 8 * MiB) / 4096) * 4096);
  const parallel = Math.max(1, options.parallel ?? 4);
  let sizeBytes = 0;
  let ranges: WipeRange[] = [];
  let bytesWritten = 0;
  let direct = true;
  let writeMs = 0;
  let verifyMs = 0;
  const result = (ok: boolean, reason?: string): WipeResult =>
    ({ ok, reason, device, sizeBytes, ranges, bytesWritten, direct, writeMs, verifyMs });

  let opened = openDeviceExclusively(device, { write: true, direct: true });
  if (!opened.ok && /EINVAL/.test(opened.reason)) {
    direct = false;
    opened = openDeviceExclusively(device, { write: true });
  }
  if (!opened.ok) return result(false, opened.reason);
  const fd = opened.fd;
  try {
    sizeBytes = await blockDeviceSize(device);
    ranges = wipeRanges(sizeBytes);
    const chunks = chunksOf(ranges, chunkBytes);
    if (chunks.length === 0) return result(false, `device "${device}" has size 0`);

    // One zero region shared by all writes, then one read buffer per worker, all aligned alike.
    const raw = Buffer.alloc(chunkBytes * (1 + parallel) + 4096 + 16);
    const started = performance.now();
    let base = 0;
    if (direct) {
      const aligned = findAlignedOffset(fd, raw, chunks[0]);
      if (aligned === undefined) return result(false, `no buffer alignment accepted for O_DIRECT writes to "${device}"`);
      base = aligned;
    }
    const zeros = raw.subarray(base, base + chunkBytes);
    const readBuffers = Array.from({ length: parallel }, (_, w) => raw.subarray(base + chunkBytes * (w + 1), base + chunkBytes * (w + 2)));

    await forEachChunk(chunks, parallel, options.signal, async (chunk) => {
      const n = await writeAsync(fd, zeros, chunk.length, chunk.position);
      if (n !== chunk.length) throw new Error(`short write at byte ${chunk.position}: ${n} of ${chunk.length}`);
      bytesWritten += n;
    });
    fs.fsyncSync(fd);
    writeMs = performance.now() - started;

    if (options.verify !== false) {
      const verifyStarted = performance.now();
      await forEachChunk(chunks, parallel, options.signal, async (chunk, w) => {
        const buffer = readBuffers[w];
        const n = await readAsync(fd, buffer, chunk.length, chunk.position);
        if (n !== chunk.length) throw new Error(`short read at byte ${chunk.position}: ${n} of ${chunk.length}`);
        if (!buffer.subarray(0, n).equals(zeros.subarray(0, n))) {
          throw new Error(`bytes at ${chunk.position}..${chunk.position + n} do not read back as zeros`);
        }
      });
      verifyMs = performance.now() - verifyStarted;
    }
    return result(true);
  } catch (e) {
    return result(false, `wipe of "${device}" failed: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    fs.closeSync(fd);
  }
}
