import { ASCII_CLASSES, AsciiRanges, PERL_CLASSES, unicodeClassProperties } from './re2-classes';

/**
 * A parser for RE2 syntax as Go's `regexp.Compile` reads it (regexp/syntax with the
 * Perl flags, Go 1.25): it accepts what Go accepts, rejects what Go rejects with Go's
 * error text, and records per node the flags in force (`(?i)`, `(?m)`, `(?s)`, `(?U)`),
 * so that a translation to another engine cannot lose them.
 *
 * It mirrors Go's parser where the two could disagree: escapes, the order in which
 * errors are found, where a flag group's effect ends (the enclosing group's `)`),
 * repetition of whatever the last item is (`^*` is valid, `a**` is not), the repeat
 * count limit of 1000 (also as a product of nested counts), and names of captures.
 * Left out: Go's limits on the compiled program's size and the tree's depth, which no
 * device name filter approaches.
 */

/** Go's `syntax.ErrorCode` texts. */
const RE2_ERROR = {
  invalidCharRange: 'invalid character class range',
  invalidEscape: 'invalid escape sequence',
  invalidNamedCapture: 'invalid named capture',
  invalidPerlOp: 'invalid or unsupported Perl syntax',
  invalidRepeatOp: 'invalid nested repetition operator',
  invalidRepeatSize: 'invalid repeat count',
  invalidUTF8: 'invalid UTF-8',
  missingBracket: 'missing closing ]',
  missingParen: 'missing closing )',
  missingRepeatArgument: 'missing argument to repetition operator',
  trailingBackslash: 'trailing backslash at end of expression',
  unexpectedParen: 'unexpected )',
} as const;

/** A pattern Go would not compile; the message is Go's (`syntax.Error.Error()`). */
export class Re2SyntaxError extends Error {
  constructor(readonly code: string, readonly expr: string) {
    super(`error parsing regexp: ${code}: \`${expr}\``);
    this.name = 'Re2SyntaxError';
  }
}

/** One member of a character class: a range of code points, an ASCII class, or a Unicode property. */
export type Re2ClassItem =
  | { readonly kind: 'range'; readonly lo: number; readonly hi: number }
  | { readonly kind: 'ascii'; readonly ranges: AsciiRanges; readonly negated: boolean }
  | { readonly kind: 'unicode'; readonly properties: readonly string[]; readonly negated: boolean };

export type Re2Assertion = 'beginText' | 'endText' | 'beginLine' | 'endLine' | 'wordBoundary' | 'notWordBoundary';

/** The parse tree. `foldCase` is `(?i)` in force; `max` -1 is unbounded; groups leave no node (captures do not matter to matching). */
export type Re2Node =
  | { readonly op: 'empty' }
  | { readonly op: 'literal'; readonly codePoint: number; readonly foldCase: boolean }
  | { readonly op: 'class'; readonly negated: boolean; readonly items: readonly Re2ClassItem[]; readonly foldCase: boolean }
  | { readonly op: 'anyChar'; readonly matchesNewline: boolean }
  | { readonly op: 'assert'; readonly at: Re2Assertion }
  | { readonly op: 'concat'; readonly subs: readonly Re2Node[] }
  | { readonly op: 'alternate'; readonly subs: readonly Re2Node[] }
  | { readonly op: 'repeat'; readonly sub: Re2Node; readonly min: number; readonly max: number; readonly greedy: boolean; readonly counted: boolean };

interface Flags {
  readonly foldCase: boolean;
  readonly multiLine: boolean;
  readonly dotNL: boolean;
  readonly nonGreedy: boolean;
}

const FLAG_LETTERS: Readonly<Record<string, keyof Flags>> = { i: 'foldCase', m: 'multiLine', s: 'dotNL', U: 'nonGreedy' };

/** Go's limit on a counted repetition, and on the product of nested ones. */
const MAX_REPEAT = 1000;

const isAsciiAlnum = (c: string) => /^[0-9A-Za-z]$/.test(c);
const isOctal = (c: string | undefined) => c !== undefined && c >= '0' && c <= '7';
const hexValue = (cp: number) => (/^[0-9A-Fa-f]$/.test(String.fromCodePoint(cp)) ? parseInt(String.fromCodePoint(cp), 16) : -1);
const ESCAPED_ASSERTIONS: Readonly<Record<string, Re2Assertion>> = { A: 'beginText', b: 'wordBoundary', B: 'notWordBoundary', z: 'endText' };
const C_ESCAPES: Readonly<Record<string, number>> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };

/** Parses an RE2 pattern; throws Re2SyntaxError where Go's `regexp.Compile` fails. */
export function parseRe2(pattern: string): Re2Node {
  // A lone surrogate is what invalid UTF-8 would be; none can come from the API server.
  const unpaired = /\p{Cs}/u.exec(pattern);
  if (unpaired) throw new Re2SyntaxError(RE2_ERROR.invalidUTF8, pattern.slice(unpaired.index));
  return new Parser(pattern).parse();
}

class Parser {
  private pos = 0;
  private flags: Flags = { foldCase: false, multiLine: false, dotNL: false, nonGreedy: false };

  constructor(private readonly whole: string) {}

  parse(): Re2Node {
    const node = this.alternation();
    if (this.pos < this.whole.length) throw new Re2SyntaxError(RE2_ERROR.unexpectedParen, this.whole);
    return node;
  }

  /** Branches up to an unconsumed `)` or the end. */
  private alternation(): Re2Node {
    const branches: Re2Node[] = [];
    let items: Re2Node[] = [];
    // Where the previous token began if it was a repetition operator (Go's lastRepeat).
    let lastRepeat = -1;
    while (this.pos < this.whole.length) {
      const start = this.pos;
      const c = this.whole[start];
      let repeat = -1;
      if (c === ')') break;
      if (c === '|') {
        branches.push(concat(items));
        items = [];
        this.pos++;
      } else if (c === '(') {
        const group = this.group();
        if (group) items.push(group);
      } else if (c === '*' || c === '+' || c === '?') {
        this.pos++;
        const [min, max] = c === '*' ? [0, -1] : c === '+' ? [1, -1] : [0, 1];
        this.repeat(items, min, max, false, start, lastRepeat);
        repeat = start;
      } else if (c === '{') {
        const counted = this.countedRepeat();
        if (counted) {
          this.repeat(items, ...counted, true, start, lastRepeat);
          repeat = start;
        } else {
          items.push(this.literal(this.nextCodePoint()));
        }
      } else if (c === '[') {
        items.push(this.charClass());
      } else if (c === '\\') {
        items.push(...this.escapeAtom());
      } else {
        items.push(this.atom());
      }
      lastRepeat = repeat;
    }
    branches.push(concat(items));
    return branches.length === 1 ? branches[0] : { op: 'alternate', subs: branches };
  }

  /** `^`, `$`, `.` or a literal character. */
  private atom(): Re2Node {
    const c = this.whole[this.pos];
    const { multiLine, dotNL } = this.flags;
    if (c === '^' || c === '$' || c === '.') this.pos++;
    if (c === '^') return { op: 'assert', at: multiLine ? 'beginLine' : 'beginText' };
    if (c === '$') return { op: 'assert', at: multiLine ? 'endLine' : 'endText' };
    if (c === '.') return { op: 'anyChar', matchesNewline: dotNL };
    return this.literal(this.nextCodePoint());
  }

  private literal(codePoint: number): Re2Node {
    return { op: 'literal', codePoint, foldCase: this.flags.foldCase };
  }

  private nextCodePoint(): number {
    const cp = this.whole.codePointAt(this.pos)!;
    this.pos += cp > 0xffff ? 2 : 1;
    return cp;
  }

  /**
   * Go's parseRepeat and its range check: `{n}`, `{n,}` or `{n,m}` at pos, consumed, as
   * [min, max]; undefined, consuming nothing, when the `{` is a literal (as in `{,1}` or `{01}`).
   */
  private countedRepeat(): [number, number] | undefined {
    const start = this.pos;
    const m = /^\{(0|[1-9][0-9]*)(?:(,)(0|[1-9][0-9]*)?)?\}/.exec(this.whole.slice(start));
    if (!m) return undefined;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === undefined ? -1 : Number(m[3]);
    this.pos += m[0].length;
    if (min > MAX_REPEAT || max > MAX_REPEAT || (max >= 0 && min > max)) {
      throw new Re2SyntaxError(RE2_ERROR.invalidRepeatSize, m[0]);
    }
    return [min, max];
  }

  /** Applies a repetition operator (already consumed from `opStart`) to the last item. */
  private repeat(items: Re2Node[], min: number, max: number, counted: boolean, opStart: number, lastRepeat: number): void {
    let lazy = false;
    if (this.whole[this.pos] === '?') {
      lazy = true;
      this.pos++;
    }
    if (lastRepeat >= 0) throw new Re2SyntaxError(RE2_ERROR.invalidRepeatOp, this.whole.slice(lastRepeat, this.pos));
    if (items.length === 0) throw new Re2SyntaxError(RE2_ERROR.missingRepeatArgument, this.whole.slice(opStart, this.pos));
    const node: Re2Node = { op: 'repeat', sub: items[items.length - 1], min, max, greedy: lazy === this.flags.nonGreedy, counted };
    if (counted && (min >= 2 || max >= 2) && !repeatIsValid(node, MAX_REPEAT)) {
      throw new Re2SyntaxError(RE2_ERROR.invalidRepeatSize, this.whole.slice(opStart, this.pos));
    }
    items[items.length - 1] = node;
  }

  /** A group at `(`; undefined for a flags-only group such as `(?i)`, which changes the flags until the enclosing group ends. */
  private group(): Re2Node | undefined {
    const start = this.pos;
    const saved = this.flags;
    if (this.whole[start + 1] === '?') {
      const header = this.perlGroupHeader(start);
      if (header === 'flags only') return undefined;
    } else {
      this.pos++;
    }
    const sub = this.alternation();
    if (this.pos >= this.whole.length) throw new Re2SyntaxError(RE2_ERROR.missingParen, this.whole);
    this.pos++;
    this.flags = saved;
    return sub;
  }

  /** Go's parsePerlFlags at `(?`: a named capture, `(?flags)` or `(?flags:`. Sets pos after it and the flags it sets. */
  private perlGroupHeader(start: number): 'group' | 'flags only' {
    const rest = this.whole.slice(start);
    const named = /^\(\?P?<[^]/.test(rest) ? (rest[2] === 'P' ? 4 : 3) : 0;
    if (named) {
      const end = rest.indexOf('>');
      if (end < 0) throw new Re2SyntaxError(RE2_ERROR.invalidNamedCapture, rest);
      if (!/^[0-9A-Za-z_]+$/.test(rest.slice(named, end))) throw new Re2SyntaxError(RE2_ERROR.invalidNamedCapture, rest.slice(0, end + 1));
      this.pos = start + end + 1;
      return 'group';
    }
    let flags = { ...this.flags };
    let on = true;
    let sawFlag = false;
    this.pos = start + 2;
    while (this.pos < this.whole.length) {
      const c = String.fromCodePoint(this.nextCodePoint());
      const flag = FLAG_LETTERS[c];
      if (flag) {
        flags = { ...flags, [flag]: on };
        sawFlag = true;
      } else if (c === '-' && on) {
        on = false;
        sawFlag = false;
      } else if ((c === ':' || c === ')') && (on || sawFlag)) {
        this.flags = flags;
        return c === ':' ? 'group' : 'flags only';
      } else {
        break;
      }
    }
    throw new Re2SyntaxError(RE2_ERROR.invalidPerlOp, this.whole.slice(start, this.pos));
  }

  /** At `\` outside a class: an assertion, `\Q...\E`, a class escape or one escaped character. */
  private escapeAtom(): Re2Node[] {
    const start = this.pos;
    const next = this.whole[start + 1];
    const assertion = next === undefined ? undefined : ESCAPED_ASSERTIONS[next];
    if (assertion) {
      this.pos += 2;
      return [{ op: 'assert', at: assertion }];
    }
    if (next === 'C') throw new Re2SyntaxError(RE2_ERROR.invalidEscape, '\\C');
    if (next === 'Q') {
      const end = this.whole.indexOf('\\E', start + 2);
      const text = this.whole.slice(start + 2, end < 0 ? undefined : end);
      const literals: Re2Node[] = [];
      this.pos = start + 2;
      while (this.pos < start + 2 + text.length) literals.push(this.literal(this.nextCodePoint()));
      this.pos = end < 0 ? this.whole.length : end + 2;
      return literals;
    }
    const items = this.classEscape();
    if (items) return [{ op: 'class', negated: false, items, foldCase: this.flags.foldCase }];
    return [this.literal(this.escapedCodePoint())];
  }

  /** `\pX`, `\p{Name}`, `\PX`, `\P{Name}` or a Perl class `\d\D\s\S\w\W` at pos, or undefined. */
  private classEscape(): Re2ClassItem[] | undefined {
    const s = this.whole.slice(this.pos);
    if (s[0] !== '\\') return undefined;
    if (s[1] === 'p' || s[1] === 'P') return [this.unicodeClass(s)];
    const perl = PERL_CLASSES[s.slice(0, 2)];
    if (!perl) return undefined;
    this.pos += 2;
    return [{ kind: 'ascii', ...perl }];
  }

  /** Go's parseUnicodeClass: `\p` or `\P` with a one-letter name or a name in braces. */
  private unicodeClass(s: string): Re2ClassItem {
    let negated = s[1] === 'P';
    let seq: string;
    let name: string;
    if (s[2] !== '{') {
      const cp = s.codePointAt(2);
      seq = s.slice(0, cp === undefined ? 2 : cp > 0xffff ? 4 : 3);
      name = seq.slice(2);
    } else {
      const end = s.indexOf('}');
      if (end < 0) throw new Re2SyntaxError(RE2_ERROR.invalidCharRange, s);
      seq = s.slice(0, end + 1);
      name = s.slice(3, end);
    }
    if (name.startsWith('^')) {
      negated = !negated;
      name = name.slice(1);
    }
    const properties = unicodeClassProperties(name);
    if (!properties) throw new Re2SyntaxError(RE2_ERROR.invalidCharRange, seq);
    this.pos += seq.length;
    return { kind: 'unicode', properties, negated };
  }

  /** Go's parseEscape at `\`: one character. */
  private escapedCodePoint(): number {
    const start = this.pos;
    const invalid = () => new Re2SyntaxError(RE2_ERROR.invalidEscape, this.whole.slice(start, this.pos));
    this.pos++;
    if (this.pos >= this.whole.length) throw new Re2SyntaxError(RE2_ERROR.trailingBackslash, '');
    const cp = this.nextCodePoint();
    const c = String.fromCodePoint(cp);
    if (cp < 0x80 && !isAsciiAlnum(c)) return cp;
    if (Object.hasOwn(C_ESCAPES, c)) return C_ESCAPES[c];
    // \0, \0NN, \NNN: octal; \1 to \9 alone would be backreferences, which RE2 has not.
    if (c === '0' || (isOctal(c) && isOctal(this.whole[this.pos]))) {
      let value = cp - 0x30;
      for (let i = 1; i < 3 && isOctal(this.whole[this.pos]); i++) value = value * 8 + Number(this.whole[this.pos++]);
      return value;
    }
    if (c !== 'x' || this.pos >= this.whole.length) throw invalid();
    const first = this.nextCodePoint();
    if (first !== 0x7b /* { */) {
      const hi = hexValue(first);
      const lo = this.pos < this.whole.length ? hexValue(this.nextCodePoint()) : -1;
      if (hi < 0 || lo < 0) throw invalid();
      return hi * 16 + lo;
    }
    let value = 0;
    let digits = 0;
    for (;;) {
      if (this.pos >= this.whole.length) throw invalid();
      const d = this.nextCodePoint();
      if (d === 0x7d /* } */) break;
      const v = hexValue(d);
      if (v < 0) throw invalid();
      value = value * 16 + v;
      if (value > 0x10ffff) throw invalid();
      digits++;
    }
    if (digits === 0) throw invalid();
    return value;
  }

  /** Go's parseClass at `[`. */
  private charClass(): Re2Node {
    const start = this.pos;
    const wholeClass = this.whole.slice(start);
    this.pos++;
    const negated = this.whole[this.pos] === '^';
    if (negated) this.pos++;
    const items: Re2ClassItem[] = [];
    let first = true; // a ] first in the class is a literal
    while (this.pos >= this.whole.length || this.whole[this.pos] !== ']' || first) {
      first = false;
      const named = this.namedClass();
      if (named) {
        items.push(named);
        continue;
      }
      const escaped = this.classEscape();
      if (escaped) {
        items.push(...escaped);
        continue;
      }
      const rangeStart = this.pos;
      const lo = this.classChar(wholeClass);
      let hi = lo;
      if (this.whole[this.pos] === '-' && this.pos + 1 < this.whole.length && this.whole[this.pos + 1] !== ']') {
        this.pos++;
        hi = this.classChar(wholeClass);
        if (hi < lo) throw new Re2SyntaxError(RE2_ERROR.invalidCharRange, this.whole.slice(rangeStart, this.pos));
      }
      items.push({ kind: 'range', lo, hi });
    }
    this.pos++;
    return { op: 'class', negated, items, foldCase: this.flags.foldCase };
  }

  /** Go's parseNamedClass: `[:alpha:]`, `[:^alpha:]`... at pos. Like Go, the name runs to the next `:]`, even past the class. */
  private namedClass(): Re2ClassItem | undefined {
    const s = this.whole.slice(this.pos);
    if (s.length <= 2 || !s.startsWith('[:')) return undefined;
    const end = s.indexOf(':]', 2);
    if (end < 0) return undefined;
    const name = s.slice(0, end + 2);
    const m = /^\[:(\^?)([a-z]+):\]$/.exec(name);
    const ranges = m && Object.hasOwn(ASCII_CLASSES, m[2]) ? ASCII_CLASSES[m[2]] : undefined;
    if (!m || !ranges) throw new Re2SyntaxError(RE2_ERROR.invalidCharRange, name);
    this.pos += name.length;
    return { kind: 'ascii', ranges, negated: m[1] === '^' };
  }

  /** Go's parseClassChar: one character of a class, escaped or not. */
  private classChar(wholeClass: string): number {
    if (this.pos >= this.whole.length) throw new Re2SyntaxError(RE2_ERROR.missingBracket, wholeClass);
    return this.whole[this.pos] === '\\' ? this.escapedCodePoint() : this.nextCodePoint();
  }
}

function concat(items: Re2Node[]): Re2Node {
  return items.length === 0 ? { op: 'empty' } : items.length === 1 ? items[0] : { op: 'concat', subs: items };
}

/** Go's repeatIsValid: no counted repetition, alone or multiplied by those around it, exceeds n copies. */
function repeatIsValid(node: Re2Node, n: number): boolean {
  if (node.op === 'repeat' && node.counted) {
    const m = node.max < 0 ? node.min : node.max;
    if (node.max === 0) return true;
    if (m > n) return false;
    if (m > 0) n = Math.floor(n / m);
  }
  const subs = node.op === 'repeat' ? [node.sub] : node.op === 'concat' || node.op === 'alternate' ? node.subs : [];
  return subs.every((sub) => repeatIsValid(sub, n));
}
