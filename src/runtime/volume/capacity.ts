/**
 * Capacity as the Go static provisioner writes it on a PV: rounded down to a
 * unit people read easily, then printed as a binary Quantity.
 */

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/**
 * Rounds down to whole GiB when there are at least 10 of them, else to whole MiB
 * when there are at least 10 of those, else keeps the exact byte count
 * (upstream's `roundDownCapacityPretty`), so an adopted PV keeps its capacity.
 */
export function roundDownCapacity(bytes: number): number {
  for (const unit of [GiB, MiB]) {
    const units = Math.floor(bytes / unit);
    if (units >= 10) {
      return units * unit;
    }
  }
  return bytes;
}

const BINARY_SUFFIXES: ReadonlyArray<readonly [string, bigint]> = [
  ['Ei', 1024n ** 6n],
  ['Pi', 1024n ** 5n],
  ['Ti', 1024n ** 4n],
  ['Gi', 1024n ** 3n],
  ['Mi', 1024n ** 2n],
  ['Ki', 1024n],
];

/**
 * A whole number of bytes as Kubernetes prints a BinarySI Quantity: the largest
 * binary suffix that divides it exactly (`10Gi`, `975Mi`, `1048581Ki`), else the
 * plain number (`12345`).
 */
export function formatBinaryQuantity(bytes: number): string {
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    throw new RangeError(`capacity must be a whole, non-negative number of bytes, got ${bytes}`);
  }
  const value = BigInt(bytes);
  if (value !== 0n) {
    for (const [suffix, unit] of BINARY_SUFFIXES) {
      if (value % unit === 0n) {
        return `${value / unit}${suffix}`;
      }
    }
  }
  return value.toString();
}

const QUANTITY_SUFFIXES: Readonly<Record<string, number>> = {
  '': 1,
  'k': 1e3,
  'M': 1e6,
  'G': 1e9,
  'T': 1e12,
  'P': 1e15,
  'E': 1e18,
  'Ki': 2 ** 10,
  'Mi': 2 ** 20,
  'Gi': 2 ** 30,
  'Ti': 2 ** 40,
  'Pi': 2 ** 50,
  'Ei': 2 ** 60,
};

/** Bytes of a Kubernetes quantity such as `10Gi`, `975Mi`, `500G`, `12345` or `1e3`; undefined if it is not one. */
export function parseQuantity(quantity: string | undefined): number | undefined {
  const m = quantity === undefined ? null : /^([0-9]+(?:\.[0-9]+)?(?:[eE][0-9]+)?)([a-zA-Z]*)$/.exec(quantity.trim());
  if (!m || QUANTITY_SUFFIXES[m[2]] === undefined) return undefined;
  return Number(m[1]) * QUANTITY_SUFFIXES[m[2]];
}
