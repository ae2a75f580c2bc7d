import { detectPartitionTable } from '../../../src/runtime/volume';

function blankHead(): Buffer {
  return Buffer.alloc(8192);
}

function withMbrEntry(head: Buffer, entry: { boot?: number; type: number; sectors: number }): Buffer {
  head[446] = entry.boot ?? 0;
  head[446 + 4] = entry.type;
  head.writeUInt32LE(2048, 446 + 8);
  head.writeUInt32LE(entry.sectors, 446 + 12);
  head[510] = 0x55;
  head[511] = 0xaa;
  return head;
}

describe('detectPartitionTable', () => {
  test('a zeroed head has no partition table', () => {
    expect(detectPartitionTable(blankHead())).toBeUndefined();
  });

  test('an MBR with a Linux partition entry is a dos table at 0x1fe', () => {
    expect(detectPartitionTable(withMbrEntry(blankHead(), { type: 0x83, sectors: 1000 }))).toEqual({
      type: 'dos',
      usage: 'partition-table',
      offset: 0x1fe,
    });
  });

  test('0x55AA without any plausible entry (a bare boot sector) is not a partition table', () => {
    const head = blankHead();
    head[510] = 0x55;
    head[511] = 0xaa;
    expect(detectPartitionTable(head)).toBeUndefined();
  });

  test('an entry with an impossible boot flag is not plausible', () => {
    expect(detectPartitionTable(withMbrEntry(blankHead(), { boot: 0x12, type: 0x83, sectors: 1000 }))).toBeUndefined();
  });

  test('"EFI PART" at LBA 1 of a 512-byte-sector disk is a GPT', () => {
    const head = withMbrEntry(blankHead(), { type: 0xee, sectors: 1000 });
    head.write('EFI PART', 512, 'latin1');
    expect(detectPartitionTable(head)).toEqual({ type: 'gpt', usage: 'partition-table', offset: 512 });
  });

  test('"EFI PART" at LBA 1 of a 4 KiB-sector disk is a GPT', () => {
    const head = blankHead();
    head.write('EFI PART', 4096, 'latin1');
    expect(detectPartitionTable(head)).toEqual({ type: 'gpt', usage: 'partition-table', offset: 4096 });
  });

  test('a protective MBR without a GPT header is reported as PMBR', () => {
    expect(detectPartitionTable(withMbrEntry(blankHead(), { type: 0xee, sectors: 1000 }))?.type).toBe('PMBR');
  });

  test('a head shorter than one sector is read without error', () => {
    expect(detectPartitionTable(Buffer.alloc(100))).toBeUndefined();
  });
});
