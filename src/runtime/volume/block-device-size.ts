/**
 * Size of a block device in bytes. fstat reports 0 for devices and Node cannot
 * issue BLKGETSIZE64, so we read the kernel's own figure from sysfs, which works
 * for every block device (disks, partitions, loop devices) and through symlinks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { deviceNumberOf, formatDeviceNumber } from './device-number';

/** sysfs counts in 512-byte sectors whatever the device's logical sector size. */
const SYSFS_SECTOR_BYTES = 512;

/**
 * Bytes in the block device at `devicePath` (a device node or a symlink to one),
 * from `/sys/dev/block/<major>:<minor>/size`. Throws with a message naming the
 * path when it is not a block device or sysfs does not know it.
 */
export async function blockDeviceSize(devicePath: string, sysfsRoot = '/sys'): Promise<number> {
  const stats = await fs.promises.stat(devicePath, { bigint: true });
  if (!stats.isBlockDevice()) {
    throw new Error(`"${devicePath}" is not a block device`);
  }
  const sizeFile = path.join(sysfsRoot, 'dev', 'block', formatDeviceNumber(deviceNumberOf(stats.rdev)), 'size');
  let text: string;
  try {
    text = await fs.promises.readFile(sizeFile, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the size of block device "${devicePath}" from ${sizeFile}: ${(error as Error).message}`);
  }
  const sectors = Number(text.trim());
  if (!Number.isSafeInteger(sectors) || sectors < 0) {
    throw new Error(`unexpected size ${JSON.stringify(text.trim())} in ${sizeFile} for block device "${devicePath}"`);
  }
  return sectors * SYSFS_SECTOR_BYTES;
}
