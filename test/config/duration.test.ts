import { formatGoDuration, parseGoDuration } from '../../src/config';

describe('parseGoDuration reads Go time.ParseDuration text in whole milliseconds', () => {
  test.each([
    ['0', 0],
    ['0s', 0],
    ['5s', 5_000],
    ['+5s', 5_000],
    ['5.0s', 5_000],
    ['5.6s', 5_600],
    ['5.s', 5_000],
    ['.5s', 500],
    ['1.004s', 1_004],
    ['100.00100s', 100_001],
    ['300ms', 300],
    ['13ms', 13],
    ['15m', 900_000],
    ['5m0s', 300_000],
    ['16h', 57_600_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['3h30m', 12_600_000],
    ['10.5s4m', 250_500],
    ['1h2m3s4ms5us6ns', 3_723_004],
    ['39h9m14.425s', 140_954_425],
    ['52763797000ns', 52_763],
    ['0.3333333333333333333h', 1_200_000],
    ['9223372036854775807ns', 9_223_372_036_854],
  ])('%s is %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  test.each([
    ['1500us', 1],
    ['12µs', 0],
    ['12μs', 0],
    ['999999ns', 0],
  ])('sub-millisecond precision of %s is truncated to %d ms, as Duration.Milliseconds() does', (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  test.each(['', '3', '-', 's', '.', '-.', '.s', '+.s', '1d', '5 m', ' 5m', '5m ', '1h-30m', '5M', 'five minutes', '\u0085\u0085', '9223372036854775808ns', '9223372036854775.808us', '2562048h'])(
    '%j is rejected',
    (text) => {
      expect(parseGoDuration(text)).toBeUndefined();
    },
  );

  test.each(['-5s', '-2m3.4s', '-0s'])('negative %s is rejected', (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});

describe('formatGoDuration writes Go Duration.String() text', () => {
  test.each([
    [0, '0s'],
    [1, '1ms'],
    [300, '300ms'],
    [999, '999ms'],
    [1_000, '1s'],
    [1_500, '1.5s'],
    [1_050, '1.05s'],
    [59_999, '59.999s'],
    [60_000, '1m0s'],
    [300_000, '5m0s'],
    [5_400_000, '1h30m0s'],
    [3_600_000, '1h0m0s'],
    [3_723_004, '1h2m3.004s'],
    [360_000_000, '100h0m0s'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
  });

  test.each([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('%d is not a duration it can write', (ms) => {
    expect(() => formatGoDuration(ms)).toThrow(RangeError);
  });

  test('parsing what it writes gives the same milliseconds', () => {
    for (const ms of [0, 7, 1_000, 61_001, 86_400_000, 9_223_372_036_854]) {
      expect(parseGoDuration(formatGoDuration(ms))).toBe(ms);
    }
  });
});
