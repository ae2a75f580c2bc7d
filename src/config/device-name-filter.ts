/**
 * `deviceNameFilter` is a Go (RE2) regular expression matched, unanchored, against a
 * device's base name. JavaScript's syntax covers nearly all of it; the two Go spellings
 * users write that JavaScript lacks are translated: a leading flag group such as
 * `(?i)` and named groups `(?P<name>...)`.
 */

const LEADING_FLAGS = /^\(\?([imsU]+)\)/;

/** The filter as a JavaScript RegExp; throws SyntaxError when it is not a valid expression. */
export function compileDeviceNameFilter(filter: string): RegExp {
  let source = filter.replace(/\(\?P</g, '(?<');
  let flags = '';
  const leading = LEADING_FLAGS.exec(source);
  if (leading) {
    if (leading[1].includes('U')) throw new SyntaxError('the U (ungreedy) flag has no JavaScript equivalent');
    flags = [...new Set(leading[1])].join('');
    source = source.slice(leading[0].length);
  }
  return new RegExp(source, flags);
}

/** Why the filter is not a valid regular expression, or undefined. */
export function deviceNameFilterProblem(filter: string): string | undefined {
  try {
    compileDeviceNameFilter(filter);
    return undefined;
  } catch (e) {
    const reason = (e as Error).message.replace(/^Invalid regular expression: \/.*\/[a-z]*: /s, '');
    return `${JSON.stringify(filter)} is not a valid regular expression: ${reason}`;
  }
}
