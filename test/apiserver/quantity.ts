/**
 * resource.Quantity as the API server reads it: exact values (no floating
 * point), so "1Gi" and "1073741824" compare equal and "100m" is below "1". A
 * string the Go type cannot parse fails decoding (400), not validation.
 */

/** A body that cannot be decoded as the Go type; the validation entry turns it into 400. */
export class DecodeError extends Error {}

/** An exact rational value: `num / den`, `den` > 0. */
export interface Quantity {
  readonly num: bigint;
  readonly den: bigint;
}

const FORMAT = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';

const BINARY: Record<string, bigint> = { Ki: 2n ** 10n, Mi: 2n ** 20n, Gi: 2n ** 30n, Ti: 2n ** 40n, Pi: 2n ** 50n, Ei: 2n ** 60n };
const DECIMAL: Record<string, number> = { 'n': -9, 'u': -6, 'm': -3, '': 0, 'k': 3, 'M': 6, 'G': 9, 'T': 12, 'P': 15, 'E': 18 };

function scaled(num: bigint, den: bigint, exp10: number): Quantity {
  return exp10 >= 0 ? { num: num * 10n ** BigInt(exp10), den } : { num, den: den * 10n ** BigInt(-exp10) };
}

/** Parses a quantity (string or JSON number); throws DecodeError as the Go decoder would. */
export function parseQuantity(value: unknown): Quantity {
  const text = typeof value === 'number' ? String(value) : value;
  const m = typeof text === 'string' ? /^([+-]?)(\d*)(?:\.(\d*))?(.*)$/.exec(text) : null;
  const suffix = m?.[4] ?? '';
  const exponent = /^[eE]([+-]?\d+)$/.exec(suffix);
  if (!m || (!m[2] && !m[3]) || !(suffix in BINARY || suffix in DECIMAL || exponent)) {
    throw new DecodeError(`quantities must match the regular expression '${FORMAT}'`);
  }
  const fraction = m[3] ?? '';
  const sign = m[1] === '-' ? -1n : 1n;
  const digits = sign * BigInt(`${m[2]}${fraction}` || '0');
  const base = { num: digits, den: 10n ** BigInt(fraction.length) };
  if (suffix in BINARY) return { num: base.num * BINARY[suffix], den: base.den };
  return scaled(base.num, base.den, exponent ? Number(exponent[1]) : DECIMAL[suffix]);
}

/** -1, 0 or 1 as `a` is below, equal to or above `b`. */
export function compareQuantities(a: Quantity, b: Quantity): number {
  const d = a.num * b.den - b.num * a.den;
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** Whether the value is a whole number (integer resources such as pods or GPUs). */
export function isWhole(q: Quantity): boolean {
  return q.num % q.den === 0n;
}
