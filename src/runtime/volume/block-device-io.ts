/**
 * A block device's I/O counters, as the kernel keeps them in
 * `/sys/dev/block/<major>:<minor>/stat` (Documentation/block/stat.rst). They count
 * what reached the device, whoever sent it: a cleaner in this process, in a child,
 * or in a cleanup Job's container on the same node.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DeviceNumber, formatDeviceNumber } from './device-number';

/** sysfs counts in 512-byte sectors whatever the device's logical sector size. */
const SECTOR_BYTES = 512;

export interface BlockDeviceIo {
  readonly readBytes: number;
  readonly writtenBytes: number;
  /** Bytes discarded (TRIM/UNMAP, what blkdiscard does); 0 on kernels before 4.18. */
  readonly discardedBytes: number;
  /** Milliseconds the device had requests in flight (io_ticks): grows during one long request too. */
  readonly busyMs: number;
}

/** Parses the stat file's fields; undefined when it does not have the 11 fields every kernel writes. */
export function parseBlockDeviceStat(text: string): BlockDeviceIo | undefined {
  const fields = text.trim().split(/\s+/).map(Number);
  if (fields.length < 11 || fields.some((n) => !Number.isSafeInteger(n) || n < 0)) return undefined;
  return {
    readBytes: fields[2] * SECTOR_BYTES,
    writtenBytes: fields[6] * SECTOR_BYTES,
    discardedBytes: (fields[13] ?? 0) * SECTOR_BYTES,
    busyMs: fields[9],
  };
}

/** The device's counters now. Throws with a message naming the file when sysfs does not know the device. */
export async function readBlockDeviceIo(device: DeviceNumber, sysfsRoot = '/sys'): Promise<BlockDeviceIo> {
  const file = path.join(sysfsRoot, 'dev', 'block', formatDeviceNumber(device), 'stat');
  const text = await fs.promises.readFile(file, 'utf8');
  const io = parseBlockDeviceStat(text);
  if (!io) throw new Error(`unexpected content ${JSON.stringify(text.trim())} in ${file}`);
  return io;
}
