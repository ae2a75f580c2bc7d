import { Re2Assertion, Re2ClassItem, Re2Node, parseRe2 } from './re2-syntax';

/**
 * RE2 (Go's regexp) to a JavaScript RegExp of the same meaning. The pattern is parsed as
 * Go parses it (./re2-syntax: Go's errors for what Go rejects, which covers every Perl
 * construct RE2 lacks), then written out from the tree, so no RE2 spelling reaches
 * JavaScript's parser to be read another way. The RegExp uses the `v` flag (Unicode
 * sets): like `u` it matches code points and knows `\p{...}`, and unlike `u` it negates a
 * class after case folding, as Go does (`(?i)\P{Lu}` matches no letter that has an
 * upper-case form).
 *
 * | RE2 (Go)                          | JavaScript written                        | why                                              |
 * |-----------------------------------|-------------------------------------------|--------------------------------------------------|
 * | `(?i)` `(?i:x)` `(?-i)`           | `(?i:...)` around each affected class and | no global `i`, which would change `\b`           |
 * |                                   | run of characters                         |                                                  |
 * | `(?m)` `^` / `$`                  | `(?<![^\n])` / `(?![^\n])`                | JS `m` also breaks lines at \r, U+2028, U+2029   |
 * | `^` `$` `\A` `\z` (no `m`)        | `^` `$`                                   | text edges; RE2 `$` is not before a final \n     |
 * | `(?s)` `.` / `.`                  | `[^]` / `[^\n]`                           | JS `.` also stops at \r, U+2028, U+2029          |
 * | `(?U)`                            | greediness of each quantifier swapped     | no JS equivalent                                 |
 * | `x{n,m}` etc.                     | the same, the operand grouped `(?:...)`   | counts > 1000 rejected as Go does                |
 * | `\d` `\s` `\w` `[[:alpha:]]` ...  | explicit ASCII ranges                     | RE2's are ASCII; JS `\s` is Unicode white space  |
 * | `\D` `[[:^alpha:]]` in a class    | a nested negated class `[[^A-Za-z]x]`     | `v`-flag class nesting                           |
 * | `\pL` `\p{Greek}` `\p{^L}` `\PL`  | `\p{L}` `\p{Script=Greek}` `\P{L}`        | names resolved as Go 1.25 resolves them          |
 * | `\b` `\B`                         | `\b` `\B` outside any `(?i:)`             | ASCII word characters in both                    |
 * | `\Q...\E` `\x{61}` `\x61` `\141`  | the characters, escaped as JS needs       | literal text                                     |
 * | `(?P<n>x)` `(?<n>x)` `(x)`        | `x`, as `(?:x)` where grouping is needed  | captures do not change whether a name matches    |
 * | `\C` `\1` `(?=` `(?<=` `(?>` `\Z` | rejected with Go's error                  | RE2 has no such syntax                           |
 *
 * Matching stays leftmost-first, as in Go; `MatchString`'s answer never depends on
 * greediness. Two differences remain: Unicode tables are Node's (characters added after
 * Unicode 15.0, Go 1.25's version, may be classed differently), and JavaScript
 * backtracks, so nested quantifiers such as `(a+)+$` can take exponential time on a
 * long non-matching text where RE2 takes linear time.
 */

/** The RE2 pattern as a RegExp; `test` then answers as Go's `MatchString` (an unanchored search). Throws Re2SyntaxError. */
export function compileRe2(pattern: string): RegExp {
  return new RegExp(emit(parseRe2(pattern), true), 'v');
}

const ASSERTIONS: Readonly<Record<Re2Assertion, string>> = {
  beginText: '^',
  endText: '$',
  beginLine: '(?<![^\\n])',
  endLine: '(?![^\\n])',
  wordBoundary: '\\b',
  notWordBoundary: '\\B',
};

function emit(node: Re2Node, root = false): string {
  switch (node.op) {
    case 'empty': return '';
    case 'literal': return foldable(literal(node.codePoint), node.foldCase);
    case 'class': return foldable(`[${node.negated ? '^' : ''}${node.items.map(classItem).join('')}]`, node.foldCase);
    case 'anyChar': return node.matchesNewline ? '[^]' : '[^\\n]';
    case 'assert': return ASSERTIONS[node.at];
    case 'concat': return concat(node.subs);
    case 'alternate': {
      const branches = node.subs.map((sub) => emit(sub)).join('|');
      return root ? branches : `(?:${branches})`;
    }
    case 'repeat': return `${operand(node.sub)}${quantifier(node.min, node.max)}${node.greedy ? '' : '?'}`;
  }
}

/** A sequence, with each run of case-folded characters under one `(?i:...)`. */
function concat(subs: readonly Re2Node[]): string {
  let source = '';
  let folded = '';
  for (const sub of subs) {
    if (sub.op === 'literal' && sub.foldCase) {
      folded += literal(sub.codePoint);
      continue;
    }
    source += foldable(folded, folded !== '') + emit(sub);
    folded = '';
  }
  return source + foldable(folded, folded !== '');
}

/** The sub-expression of a quantifier, grouped unless it is already one character, class or group. */
function operand(sub: Re2Node): string {
  const source = emit(sub);
  const single = sub.op === 'literal' || sub.op === 'class' || sub.op === 'anyChar' || sub.op === 'alternate';
  return single ? source : `(?:${source})`;
}

function quantifier(min: number, max: number): string {
  if (max < 0) return min === 0 ? '*' : min === 1 ? '+' : `{${min},}`;
  if (min === 0 && max === 1) return '?';
  return min === max ? `{${min}}` : `{${min},${max}}`;
}

function foldable(source: string, foldCase: boolean): string {
  return foldCase ? `(?i:${source})` : source;
}

/** A character outside a class: itself where that is unambiguous, else escaped. */
function literal(cp: number): string {
  const c = String.fromCodePoint(cp);
  if (/^[\^$\\.*+?()[\]{}|/]$/.test(c)) return `\\${c}`;
  return /^[\x20-\x7e]$/.test(c) ? c : codePointEscape(cp);
}

function classItem(item: Re2ClassItem): string {
  switch (item.kind) {
    case 'range': return item.lo === item.hi ? classChar(item.lo) : `${classChar(item.lo)}-${classChar(item.hi)}`;
    case 'ascii': {
      const ranges = item.ranges.map(([lo, hi]) => classItem({ kind: 'range', lo, hi })).join('');
      return item.negated ? `[^${ranges}]` : ranges;
    }
    case 'unicode': {
      if (item.properties.length === 1) return `\\${item.negated ? 'P' : 'p'}{${item.properties[0]}}`;
      const union = item.properties.map((property) => `\\p{${property}}`).join('');
      return item.negated ? `[^${union}]` : union;
    }
  }
}

/** A character inside a `v`-flag class, where most punctuation is reserved: letters and digits as they are, the rest escaped. */
function classChar(cp: number): string {
  const c = String.fromCodePoint(cp);
  return /^[0-9A-Za-z]$/.test(c) ? c : codePointEscape(cp);
}

function codePointEscape(cp: number): string {
  return `\\u{${cp.toString(16)}}`;
}
