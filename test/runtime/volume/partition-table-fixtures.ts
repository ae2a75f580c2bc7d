/**
 * Writes real partition tables into disk images or devices, byte by byte, so the
 * tests need neither sfdisk nor sgdisk (often missing) and libblkid checks them
 * exactly as it checks a disk partitioned by those tools (CRCs included).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { crc32 } from 'node:zlib';

const SECTOR = 512;
const ENTRY_COUNT = 128;
const ENTRY_BYTES = 128;
const ENTRY_SECTORS = (ENTRY_COUNT * ENTRY_BYTES) / SECTOR;
const LINUX_FILESYSTEM_TYPE = '0FC63DAF-8483-4772-8E79-3D69D8477DE4';

/** A GUID in GPT's on-disk byte order (first three fields little-endian). */
function guidBytes(guid: string): Buffer {
  const hex = guid.replace(/-/g, '');
  const b = Buffer.from(hex, 'hex');
  return Buffer.concat([
    Buffer.from(b.subarray(0, 4)).reverse(),
    Buffer.from(b.subarray(4, 6)).reverse(),
    Buffer.from(b.subarray(6, 8)).reverse(),
    b.subarray(8),
  ]);
}

function mbrWithEntry(type: number, startLba: number, sectors: number): Buffer {
  const mbr = Buffer.alloc(SECTOR);
  const entry = 446;
  mbr[entry] = 0x00;
  mbr[entry + 4] = type;
  mbr.writeUInt32LE(startLba, entry + 8);
  mbr.writeUInt32LE(sectors, entry + 12);
  mbr[510] = 0x55;
  mbr[511] = 0xaa;
  return mbr;
}

function gptHeader(current: number, backup: number, entriesLba: number, totalSectors: number, diskGuid: Buffer, entriesCrc: number): Buffer {
  const h = Buffer.alloc(SECTOR);
  h.write('EFI PART', 0, 'latin1');
  h.writeUInt32LE(0x00010000, 8);
  h.writeUInt32LE(92, 12);
  h.writeBigUInt64LE(BigInt(current), 24);
  h.writeBigUInt64LE(BigInt(backup), 32);
  h.writeBigUInt64LE(BigInt(2 + ENTRY_SECTORS), 40);
  h.writeBigUInt64LE(BigInt(totalSectors - 2 - ENTRY_SECTORS), 48);
  diskGuid.copy(h, 56);
  h.writeBigUInt64LE(BigInt(entriesLba), 72);
  h.writeUInt32LE(ENTRY_COUNT, 80);
  h.writeUInt32LE(ENTRY_BYTES, 84);
  h.writeUInt32LE(entriesCrc, 88);
  h.writeUInt32LE(crc32(h.subarray(0, 92)), 16);
  return h;
}

/** Writes a GPT with one Linux partition (1 MiB to 1 MiB before the end) to `target` of `sizeBytes`. */
export function writeGpt(target: string, sizeBytes: number): void {
  const sectors = Math.floor(sizeBytes / SECTOR);
  const entries = Buffer.alloc(ENTRY_COUNT * ENTRY_BYTES);
  guidBytes(LINUX_FILESYSTEM_TYPE).copy(entries, 0);
  randomBytes(16).copy(entries, 16);
  entries.writeBigUInt64LE(2048n, 32);
  entries.writeBigUInt64LE(BigInt(sectors - 2048 - 1), 40);
  entries.write('data', 56, 'utf16le');
  const entriesCrc = crc32(entries);
  const diskGuid = randomBytes(16);

  const fd = fs.openSync(target, 'r+');
  try {
    const write = (buffer: Buffer, lba: number) => fs.writeSync(fd, buffer, 0, buffer.length, lba * SECTOR);
    write(mbrWithEntry(0xee, 1, Math.min(sectors - 1, 0xffffffff)), 0);
    write(gptHeader(1, sectors - 1, 2, sectors, diskGuid, entriesCrc), 1);
    write(entries, 2);
    write(entries, sectors - 1 - ENTRY_SECTORS);
    write(gptHeader(sectors - 1, 1, sectors - 1 - ENTRY_SECTORS, sectors, diskGuid, entriesCrc), sectors - 1);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes an MBR ("dos") partition table with one Linux partition from 1 MiB to the end. */
export function writeMbr(target: string, sizeBytes: number): void {
  const sectors = Math.floor(sizeBytes / SECTOR);
  const fd = fs.openSync(target, 'r+');
  try {
    fs.writeSync(fd, mbrWithEntry(0x83, 2048, sectors - 2048), 0, SECTOR, 0);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
