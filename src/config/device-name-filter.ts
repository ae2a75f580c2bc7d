/**
 * `deviceNameFilter` is a Go (RE2) regular expression matched, unanchored, against a
 * device's base name. JavaScript's syntax covers nearly all of what users write; the
 * Go spellings it lacks are translated here so a filter keeps its meaning:
 * flag groups `(?i)` (leading: RegExp flags; later: a `(?i:...)` modifier group up to
 * the end of the enclosing group, as in Go), named groups `(?P<name>...)`, `\A`/`\z`,
 * and a `]` first in a class (`[]a]`, a literal `]` in Go, an empty class in JavaScript).
 */

const FLAG_GROUP = /^\(\?([imsU]*)(?:-([imsU]*))?\)/;

function translate(filter: string): { source: string; flags: string } {
  let source = '';
  let flags = '';
  // For the top level and each open group: how many modifier groups to close at its end.
  const pendingCloses: number[] = [0];
  let i = 0;
  while (i < filter.length) {
    const c = filter[i];
    if (c === '\\') {
      const next = filter[i + 1] ?? '';
      source += next === 'A' ? '^' : next === 'z' ? '$' : c + next;
      i += 2;
    } else if (c === '[') {
      let end = i + 1;
      if (filter[end] === '^') end++;
      const first = end;
      while (end < filter.length && (filter[end] !== ']' || end === first)) end += filter[end] === '\\' ? 2 : 1;
      const body = filter.slice(i + 1, end);
      source += `[${filter[first] === ']' ? body.replace(/^(\^?)\]/, '$1\\]') : body}`;
      i = end; // the closing ']' (if any) is copied as an ordinary character
    } else if (c === '(') {
      const flagGroup = FLAG_GROUP.exec(filter.slice(i));
      if (flagGroup) {
        const [text, on = '', off] = flagGroup;
        if ((on + (off ?? '')).includes('U')) throw new SyntaxError('the U (ungreedy) flag has no JavaScript equivalent');
        if (i === 0 && off === undefined) {
          flags = [...new Set(on)].join('');
        } else {
          source += `(?${on}${off !== undefined ? `-${off}` : ''}:`;
          pendingCloses[pendingCloses.length - 1]++;
        }
        i += text.length;
      } else {
        const named = filter.startsWith('(?P<', i);
        source += named ? '(?<' : '(';
        i += named ? 4 : 1;
        pendingCloses.push(0);
      }
    } else if (c === ')') {
      source += ')'.repeat(pendingCloses.length > 1 ? pendingCloses.pop()! : 0) + ')';
      i++;
    } else {
      source += c;
      i++;
    }
  }
  source += ')'.repeat(pendingCloses[0]);
  return { source, flags };
}

/** The filter as a JavaScript RegExp; throws SyntaxError when it is not a valid expression. */
export function compileDeviceNameFilter(filter: string): RegExp {
  const { source, flags } = translate(filter);
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
