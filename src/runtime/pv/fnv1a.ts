/* eslint-disable no-bitwise -- FNV-1a is defined on 32-bit words */
/**
 * 32-bit FNV-1a, as Go's hash/fnv New32a computes it. The Go provisioner names
 * its PVs with it, so the same hash lets us adopt its PVs instead of duplicating them.
 */

const OFFSET_BASIS = 0x811c9dc5;
const PRIME = 0x01000193;

/** FNV-1a over `data` (a string is hashed as its UTF-8 bytes), as an unsigned 32-bit number. */
export function fnv1a32(data: string | Uint8Array): number {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let hash = OFFSET_BASIS;
  for (const byte of bytes) {
    hash ^= byte;
    hash = Math.imul(hash, PRIME) >>> 0;
  }
  return hash >>> 0;
}
