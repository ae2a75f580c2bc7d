import { compileDeviceNameFilter } from '../../src/config';
import { deviceNameFilterProblem } from '../../src/config/device-name-filter';

/*
 * deviceNameFilter as Go reads it: upstream compiles it with regexp.Compile and calls
 * MatchString (an unanchored search) on each device's base name. Expectations are
 * written from the documented semantics, each case naming where it comes from:
 *   [RE2]    RE2's syntax reference, https://github.com/google/re2/wiki/Syntax
 *   [syntax] Go's regexp/syntax documentation, https://pkg.go.dev/regexp/syntax
 *            (the same table with Go's flags; its ErrorCode constants are the error texts)
 *   [regexp] Go's regexp documentation, https://pkg.go.dev/regexp ("the match is
 *            leftmost-first"; MatchString "reports whether the string contains any match")
 *   [parse]  Go 1.25's src/regexp/syntax/parse.go, where the documents are silent
 */

interface MatchCase {
  readonly pattern: string;
  readonly matches: readonly string[];
  readonly misses: readonly string[];
  readonly source: string;
}

const MATCH_CASES: readonly MatchCase[] = [
  { pattern: '', matches: ['sda', 'nvme0n1', 'αβ'], misses: [], source: '[regexp] the empty regexp matches the empty string, found in every name' },
  { pattern: '.*', matches: ['sda', 'pci-0000:3c:00.0-sas-phy0-lun-0', ''], misses: [], source: '[RE2] x* zero or more' },
  { pattern: 'sd[ab]', matches: ['sda', 'sdb', 'xsdbx'], misses: ['sdc', 'SDA', 'nvme0n1'], source: '[RE2] [xyz] character class; [regexp] unanchored' },
  { pattern: '^dev', matches: ['dev0', 'device'], misses: ['mydev', 'sda'], source: '[RE2] ^ at beginning of text' },
  { pattern: '(?i)SD', matches: ['sda', 'SDA', 'xSd'], misses: ['nvme0n1'], source: '[RE2] flag i case-insensitive' },
  { pattern: '(?U)a+', matches: ['a', 'sda', 'aaa'], misses: ['sdb'], source: '[RE2] flag U ungreedy; greediness never changes whether a match exists' },
  { pattern: '[[:alpha:]]+', matches: ['sda', 'dm-0', 'x1'], misses: ['123', 'é', '-_'], source: '[RE2] [[:alpha:]] ASCII character class (alphabetic, == [A-Za-z])' },
  { pattern: '[[:^digit:]]', matches: ['sda1', 'é', '-'], misses: ['123', ''], source: '[RE2] [[:^alpha:]] negated ASCII character class' },
  { pattern: '\\pL', matches: ['é', 'αβ', 'sda'], misses: ['123', '-_:'], source: '[RE2] \\pN Unicode character class (one-letter name); L letter' },
  { pattern: '\\p{Greek}', matches: ['α', 'disk-Ω'], misses: ['sda', 'é'], source: '[RE2] \\p{Greek} Unicode character class (script)' },
  { pattern: '\\Q.*\\E', matches: ['.*', 'a.*b'], misses: ['sda', '.a'], source: '[RE2] \\Q...\\E literal text ... even if ... has punctuation' },
  { pattern: '\\x{61}', matches: ['sda', 'a'], misses: ['sdb', 'A'], source: '[RE2] \\x{10FFFF} hex character code' },
  { pattern: 'nvme[0-9]+n1$', matches: ['nvme0n1', 'nvme10n1'], misses: ['nvme0n1p1', 'nvme0n2', 'nvmen1'], source: '[RE2] $ at end of text' },
  { pattern: 'pci-0000:3c:00\\.0-.*', matches: ['pci-0000:3c:00.0-sas-phy0-lun-0'], misses: ['pci-0000:3c:00x0-sas', 'pci-0000:3c:01.0-sas'], source: '[RE2] \\. literal punctuation' },
  // What a JavaScript RegExp would read differently.
  { pattern: '\\x61', matches: ['sda'], misses: ['sdb'], source: '[RE2] \\x7F hex character code (exactly two digits)' },
  { pattern: '\\141', matches: ['sda'], misses: ['sdb'], source: '[RE2] \\123 octal character code (up to three digits)' },
  { pattern: '^.$', matches: ['\r', 'a'], misses: ['\n', ''], source: '[RE2] . any character, possibly including newline (s=true): only \\n is excluded' },
  { pattern: '(?s)^.$', matches: ['\n'], misses: [''], source: '[RE2] flag s: let . match \\n' },
  { pattern: '\\s', matches: [' ', '\t'], misses: ['\v', '\u00a0', 'sda'], source: '[RE2] \\s whitespace (== [\\t\\n\\f\\r ]), ASCII only' },
  { pattern: '[[:space:]]', matches: ['\v', ' '], misses: ['\u00a0'], source: '[RE2] [[:space:]] whitespace (== [\\t\\n\\v\\f\\r ])' },
  { pattern: '\\w+$', matches: ['sda_1'], misses: ['sdé', 'sd-'], source: '[RE2] \\w word characters (== [0-9A-Za-z_])' },
  { pattern: '^b', matches: ['b'], misses: ['a\nb'], source: '[RE2] ^ at beginning of text (m=false)' },
  { pattern: '(?m)^b', matches: ['a\nb', 'b'], misses: ['a\rb', 'a\u2028b'], source: '[RE2] flag m: ^ and $ match begin/end line; a line ends only at \\n' },
  { pattern: 'a$', matches: ['a'], misses: ['a\n'], source: '[RE2] $ at end of text (like \\z not \\Z)' },
  { pattern: '(?m)a$', matches: ['a\nb', 'a'], misses: ['a\rb'], source: '[RE2] flag m: $ at end of line' },
  { pattern: '\\Asd', matches: ['sda'], misses: ['xsda'], source: '[RE2] \\A at beginning of text' },
  { pattern: 'a\\z', matches: ['sda'], misses: ['sda\n', 'sdab'], source: '[RE2] \\z at end of text' },
  { pattern: 'a\\b', matches: ['sda', 'a-b', 'aé'], misses: ['ab', 'a_'], source: '[RE2] \\b at ASCII word boundary' },
  { pattern: '\\Ba', matches: ['sda'], misses: ['a', '-a'], source: '[RE2] \\B not at ASCII word boundary' },
  { pattern: '(?i)k', matches: ['k', 'K', '\u212a'], misses: ['x'], source: '[parse] (?i) matches the whole case-folding orbit (k, K, Kelvin sign)' },
  { pattern: '(?i)\\W', matches: ['-'], misses: ['\u017f', '\u212a', 'a'], source: '[parse] a negated class is negated after case folding: ſ and K fold into \\w' },
  { pattern: '(?i)\\P{Lu}', matches: ['1', '-'], misses: ['a', 'A'], source: '[parse] \\P{...} under (?i): folded, then negated' },
  { pattern: '\\PL', matches: ['1'], misses: ['a', 'é'], source: '[RE2] \\PN negated Unicode character class' },
  { pattern: '\\p{^Greek}', matches: ['a'], misses: ['α'], source: '[RE2] \\p{^Greek} negated Unicode character class' },
  { pattern: '\\p{letter}', matches: ['é'], misses: ['1'], source: '[syntax] Go 1.25: category aliases like \\p{Letter}, names case-insensitive' },
  { pattern: '(?i:S)d', matches: ['Sd', 'sd'], misses: ['SD'], source: '[RE2] (?flags:re) set flags during re' },
  { pattern: 's(?i)D|X', matches: ['sd', 'x'], misses: ['Sd'], source: '[RE2] (?flags) set flags within current group, across |' },
  { pattern: '(s(?i)d)D', matches: ['sdD', 'sDD'], misses: ['sdd'], source: '[RE2] (?flags) ends with the current group' },
  { pattern: '(?i)s(?-i)d', matches: ['Sd'], misses: ['SD'], source: '[RE2] flag syntax -xyz (clear)' },
  { pattern: '(?P<kind>sd)[a-z]', matches: ['sda'], misses: ['sd1'], source: '[RE2] (?P<name>re) named capturing group' },
  { pattern: '(?<kind>sd)[a-z]', matches: ['sda'], misses: ['sd1'], source: '[RE2] (?<name>re) named capturing group' },
  { pattern: 'a{,3}', matches: ['a{,3}'], misses: ['a', 'aaa'], source: '[parse] a { that does not begin a repetition is a literal' },
  { pattern: '[]a]', matches: [']', 'a'], misses: ['b'], source: '[parse] ] first in a class is a literal' },
  { pattern: 'sd\\_', matches: ['sd_'], misses: ['sda'], source: '[parse] \\ before punctuation (and _) is that character' },
  { pattern: '^*sd', matches: ['sda', 'xsd'], misses: ['nvme'], source: '[parse] an empty-width assertion can be repeated' },
  { pattern: 'loop|', matches: ['sda'], misses: [], source: '[RE2] x|y; an empty alternative matches the empty string' },
];

describe('deviceNameFilter matches as Go\'s MatchString does', () => {
  describe.each(MATCH_CASES)('$pattern ($source)', ({ pattern, matches, misses }) => {
    const filter = compileDeviceNameFilter(pattern);
    test.each(matches.map((name) => [JSON.stringify(name)] as const))('matches %s', (name) => {
      expect(filter.test(JSON.parse(name))).toBe(true);
    });
    if (misses.length > 0) {
      test.each(misses.map((name) => [JSON.stringify(name)] as const))('does not match %s', (name) => {
        expect(filter.test(JSON.parse(name))).toBe(false);
      });
    }
  });
});

describe('(?U) swaps the greediness of each quantifier in its scope', () => {
  test.each([
    ['a+', 'aaa'],
    ['(?U)a+', 'a'],
    ['(?U)a+?', 'aaa'],
    ['(?U:a{1,2})', 'a'],
    ['(?U)a{1,2}?', 'aa'],
    ['(?U)(?-U)a+', 'aaa'],
  ])('%s finds %s in "aaa" [RE2: U ungreedy: swap meaning of x* and x*?; regexp: leftmost-first]', (pattern, found) => {
    expect(compileDeviceNameFilter(pattern).exec('aaa')?.[0]).toBe(found);
  });
});

interface ErrorCase {
  readonly pattern: string;
  readonly error: string;
  readonly source: string;
}

const ERROR_CASES: readonly ErrorCase[] = [
  { pattern: 'a{1001}', error: 'invalid repeat count: `{1001}`', source: '[RE2] counting forms reject a repetition count above 1000' },
  { pattern: '(a{100}){11}', error: 'invalid repeat count: `{11}`', source: '[parse] the product of nested counts is limited to 1000 too' },
  { pattern: 'a{2,1}', error: 'invalid repeat count: `{2,1}`', source: '[parse] min above max' },
  { pattern: '(a)\\1', error: 'invalid escape sequence: `\\1`', source: '[RE2] \\1 backreference NOT SUPPORTED' },
  { pattern: '(?=a)', error: 'invalid or unsupported Perl syntax: `(?=`', source: '[RE2] (?=re) lookahead NOT SUPPORTED' },
  { pattern: '(?!a)', error: 'invalid or unsupported Perl syntax: `(?!`', source: '[RE2] (?!re) negative lookahead NOT SUPPORTED' },
  { pattern: '(?<=a)b', error: 'invalid named capture: `(?<=a)b`', source: '[RE2] (?<=re) lookbehind NOT SUPPORTED; [parse] read as a name' },
  { pattern: '(?>a)', error: 'invalid or unsupported Perl syntax: `(?>`', source: '[RE2] (?>re) atomic group NOT SUPPORTED' },
  { pattern: 'a++', error: 'invalid nested repetition operator: `++`', source: '[RE2] x++ possessive NOT SUPPORTED' },
  { pattern: '\\C', error: 'invalid escape sequence: `\\C`', source: '[syntax] \\C is not in Go\'s table; [parse] rejected' },
  { pattern: 'a\\Z', error: 'invalid escape sequence: `\\Z`', source: '[RE2] \\Z NOT SUPPORTED' },
  { pattern: '\\G', error: 'invalid escape sequence: `\\G`', source: '[RE2] \\G NOT SUPPORTED' },
  { pattern: '(?P=kind)', error: 'invalid or unsupported Perl syntax: `(?P`', source: '[RE2] (?P=name) named backreference NOT SUPPORTED' },
  { pattern: '\\k<kind>', error: 'invalid escape sequence: `\\k`', source: '[RE2] \\k<name> NOT SUPPORTED' },
  { pattern: '(?P<n!>a)', error: 'invalid named capture: `(?P<n!>`', source: '[parse] a name is [A-Za-z0-9_]+' },
  { pattern: '[[:word2:]]', error: 'invalid character class range: `[:word2:]`', source: '[parse] unknown POSIX class' },
  { pattern: '\\p{Foo}', error: 'invalid character class range: `\\p{Foo}`', source: '[parse] unknown Unicode class' },
  { pattern: '\\p{Old_Italic}', error: 'invalid character class range: `\\p{Old_Italic}`', source: '[parse] Go 1.25 looks up the canonical name (Olditalic) among script names as written' },
  { pattern: '\\p{Script=Greek}', error: 'invalid character class range: `\\p{Script=Greek}`', source: '[parse] no property=value form' },
  { pattern: '\\x{110000}', error: 'invalid escape sequence: `\\x{110000`', source: '[parse] beyond U+10FFFF' },
  { pattern: '\\8', error: 'invalid escape sequence: `\\8`', source: '[parse] not octal' },
  { pattern: '[z-a]', error: 'invalid character class range: `z-a`', source: '[parse] range out of order' },
  { pattern: '(', error: 'missing closing ): `(`', source: '[syntax] ErrMissingParen' },
  { pattern: 'a)', error: 'unexpected ): `a)`', source: '[syntax] ErrUnexpectedParen' },
  { pattern: '[a', error: 'missing closing ]: `[a`', source: '[syntax] ErrMissingBracket' },
  { pattern: '*', error: 'missing argument to repetition operator: `*`', source: '[syntax] ErrMissingRepeatArgument' },
  { pattern: 'a**', error: 'invalid nested repetition operator: `**`', source: '[syntax] ErrInvalidRepeatOp' },
  { pattern: 'x{2}{3}', error: 'invalid nested repetition operator: `{2}{3}`', source: '[syntax] ErrInvalidRepeatOp' },
  { pattern: '(?i', error: 'invalid or unsupported Perl syntax: `(?i`', source: '[syntax] ErrInvalidPerlOp' },
  { pattern: '(?i-)', error: 'invalid or unsupported Perl syntax: `(?i-)`', source: '[parse] - must be followed by a flag' },
  { pattern: 'sd\\', error: 'trailing backslash at end of expression: ``', source: '[syntax] ErrTrailingBackslash' },
];

describe('patterns Go rejects are rejected with Go\'s error', () => {
  test.each(ERROR_CASES)('$pattern: $error ($source)', ({ pattern, error }) => {
    expect(() => compileDeviceNameFilter(pattern)).toThrow(`error parsing regexp: ${error}`);
  });

  test('the problem names the user\'s pattern, not its translation', () => {
    expect(deviceNameFilterProblem('(?i)sd(a)\\1')).toBe('"(?i)sd(a)\\\\1" is not a valid regular expression: error parsing regexp: invalid escape sequence: `\\1`');
  });
});
