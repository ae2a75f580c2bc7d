/**
 * spf13/cast's ToDuration for strings (v1.10), which viper applies to the device
 * provisioner's LP_* durations: "ns" appended when none of n, s, u, µ, m, h
 * appears, time.ParseDuration otherwise, and 0 for anything it cannot parse.
 */
import { castDuration } from '../../../src/runtime/cli/cast-duration';

test.each([
  ['5m', 300_000, false],
  ['1h30m', 5_400_000, false],
  ['1500ms', 1_500, false],
  // No unit: nanoseconds. Sub-millisecond positives are kept positive (1 ms).
  ['300', 1, true],
  ['1.5', 1, true],
  ['0', 0, true],
  // A unit character anywhere sends the text to time.ParseDuration as it is.
  ['10 s', 0, false],
  ['soon', 0, false],
  ['5x', 0, true],
  ['-5m', -300_000, false],
  // The micro sign counts as a unit character; the Greek mu does not.
  ['5\u00b5s', 1, false],
])('%j reads as %d ms (ns appended: %s)', (text, ms, appendedNs) => {
  expect(castDuration(text)).toEqual(expect.objectContaining({ ms, appendedNs }));
});
