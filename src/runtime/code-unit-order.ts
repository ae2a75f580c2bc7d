/**
 * Orders strings by UTF-16 code units, as `Array.prototype.sort` does by default
 * (and Go's sort.Strings does for ASCII names). Used instead of `localeCompare`,
 * whose order depends on the image's locale and whose first call loads ICU's
 * collation data: 20 ms, and 3 to 4 MiB resident for the life of the process.
 */
export function codeUnitOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
