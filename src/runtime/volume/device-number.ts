/* eslint-disable no-bitwise -- device numbers are bit fields */
/** A device number split as glibc's major()/minor() do (Node only gives st_rdev). */
export interface DeviceNumber {
  readonly major: number;
  readonly minor: number;
}

/** Splits st_rdev into major and minor (the 64-bit Linux encoding). */
export function deviceNumberOf(rdev: bigint): DeviceNumber {
  const major = ((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & 0xfffff000n);
  const minor = (rdev & 0xffn) | ((rdev >> 12n) & 0xffffff00n);
  return { major: Number(major), minor: Number(minor) };
}

/** `8:16`, as /sys/dev/block names devices. */
export function formatDeviceNumber(n: DeviceNumber): string {
  return `${n.major}:${n.minor}`;
}
