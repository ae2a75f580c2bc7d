/**
 * Does a device hold data? The device dialect must never wipe or offer a disk
 * that carries a partition table or a filesystem/RAID/LVM/swap/BlueStore
 * signature unless told to. Two independent looks, combined:
 * - our own read of the partition-table sectors (MBR, GPT), and
 * - `wipefs --no-act` (libblkid), for every superblock libblkid knows.
 * When wipefs cannot run, the answer is `unknown`, never `blank`: not knowing
 * must not be mistaken for "safe to wipe".
 */
import * as fs from 'node:fs';
import { detectPartitionTable, PARTITION_TABLE_PROBE_BYTES } from './partition-table';
import { describeSignatures, type DeviceSignature } from './signature';
import { runWipefs, type WipefsOptions } from './wipefs';

export type SignatureProbe =
  | { readonly state: 'blank'; readonly signatures: readonly [] }
  | { readonly state: 'holds-data'; readonly signatures: readonly DeviceSignature[] }
  /** We could not tell; `signatures` holds what we did find (maybe none). Treat as holding data. */
  | { readonly state: 'unknown'; readonly signatures: readonly DeviceSignature[]; readonly reason: string };

/** Probes the block device at `devicePath` (a node or a symlink to one). */
export async function probeSignatures(devicePath: string, options: WipefsOptions = {}): Promise<SignatureProbe> {
  const found: DeviceSignature[] = [];
  const problems: string[] = [];

  try {
    const table = detectPartitionTable(await readHead(devicePath));
    if (table) found.push(table);
  } catch (error) {
    problems.push(`cannot read the first ${PARTITION_TABLE_PROBE_BYTES} bytes of "${devicePath}": ${(error as Error).message}`);
  }

  try {
    for (const signature of await runWipefs(devicePath, options)) {
      if (!found.some((s) => s.type === signature.type && s.offset === signature.offset)) {
        found.push(signature);
      }
    }
  } catch (error) {
    problems.push((error as Error).message);
  }

  found.sort((a, b) => a.offset - b.offset);
  if (problems.length > 0) {
    return { state: 'unknown', signatures: found, reason: problems.join('; ') };
  }
  return found.length === 0 ? { state: 'blank', signatures: [] } : { state: 'holds-data', signatures: found };
}

/** For Events and `plan`: `blank`, `holds data: ext4 filesystem at 0x438`, `unknown (...)`. */
export function describeProbe(probe: SignatureProbe): string {
  switch (probe.state) {
    case 'blank':
      return 'blank';
    case 'holds-data':
      return `holds data: ${describeSignatures(probe.signatures)}`;
    case 'unknown':
      return probe.signatures.length > 0
        ? `holds data: ${describeSignatures(probe.signatures)} (and the probe was incomplete: ${probe.reason})`
        : `unknown, treated as holding data: ${probe.reason}`;
  }
}

async function readHead(devicePath: string): Promise<Buffer> {
  const handle = await fs.promises.open(devicePath, fs.constants.O_RDONLY);
  try {
    const buffer = Buffer.alloc(PARTITION_TABLE_PROBE_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
