/* eslint-disable no-bitwise -- device numbers are bit fields */
import { deviceNumberOf, formatDeviceNumber } from '../../../src/runtime/volume';

/** glibc's makedev, written out independently of the code under test. */
function makedev(major: number, minor: number): bigint {
  const ma = BigInt(major);
  const mi = BigInt(minor);
  return ((ma & 0xfffn) << 8n) | ((ma & ~0xfffn) << 32n) | (mi & 0xffn) | ((mi & ~0xffn) << 12n);
}

describe('deviceNumberOf', () => {
  test.each([
    [8, 16],
    [7, 3],
    [259, 0],
    [4095, 255],
    [4096, 256],
    [0x12345, 0xabcdef],
  ])('splits makedev(%d, %d) back into its parts', (major, minor) => {
    expect(deviceNumberOf(makedev(major, minor))).toEqual({ major, minor });
  });

  test('the classic sda1 encoding 0x801 is 8:1', () => {
    expect(formatDeviceNumber(deviceNumberOf(0x801n))).toBe('8:1');
  });
});
