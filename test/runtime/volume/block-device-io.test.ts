import { parseBlockDeviceStat } from '../../../src/runtime/volume/block-device-io';

describe('a block device\'s I/O counters', () => {
  test('are read from the 17 fields of a current kernel, sectors counted as 512 bytes', () => {
    const line = '    2728        5  1049026     1955     7237   346367  4475010    11350        0     4860    14993       28        0  4980776       14      247     1673\n';
    expect(parseBlockDeviceStat(line)).toEqual({
      readBytes: 1049026 * 512, writtenBytes: 4475010 * 512, discardedBytes: 4980776 * 512, busyMs: 4860,
    });
  });

  test('count no discards on a kernel that writes only the first 11 fields', () => {
    expect(parseBlockDeviceStat('1 0 8 0 2 0 16 0 0 3 3')).toEqual({ readBytes: 4096, writtenBytes: 8192, discardedBytes: 0, busyMs: 3 });
  });

  test('are unknown when the file is short or not numbers', () => {
    expect(parseBlockDeviceStat('1 2 3')).toBeUndefined();
    expect(parseBlockDeviceStat('a b c d e f g h i j k')).toBeUndefined();
  });
});
