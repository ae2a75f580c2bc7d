/** Something on a device that says it holds data: a partition table, a filesystem, a RAID or LVM member... */
export interface DeviceSignature {
  /** libblkid's name for it: `gpt`, `dos`, `PMBR`, `ext4`, `xfs`, `swap`, `LVM2_member`, `linux_raid_member`, `ceph_bluestore`. */
  readonly type: string;
  /** libblkid's class: `partition-table`, `filesystem`, `raid`, `crypto`, `other`. */
  readonly usage: string;
  /** Byte offset of the magic on the device. */
  readonly offset: number;
  readonly label?: string;
  readonly uuid?: string;
}

/** `gpt partition-table at 0x200, ext4 filesystem at 0x438 (label "data")`. */
export function describeSignatures(signatures: readonly DeviceSignature[]): string {
  if (signatures.length === 0) {
    return 'no signature';
  }
  return signatures
    .map((s) => {
      const label = s.label ? ` (label ${JSON.stringify(s.label)})` : '';
      return `${s.type} ${s.usage} at 0x${s.offset.toString(16)}${label}`;
    })
    .join(', ');
}
