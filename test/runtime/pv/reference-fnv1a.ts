/* eslint-disable no-bitwise -- FNV-1a's XOR step */
/** FNV-1a written from its definition with BigInt, independent of the implementation's 32-bit tricks. */
export function referenceFnv1a32(data: string | Uint8Array): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let hash = 2166136261n;
  for (const byte of bytes) {
    hash = ((hash ^ BigInt(byte)) * 16777619n) % 2n ** 32n;
  }
  return Number(hash);
}
