import { Re2SyntaxError } from './re2-syntax';
import { compileRe2 } from './re2-to-regexp';

/**
 * `deviceNameFilter` is a Go (RE2) regular expression matched, unanchored, against a
 * device's base name (upstream calls `MatchString`). It is compiled through the RE2
 * translator, so it means what it meant to Go; the empty filter matches every device.
 * Messages show the user's pattern, never the translation.
 */

/** The filter as a RegExp whose `test` answers as Go's `MatchString`; throws Re2SyntaxError with Go's message. */
export function compileDeviceNameFilter(filter: string): RegExp {
  return compileRe2(filter);
}

/** Why Go would not compile the filter, or undefined. */
export function deviceNameFilterProblem(filter: string): string | undefined {
  try {
    compileRe2(filter);
    return undefined;
  } catch (e) {
    if (!(e instanceof Re2SyntaxError)) throw e;
    return `${JSON.stringify(filter)} is not a valid regular expression: ${e.message}`;
  }
}
