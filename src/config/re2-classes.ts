/**
 * The named character classes of RE2 as Go 1.25 defines them: the ASCII ones (Perl's
 * `\d \s \w` and POSIX's `[:alpha:]`...) as code point ranges, and the names `\p{...}`
 * accepts, resolved to the JavaScript Unicode property that means the same.
 */

export type AsciiRanges = readonly (readonly [number, number])[];

const range = (lo: string, hi: string = lo) => [lo.codePointAt(0)!, hi.codePointAt(0)!] as const;
const DIGIT = [range('0', '9')];
const UPPER = [range('A', 'Z')];
const LOWER = [range('a', 'z')];
const WORD = [...DIGIT, ...UPPER, range('_'), ...LOWER];

/** `[:name:]` inside a class (RE2 syntax: "ASCII character class"); note `[:space:]` has \v and `\s` has not. */
export const ASCII_CLASSES: Readonly<Record<string, AsciiRanges>> = {
  alnum: [...DIGIT, ...UPPER, ...LOWER],
  alpha: [...UPPER, ...LOWER],
  ascii: [[0x00, 0x7f]],
  blank: [range('\t'), range(' ')],
  cntrl: [[0x00, 0x1f], [0x7f, 0x7f]],
  digit: DIGIT,
  graph: [range('!', '~')],
  lower: LOWER,
  print: [range(' ', '~')],
  punct: [range('!', '/'), range(':', '@'), range('[', '`'), range('{', '~')],
  space: [range('\t', '\r'), range(' ')],
  upper: UPPER,
  word: WORD,
  xdigit: [...DIGIT, range('A', 'F'), range('a', 'f')],
};

/** Perl's class escapes, ASCII-only in RE2 (JavaScript's `\s` is Unicode white space, so none maps to JavaScript's own). */
export const PERL_CLASSES: Readonly<Record<string, { readonly ranges: AsciiRanges; readonly negated: boolean }>> = {
  '\\d': { ranges: DIGIT, negated: false },
  '\\D': { ranges: DIGIT, negated: true },
  '\\s': { ranges: [range('\t', '\n'), range('\f', '\r'), range(' ')], negated: false },
  '\\S': { ranges: [range('\t', '\n'), range('\f', '\r'), range(' ')], negated: true },
  '\\w': { ranges: WORD, negated: false },
  '\\W': { ranges: WORD, negated: true },
};

/**
 * The general categories Go 1.25 knows, each with Unicode's long names for it
 * (PropertyValueAliases.txt), which Go 1.25 accepts too.
 */
const CATEGORY_NAMES = `
C Other
Cc Control cntrl
Cf Format
Cn Unassigned
Co Private_Use
Cs Surrogate
L Letter
LC Cased_Letter
Ll Lowercase_Letter
Lm Modifier_Letter
Lo Other_Letter
Lt Titlecase_Letter
Lu Uppercase_Letter
M Mark Combining_Mark
Mc Spacing_Mark
Me Enclosing_Mark
Mn Nonspacing_Mark
N Number
Nd Decimal_Number digit
Nl Letter_Number
No Other_Number
P Punctuation punct
Pc Connector_Punctuation
Pd Dash_Punctuation
Pe Close_Punctuation
Pf Final_Punctuation
Pi Initial_Punctuation
Po Other_Punctuation
Ps Open_Punctuation
S Symbol
Sc Currency_Symbol
Sk Modifier_Symbol
Sm Math_Symbol
So Other_Symbol
Z Separator
Zl Line_Separator
Zp Paragraph_Separator
Zs Space_Separator`.trim().split('\n').map((line) => line.split(' '));

/**
 * The scripts Go 1.25 finds: it looks the canonical form of a name up among Unicode
 * 15.0's script names as written (`Old_Italic`, `SignWriting`), so only the scripts
 * named by one capitalised word resolve.
 */
const SCRIPTS = new Set((
  'Adlam Ahom Arabic Armenian Avestan Balinese Bamum Batak Bengali Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid '
  + 'Carian Chakma Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot Cyrillic Deseret Devanagari Dogra Duployan '
  + 'Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gurmukhi Han Hangul Hanunoo Hatran Hebrew '
  + 'Hiragana Inherited Javanese Kaithi Kannada Katakana Kawi Kharoshthi Khmer Khojki Khudawadi Lao Latin Lepcha Limbu '
  + 'Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen Medefaidrin Miao Modi Mongolian Mro Multani '
  + 'Myanmar Nabataean Nandinagari Newa Nko Nushu Ogham Oriya Osage Osmanya Palmyrene Phoenician Rejang Runic Samaritan '
  + 'Saurashtra Sharada Shavian Siddham Sinhala Sogdian Soyombo Sundanese Syriac Tagalog Tagbanwa Takri Tamil Tangsa '
  + 'Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Toto Ugaritic Vai Vithkuqi Wancho Yezidi Yi'
).split(' '));

/** Go's canonicalName: first letter upper case, the rest lower case, without `_`, `-` and spaces. */
function canonicalName(name: string): string {
  const bare = name.replace(/[-_ ]/g, '');
  return bare.slice(0, 1).replace(/[a-z]/, (c) => c.toUpperCase()) + bare.slice(1).replace(/[A-Z]+/g, (s) => s.toLowerCase());
}

/** Go's table for C leaves out unassigned code points (Cn), which Unicode's C includes. */
const properties = (gc: string) => (gc === 'C' ? ['Cc', 'Cf', 'Co', 'Cs'] : [gc]);

/** Later entries win, as in Go's lookup order: the special names, categories, scripts, then aliases. */
const BY_CANONICAL_NAME = new Map<string, readonly string[]>([
  ...CATEGORY_NAMES.flatMap(([gc, ...aliases]) => aliases.map((alias) => [canonicalName(alias), properties(gc)] as const)),
  ...[...SCRIPTS].map((script) => [script, [`Script=${script}`]] as const),
  ...CATEGORY_NAMES.map(([gc]) => [canonicalName(gc), properties(gc)] as const),
  ['Any', ['Any']],
  ['Ascii', ['ASCII']],
  ['Assigned', ['Assigned']],
]);

/**
 * The JavaScript properties (for `\p{...}` with the `v` flag) whose union is what a name
 * in RE2's `\p{name}` means to Go 1.25, or undefined where Go reports "invalid character
 * class range".
 */
export function unicodeClassProperties(name: string): readonly string[] | undefined {
  return BY_CANONICAL_NAME.get(canonicalName(name));
}
