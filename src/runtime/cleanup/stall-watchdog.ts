/**
 * The stall watchdog of a device cleanup. A cleaner may take as long as the disk
 * needs (`shred.sh 2` on a large disk runs for days; a wall-clock timeout would kill
 * it and start it over for ever), but it may not sit idle: while it runs, the
 * device's I/O counters are sampled, and when none of them moved for `stallMs` the
 * cleaner is stopped and the cleanup fails, to be retried after the backoff.
 *
 * The counters are the device's own (volume/block-device-io.ts), so they see a
 * cleaner's children and a cleanup Job's container as well as this process, and a
 * long discard or flush (one request in flight) counts as progress. The bytes
 * written are reported as they grow: that is the cleanup's progress metric.
 */
import { BlockDeviceIo, DeviceNumber, readBlockDeviceIo } from '../volume';

export interface StallWatchOptions {
  readonly device: DeviceNumber;
  /** No I/O for this long stops the cleaner. 0 = never (progress is still reported). */
  readonly stallMs: number;
  /** The cleanup's own signal (timeout, shutdown): the watch's signal follows it. */
  readonly signal?: AbortSignal;
  /** Bytes written to the device since the last call. */
  readonly onWritten?: (bytes: number) => void;
}

export interface StallWatch {
  /** Give this to the cleaner: aborted when the cleanup's signal is, or when the device stalls. */
  readonly signal: AbortSignal;
  /** Why the cleaner was stopped for stalling, once it was. */
  stalled(): string | undefined;
  /** Stops sampling after one last sample (so the final bytes are reported). */
  stop(): Promise<void>;
}

/** The abort reason of a cleaner stopped for stalling (a Job is then deleted; at shutdown it is left to finish). */
export class CleanerStalled extends Error {}

/** Whether the device did anything between two samples. */
export function ioProgressed(before: BlockDeviceIo, after: BlockDeviceIo): boolean {
  return after.writtenBytes !== before.writtenBytes || after.readBytes !== before.readBytes
    || after.discardedBytes !== before.discardedBytes || after.busyMs !== before.busyMs;
}

/** How often to sample: ten samples per stall period, between 100 ms and 5 s. */
export function sampleIntervalMs(stallMs: number): number {
  return stallMs > 0 ? Math.min(5_000, Math.max(100, Math.floor(stallMs / 10))) : 5_000;
}

/** Starts watching `device`; call stop() when the cleaner is done. */
export async function watchForStall(options: StallWatchOptions): Promise<StallWatch> {
  const controller = new AbortController();
  const follow = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener('abort', follow, { once: true });
  if (options.signal?.aborted) follow();

  let last = await readBlockDeviceIo(options.device);
  let lastProgressAt = performance.now();
  let stalledReason: string | undefined;
  let stopped = false;
  const sample = async (): Promise<void> => {
    const now = await readBlockDeviceIo(options.device);
    if (now.writtenBytes > last.writtenBytes) options.onWritten?.(now.writtenBytes - last.writtenBytes);
    if (ioProgressed(last, now)) lastProgressAt = performance.now();
    last = now;
    const idleMs = performance.now() - lastProgressAt;
    if (!stopped && options.stallMs > 0 && idleMs >= options.stallMs && !stalledReason) {
      stalledReason = `no I/O reached the device for ${Math.round(idleMs / 1000)} s (cleanupStallTimeout ${Math.round(options.stallMs / 1000)} s)`;
      controller.abort(new CleanerStalled(stalledReason));
    }
  };

  // One sample at a time: the next is scheduled when the previous has finished.
  let timer: NodeJS.Timeout | undefined;
  let pending: Promise<void> = Promise.resolve();
  const schedule = (): void => {
    timer = setTimeout(() => {
      pending = sample().catch(() => {
        // The device went away: the cleaner fails on its own.
      }).then(() => {
        if (!stopped) schedule();
      });
    }, sampleIntervalMs(options.stallMs));
  };
  schedule();

  return {
    signal: controller.signal,
    stalled: () => stalledReason,
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await pending;
      options.signal?.removeEventListener('abort', follow);
      await sample().catch(() => undefined);
    },
  };
}
