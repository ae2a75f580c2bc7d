/**
 * Recognises a partition table in the first sectors of a device by reading the
 * on-disk structures ourselves, so a partitioned disk is recognised even where
 * wipefs is missing or older than the table.
 */
import type { DeviceSignature } from './signature';

/** How much of the device to read: LBA 1 of a 4 KiB-sector disk ends at 8 KiB. */
export const PARTITION_TABLE_PROBE_BYTES = 8192;

const GPT_MAGIC = Buffer.from('EFI PART', 'latin1');
/** LBA 1 for 512-byte and for 4 KiB logical sectors. */
const GPT_HEADER_OFFSETS = [512, 4096];

const MBR_SIGNATURE_OFFSET = 510;
const MBR_ENTRIES_OFFSET = 446;
const MBR_ENTRY_BYTES = 16;
const MBR_PROTECTIVE_TYPE = 0xee;

/**
 * The partition table described by `head` (the device's first bytes), if any:
 * GPT when `EFI PART` is at LBA 1; otherwise an MBR when the 0x55AA boot
 * signature is at 510 and at least one of the four entries is plausible (boot
 * flag 0x00 or 0x80, a type, a length), which tells a partition table from a
 * bare boot sector. An MBR whose only entry is GPT's protective one, without a
 * GPT header, is reported as `PMBR`.
 */
export function detectPartitionTable(head: Buffer): DeviceSignature | undefined {
  for (const offset of GPT_HEADER_OFFSETS) {
    if (head.length >= offset + GPT_MAGIC.length && head.subarray(offset, offset + GPT_MAGIC.length).equals(GPT_MAGIC)) {
      return { type: 'gpt', usage: 'partition-table', offset };
    }
  }
  if (head.length < MBR_SIGNATURE_OFFSET + 2 || head[MBR_SIGNATURE_OFFSET] !== 0x55 || head[MBR_SIGNATURE_OFFSET + 1] !== 0xaa) {
    return undefined;
  }
  const types = [0, 1, 2, 3]
    .map((i) => head.subarray(MBR_ENTRIES_OFFSET + i * MBR_ENTRY_BYTES, MBR_ENTRIES_OFFSET + (i + 1) * MBR_ENTRY_BYTES))
    .filter((entry) => (entry[0] === 0x00 || entry[0] === 0x80) && entry[4] !== 0 && entry.readUInt32LE(12) !== 0)
    .map((entry) => entry[4]);
  if (types.length === 0) {
    return undefined;
  }
  const type = types.every((t) => t === MBR_PROTECTIVE_TYPE) ? 'PMBR' : 'dos';
  return { type, usage: 'partition-table', offset: MBR_SIGNATURE_OFFSET };
}
