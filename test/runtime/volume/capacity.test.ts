import { formatBinaryQuantity, parseQuantity, roundDownCapacity } from '../../../src/runtime/volume';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

describe('roundDownCapacity (upstream roundDownCapacityPretty)', () => {
  test.each([
    ['10 GiB + 5 B rounds down to 10 GiB', 10 * GiB + 5, 10 * GiB],
    ['13 GiB - 1 B rounds down to 12 GiB', 13 * GiB - 1, 12 * GiB],
    ['10000 MiB - 1 B rounds down to 9999 MiB', 10000 * MiB - 1, 9999 * MiB],
    ['12345 B stays exact', 12345, 12345],
    ['10 MiB - 1 B stays exact (fewer than 10 MiB)', 10 * MiB - 1, 10 * MiB - 1],
    ['exactly 10 MiB stays 10 MiB', 10 * MiB, 10 * MiB],
    ['10 GiB - 1 B rounds to whole MiB (10239 MiB)', 10 * GiB - 1, 10239 * MiB],
    ['0 stays 0', 0, 0],
  ])('%s', (_name, bytes, expected) => {
    expect(roundDownCapacity(bytes)).toBe(expected);
  });
});

describe('formatBinaryQuantity', () => {
  test.each([
    [10 * GiB, '10Gi'],
    [12 * GiB, '12Gi'],
    [9999 * MiB, '9999Mi'],
    [975 * MiB, '975Mi'],
    [12345, '12345'],
    [GiB + 5 * KiB, '1048581Ki'],
    [1536, '1536'],
    [2048, '2Ki'],
    [10 * 1024 * GiB, '10Ti'],
    [0, '0'],
  ])('%d bytes is %s', (bytes, expected) => {
    expect(formatBinaryQuantity(bytes)).toBe(expected);
  });

  test('refuses a fractional or negative byte count', () => {
    expect(() => formatBinaryQuantity(1.5)).toThrow(/whole, non-negative/);
    expect(() => formatBinaryQuantity(-1)).toThrow(/whole, non-negative/);
  });
});

describe('parseQuantity', () => {
  test.each([
    ['10Gi', 10 * 2 ** 30],
    ['975Mi', 975 * 2 ** 20],
    ['500G', 500e9],
    ['12345', 12345],
    ['1e3', 1000],
    ['1.5Ki', 1536],
  ])('reads %s', (q, bytes) => expect(parseQuantity(q)).toBe(bytes));

  test('reads back what formatBinaryQuantity writes', () => {
    for (const bytes of [12345, 10 * 2 ** 20, 12 * 2 ** 30]) expect(parseQuantity(formatBinaryQuantity(bytes))).toBe(bytes);
  });

  test.each(['', 'ten', '10Xi', '-1Gi'])('refuses %j', (q) => expect(parseQuantity(q)).toBeUndefined());
});
