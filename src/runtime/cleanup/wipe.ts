/**
 * The device dialect's wipe. By default (`wipe: full`) every byte of the device
 * is zeroed, so nothing of one tenant's data reaches the next:
 * - first with BLKZEROOUT, through util-linux `blkdiscard --zeroout` (Node has no
 *   ioctl): the kernel guarantees the range reads back as zeros, using the
 *   device's WRITE ZEROES / WRITE SAME offload where it has one and writing zero
 *   pages itself where not. A plain discard is never used: it zeroes only on
 *   devices that promise so, and many do not;
 * - where BLKZEROOUT cannot be had (blkdiscard missing or too old, the ioctl not
 *   supported), with our own O_DIRECT zero writes over the whole device.
 * `wipe: upstream-ranges` zeroes only 100 MiB at 0, 1, 10, 100 and 1000 GiB into
 * the device (clipped at its end), as the device-selecting provisioner did: enough
 * for kubelet to find no signature, but most of the old data stays readable.
 *
 * The device is opened exclusively (a mounted or held device is refused) and
 * stays claimed by us for the whole wipe: blkdiscard is given that open device
 * as `/proc/<pid>/fd/<n>` with `--force`, because without it blkdiscard opens
 * with O_EXCL itself and gets EBUSY from our claim. Zeros are written with
 * O_DIRECT in large chunks with several writes in flight (as fast as the device
 * takes them, without flooding the page cache), everything is fsync'd (flushing
 * the disk's own write cache), and zeros are read back with O_DIRECT: every byte
 * of the upstream ranges, a sample of a whole-device wipe (see sampleRanges()).
 * Progress is seen on the device's own I/O counters (stall-watchdog.ts): zeroing
 * by BLKZEROOUT counts there as bytes written, as writes do.
 */
import { randomInt } from 'node:crypto';
import * as fs from 'node:fs';
import { runBlockCleaner } from './block-cleaner';
import { openDeviceExclusively } from './exclusive-open';
import type { DeviceWipe } from '../../config';
import { blockDeviceSize } from '../volume/block-device-size';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface WipeRange {
  /** Byte offset into the device. */
  readonly offset: number;
  /** Bytes to zero from there. */
  readonly length: number;
}

/** Where upstream's wipe (`upstream-ranges`) writes zeros on a device of `sizeBytes`, in ascending order. */
export function wipeRanges(sizeBytes: number): WipeRange[] {
  const ranges: WipeRange[] = [];
  for (const offset of [0, 1, 10, 100, 1000].map((g) => g * GiB)) {
    if (offset >= sizeBytes) break;
    ranges.push({ offset, length: Math.min(100 * MiB, sizeBytes - offset) });
  }
  return ranges;
}

/** How many random windows a whole-device wipe reads back, besides its fixed ones. */
const RANDOM_SAMPLES = 32;
/** Bytes of each window read back after a whole-device wipe. */
const SAMPLE_BYTES = MiB;

/**
 * Where a whole-device wipe is read back: the first and last MiB; at each of
 * upstream's offsets the first and last MiB of its range and the MiB just past it
 * (what upstream left readable); and 32 random 4 KiB-aligned MiB. Not all of it:
 * reading the whole device back would double the wipe's time (hours on a large
 * disk) to check what the kernel already answered for (each write or BLKZEROOUT
 * completed without error, then a cache flush). What a read-back can catch is
 * systematic: a device or driver that acknowledges WRITE ZEROES without doing it,
 * a wrong offset or length, a region skipped; such faults show in a sample that
 * spans the device. The tests read every byte back on real loop devices.
 */
export function sampleRanges(sizeBytes: number, random: (max: number) => number = randomInt): WipeRange[] {
  const len = Math.min(SAMPLE_BYTES, sizeBytes);
  // Whole 512-byte sectors (what every block device is made of), inside the device.
  const at = (offset: number): WipeRange => {
    const o = Math.max(0, Math.min(Math.floor(offset / 512) * 512, sizeBytes - len));
    return { offset: o, length: len };
  };
  const points = [at(0), at(sizeBytes - len)];
  for (const r of wipeRanges(sizeBytes)) points.push(at(r.offset), at(r.offset + r.length - len), at(r.offset + r.length));
  const slots = Math.floor((sizeBytes - len) / 4096);
  for (let i = 0; i < RANDOM_SAMPLES && slots > 0; i++) points.push(at(random(slots + 1) * 4096));
  const unique = new Map(points.map((r) => [r.offset, r]));
  return [...unique.values()].sort((a, b) => a.offset - b.offset);
}

/** Bytes blkdiscard zeroes per BLKZEROOUT call: a stop waits for at most one (the ioctl cannot be interrupted). */
export const ZEROOUT_STEP_BYTES = GiB;

/**
 * The program that zeroes a device with BLKZEROOUT; the device path is appended.
 * `--force`: we hold the device's exclusive claim, so blkdiscard must not ask for it
 * again; `--verbose --step`: one ioctl per step and a progress line every second.
 */
export const ZEROOUT_COMMAND: readonly string[] = ['blkdiscard', '--force', '--zeroout', '--verbose', '--step', String(ZEROOUT_STEP_BYTES)];

/** A failed zeroout whose message says BLKZEROOUT cannot be had here (rather than the device failing): fall back to writes. */
const ZEROOUT_UNAVAILABLE = /not supported|Inappropriate ioctl|Invalid argument|unrecognized option|invalid option/i;

export interface WipeOptions {
  /** How much of the device is zeroed. @default 'full' */
  readonly extent?: DeviceWipe;
  /**
   * The BLKZEROOUT program (argv; the device path is appended). Tests replace it to
   * play a kernel or util-linux without BLKZEROOUT.
   * @default ZEROOUT_COMMAND
   */
  readonly zeroOutCommand?: readonly string[];
  /** Aborting it stops the wipe between two chunks (or two BLKZEROOUT steps). */
  readonly signal?: AbortSignal;
  /** Bytes per write (rounded down to a multiple of 4 KiB). @default 8 MiB */
  readonly chunkBytes?: number;
  /** Writes (and reads) in flight at once. @default 4 */
  readonly parallel?: number;
  /** Read back and check zeros (the upstream ranges whole, a sample of a whole-device wipe). @default true */
  readonly verify?: boolean;
}

export interface WipeResult {
  readonly ok: boolean;
  readonly reason?: string;
  readonly device: string;
  readonly sizeBytes: number;
  readonly extent: DeviceWipe;
  /** What is zeroed: the whole device, or upstream's ranges. */
  readonly ranges: readonly WipeRange[];
  /** How: BLKZEROOUT (`zeroout`), or our own zero writes. */
  readonly method: 'zeroout' | 'writes';
  /** Why BLKZEROOUT was not used for a whole-device wipe. */
  readonly zeroOutUnavailable?: string;
  /** Bytes zeroed so far (by BLKZEROOUT, as blkdiscard reported them, or written). */
  readonly bytesWritten: number;
  /** What was read back and found zero. */
  readonly verified: readonly WipeRange[];
  /** Whether O_DIRECT was used (else buffered writes and fsync; verification then reads the page cache). */
  readonly direct: boolean;
  /** Time to zero (BLKZEROOUT or writes) and fsync. */
  readonly writeMs: number;
  /** Time to read back and verify (0 without verification). */
  readonly verifyMs: number;
}

interface Chunk {
  readonly position: number;
  readonly length: number;
}

/** The chunks of `ranges`, made as they are taken (a whole 20 TB disk is millions of them). */
function* chunksOf(ranges: readonly WipeRange[], chunkBytes: number): Generator<Chunk> {
  for (const r of ranges) {
    for (let done = 0; done < r.length; done += chunkBytes) {
      yield { position: r.offset + done, length: Math.min(chunkBytes, r.length - done) };
    }
  }
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
async function forEachChunk(chunks: Iterator<Chunk>, parallel: number, signal: AbortSignal | undefined,
  work: (chunk: Chunk, worker: number) => Promise<void>): Promise<void> {
  let failure: unknown;
  const worker = async (w: number): Promise<void> => {
    while (failure === undefined) {
      if (signal?.aborted) throw stopped(signal);
      const next = chunks.next();
      if (next.done) return;
      await work(next.value, w);
    }
  };
  await Promise.all(Array.from({ length: parallel }, async (_, w) => {
    try {
      await worker(w);
    } catch (e) {
      failure ??= e;
    }
  }));
  if (failure !== undefined) throw failure;
}

const stopped = (signal: AbortSignal): Error => new Error(`stopped: ${String(signal.reason ?? 'aborted')}`);

/**
 * Node cannot tell a buffer's address, and O_DIRECT needs it aligned to the
 * device's DMA alignment: find an aligned view by trying (the kernel answers
 * EINVAL for a misaligned one before any I/O). The probe reads the first 4 KiB.
 */
function findAlignedOffset(fd: number, raw: Buffer, sizeBytes: number): number | undefined {
  const length = Math.min(4096, sizeBytes);
  for (let offset = 0; offset <= 4096; offset += 16) {
    try {
      fs.readSync(fd, raw, offset, length, 0);
      return offset;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EINVAL') throw e;
    }
  }
  return undefined;
}

/** Zeroes `device` (opened exclusively) as `options.extent` says, fsyncs, and verifies. Never throws. */
export async function wipeDevice(device: string, options: WipeOptions = {}): Promise<WipeResult> {
  // A multiple of 4 KiB keeps every buffer carved from one aligned base aligned too.
  const chunkBytes = Math.max(4096, Math.floor((options.chunkBytes ?? 8 * MiB) / 4096) * 4096);
  const parallel = Math.max(1, options.parallel ?? 4);
  const extent = options.extent ?? 'full';
  let sizeBytes = 0;
  let ranges: WipeRange[] = [];
  let method: WipeResult['method'] = 'writes';
  let zeroOutUnavailable: string | undefined;
  let bytesWritten = 0;
  let verified: WipeRange[] = [];
  let direct = true;
  let writeMs = 0;
  let verifyMs = 0;
  const result = (ok: boolean, reason?: string): WipeResult => ({
    ok, reason, device, sizeBytes, extent, ranges, method, zeroOutUnavailable, bytesWritten, verified, direct, writeMs, verifyMs,
  });

  let opened = openDeviceExclusively(device, { write: true, direct: true });
  if (!opened.ok && /EINVAL/.test(opened.reason)) {
    direct = false;
    opened = openDeviceExclusively(device, { write: true });
  }
  if (!opened.ok) return result(false, opened.reason);
  const fd = opened.fd;
  try {
    sizeBytes = await blockDeviceSize(device);
    if (sizeBytes === 0) return result(false, `device "${device}" has size 0`);
    ranges = extent === 'full' ? [{ offset: 0, length: sizeBytes }] : wipeRanges(sizeBytes);

    // One zero region shared by all writes, then one read buffer per worker, all aligned alike.
    const raw = Buffer.alloc(chunkBytes * (1 + parallel) + 4096 + 16);
    let base = 0;
    if (direct) {
      const aligned = findAlignedOffset(fd, raw, sizeBytes);
      if (aligned === undefined) return result(false, `no buffer alignment accepted for O_DIRECT I/O on "${device}"`);
      base = aligned;
      // The probe read the device's first bytes into the buffer: zero them again before anything writes or compares them.
      raw.fill(0, 0, base + 4096);
    }
    const zeros = raw.subarray(base, base + chunkBytes);
    const readBuffers = Array.from({ length: parallel }, (_, w) => raw.subarray(base + chunkBytes * (w + 1), base + chunkBytes * (w + 2)));

    const started = performance.now();
    if (extent === 'full') {
      const z = await zeroOut(fd, options, (n) => (bytesWritten += n));
      if (z.ok) {
        method = 'zeroout';
        bytesWritten = sizeBytes;
      } else if (z.unavailable && !options.signal?.aborted) {
        zeroOutUnavailable = z.reason;
        bytesWritten = 0;
      } else {
        method = 'zeroout';
        return result(false, `wipe of "${device}" failed: ${options.signal?.aborted ? stopped(options.signal).message : z.reason}`);
      }
    }
    if (method === 'writes') {
      await forEachChunk(chunksOf(ranges, chunkBytes), parallel, options.signal, async (chunk) => {
        const n = await writeAsync(fd, zeros, chunk.length, chunk.position);
        if (n !== chunk.length) throw new Error(`short write at byte ${chunk.position}: ${n} of ${chunk.length}`);
        bytesWritten += n;
      });
    }
    // Also after BLKZEROOUT, which waits for the zeroing but does not flush the disk's write cache.
    fs.fsyncSync(fd);
    writeMs = performance.now() - started;

    if (options.verify !== false) {
      const verifyStarted = performance.now();
      const toRead = extent === 'full' ? sampleRanges(sizeBytes) : ranges;
      await forEachChunk(chunksOf(toRead, chunkBytes), parallel, options.signal, async (chunk, w) => {
        const buffer = readBuffers[w];
        const n = await readAsync(fd, buffer, chunk.length, chunk.position);
        if (n !== chunk.length) throw new Error(`short read at byte ${chunk.position}: ${n} of ${chunk.length}`);
        if (!buffer.subarray(0, n).equals(zeros.subarray(0, n))) {
          throw new Error(`bytes at ${chunk.position}..${chunk.position + n} do not read back as zeros`);
        }
      });
      verified = toRead;
      verifyMs = performance.now() - verifyStarted;
    }
    return result(true);
  } catch (e) {
    return result(false, `wipe of "${device}" failed: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    fs.closeSync(fd);
  }
}

type ZeroOutOutcome = { readonly ok: true } | { readonly ok: false; readonly unavailable: boolean; readonly reason: string };

/**
 * BLKZEROOUT over the whole device held open as `fd`, by blkdiscard on
 * `/proc/<our pid>/fd/<fd>` (the device we checked and claimed, whatever its
 * name now names), run as every cleaner command is: killed with this process,
 * and on abort. `onZeroed` gets the bytes of each progress line.
 */
async function zeroOut(fd: number, options: WipeOptions, onZeroed: (bytes: number) => void): Promise<ZeroOutOutcome> {
  if (options.signal?.aborted) return { ok: false, unavailable: false, reason: stopped(options.signal).message };
  const target = `/proc/${process.pid}/fd/${fd}`;
  const command = [...(options.zeroOutCommand ?? ZEROOUT_COMMAND), target];
  const errors: string[] = [];
  const r = await runBlockCleaner({
    command,
    device: target,
    timeoutMs: 0,
    signal: options.signal,
    // The wipe ran at normal priority when it was only our writes; so does its zeroout.
    lowIoPriority: false,
    // blkdiscard's messages in English, for the progress lines and the fallback's test.
    env: { LC_ALL: 'C' },
    onOutput: (line, stream) => {
      const progress = /Zero-filled (\d+) bytes/.exec(line);
      if (stream === 'stdout' && progress) onZeroed(Number(progress[1]));
      else if (stream === 'stderr' && !/Operation forced/.test(line)) errors.push(line.split(target).join('the device'));
    },
  });
  if (r.ok) return { ok: true };
  const said = errors.slice(-3).join('; ');
  if (!r.started) return { ok: false, unavailable: true, reason: r.reason ?? `${command[0]} could not start` };
  const reason = `BLKZEROOUT (${command[0]}) ${r.exitCode === null ? `was killed by ${r.signal}` : `exited with code ${r.exitCode}`}${said ? `: ${said}` : ''}`;
  return { ok: false, unavailable: r.exitCode !== null && ZEROOUT_UNAVAILABLE.test(said), reason };
}
