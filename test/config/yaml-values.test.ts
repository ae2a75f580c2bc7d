import { stringifyYamlValue } from '../../src/config/yaml-values';

// What go-yaml v2 (upstream's reader) needs from the YAML we write; our own parser
// would read the unquoted forms back correctly, so the round trip alone cannot tell.
describe('YAML written for go-yaml v2', () => {
  test('every string value is double-quoted, so YAML 1.1 never retypes it', () => {
    expect(stringifyYamlValue({ a: 'yes', b: '0777', c: '1:20', d: 'plain' })).toBe('a: "yes"\nb: "0777"\nc: "1:20"\nd: "plain"\n');
  });

  test('keys Go would read as numbers are quoted', () => {
    expect(stringifyYamlValue({ '0o17': 1, '1_000': 2, '+1': 3, 'fast-disks': 4 })).toBe('"0o17": 1\n"1_000": 2\n"+1": 3\nfast-disks: 4\n');
  });

  test('characters go-yaml rejects or reads as line breaks are escaped', () => {
    expect(stringifyYamlValue(['a\u0085b', '\u2028', '\u007f', '\ufeff'])).toBe('- "a\\u0085b"\n- "\\u2028"\n- "\\u007f"\n- "\\ufeff"\n');
  });

  test('long strings are not folded over lines', () => {
    const long = 'x'.repeat(200) + ' ' + 'y'.repeat(200);
    expect(stringifyYamlValue([long])).toBe(`- "${long}"\n`);
  });
});
