import { DurationMs } from './model';

/**
 * Go `time.Duration` text (what upstream's `metav1.Duration` fields accept), in
 * whole milliseconds. Parsing follows `time.ParseDuration` exactly, except that
 * negative durations are rejected (no setting of ours means anything negative)
 * and precision finer than a millisecond is truncated, as Go's
 * `Duration.Milliseconds()` does.
 */

const NANOS_PER_UNIT: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // micro sign
  ['\u03bcs', 1_000n], // Greek mu; Go accepts both spellings
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

/** Go durations are int64 nanoseconds; anything larger is an overflow error in Go. */
const MAX_NANOS = 2n ** 63n - 1n;
const NANOS_PER_MS = 1_000_000n;

/** One `<number><unit>` element, e.g. `1.5h`, `.5s`, `300ms`. */
const ELEMENT = /^(\d*)(?:\.(\d*))?([^\d.]+)/;

/** Parses a Go duration (`5m0s`, `1h30m`, `300ms`, `1.5h`, `0`); undefined if malformed or negative. */
export function parseGoDuration(text: string): DurationMs | undefined {
  let rest = text.startsWith('+') ? text.slice(1) : text;
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let nanos = 0n;
  while (rest !== '') {
    const m = ELEMENT.exec(rest);
    if (!m) return undefined;
    const [whole, intDigits, fracDigits = '', unit] = m;
    if (intDigits === '' && fracDigits === '') return undefined;
    const perUnit = NANOS_PER_UNIT.get(unit);
    if (perUnit === undefined) return undefined;
    const intPart = BigInt(intDigits || '0');
    if (intPart > MAX_NANOS / perUnit) return undefined;
    nanos += intPart * perUnit + fractionNanos(fracDigits, perUnit);
    if (nanos > MAX_NANOS) return undefined;
    rest = rest.slice(whole.length);
  }
  return Number(nanos / NANOS_PER_MS);
}

/**
 * The fraction's nanoseconds computed as Go does (digits past int64 range ignored,
 * then float64 arithmetic truncated), so `0.3333333333333333333h` is 20m as in Go.
 */
function fractionNanos(digits: string, perUnit: bigint): bigint {
  let f = 0n;
  let scale = 1n;
  for (const digit of digits) {
    if (f > MAX_NANOS / 10n) break;
    f = f * 10n + BigInt(digit);
    scale *= 10n;
  }
  return BigInt(Math.trunc(Number(f) * (Number(perUnit) / Number(scale))));
}

/** Formats whole milliseconds as Go's `Duration.String()` does: `5m0s`, `1h30m0s`, `1.5s`, `300ms`, `0s`. */
export function formatGoDuration(ms: DurationMs): string {
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new RangeError(`a duration must be a non-negative whole number of milliseconds, got ${ms}`);
  }
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  const hours = Math.floor(ms / 3_600_000);
  const minutes = Math.floor((ms % 3_600_000) / 60_000);
  const millis = ms % 60_000;
  const wholeSeconds = Math.floor(millis / 1000);
  const fraction = String(millis % 1000).padStart(3, '0').replace(/0+$/, '');
  const seconds = fraction === '' ? `${wholeSeconds}s` : `${wholeSeconds}.${fraction}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}
