import { matchesGlob, matchesNamePattern, validateNamePattern } from '../../src/config';

// Vectors from Go's path/filepath match_test.go, so namePattern behaves as it did upstream.
describe('matchesGlob follows Go filepath.Match', () => {
  test.each([
    ['abc', 'abc', true],
    ['*', 'abc', true],
    ['*c', 'abc', true],
    ['a*', 'a', true],
    ['a*', 'abc', true],
    ['a*', 'ab/c', false],
    ['a*/b', 'abc/b', true],
    ['a*/b', 'a/c/b', false],
    ['a*b*c*d*e*/f', 'axbxcxdxe/f', true],
    ['a*b*c*d*e*/f', 'axbxcxdxexxx/f', true],
    ['a*b*c*d*e*/f', 'axbxcxdxe/xxx/f', false],
    ['a*b*c*d*e*/f', 'axbxcxdxexxx/fff', false],
    ['a*b?c*x', 'abxbbxdbxebxczzx', true],
    ['a*b?c*x', 'abxbbxdbxebxczzy', false],
    ['ab[c]', 'abc', true],
    ['ab[b-d]', 'abc', true],
    ['ab[e-g]', 'abc', false],
    ['ab[^c]', 'abc', false],
    ['ab[^b-d]', 'abc', false],
    ['ab[^e-g]', 'abc', true],
    ['a\\*b', 'a*b', true],
    ['a\\*b', 'ab', false],
    ['a?b', 'a☺b', true],
    ['a[^a]b', 'a☺b', true],
    ['a???b', 'a☺b', false],
    ['a[^a][^a][^a]b', 'a☺b', false],
    ['[a-ζ]*', 'α', true],
    ['*[a-ζ]', 'A', false],
    ['a?b', 'a/b', false],
    ['a*b', 'a/b', false],
    ['[\\]a]', ']', true],
    ['[\\-]', '-', true],
    ['[x\\-]', 'x', true],
    ['[x\\-]', '-', true],
    ['[x\\-]', 'z', false],
    ['[\\-x]', 'x', true],
    ['[\\-x]', '-', true],
    ['[\\-x]', 'a', false],
    ['*x', 'xxx', true],
    ['[!a]', '!', true],
    ['[!a]', 'b', false],
    ['sd[ab]', 'sdb', true],
    ['nvme?n1', 'nvme0n1', true],
    ['.*', '.hidden', true],
    ['*', '.hidden', true],
    ['a.b', 'axb', false],
    ['(x)+', '(x)+', true],
    ['[z-a]', 'm', false],
    ['[^z-a]', 'm', true],
  ])('%j matches %j: %s', (glob, name, expected) => {
    expect(matchesGlob(glob, name)).toBe(expected);
  });

  test.each(['[]a]', '[-]', '[x-]', '[-x]', '\\', '[a-b-c]', '[', '[^', '[^bc', 'a[', 'a/b[', '[a-', '[^]'])(
    '%j is malformed and matches nothing',
    (glob) => {
      expect(validateNamePattern(glob)).toContain(`glob ${JSON.stringify(glob)} is malformed`);
      expect(matchesGlob(glob, 'a')).toBe(false);
      expect(matchesGlob(glob, glob)).toBe(false);
    },
  );
});

describe('namePattern is a comma-separated list of globs', () => {
  test('a name matching any glob matches', () => {
    expect(matchesNamePattern('sd*,nvme*', 'nvme0n1')).toBe(true);
    expect(matchesNamePattern('sd*,nvme*', 'sdc')).toBe(true);
    expect(matchesNamePattern('sd*,nvme*', 'vda')).toBe(false);
  });

  test('globs are not trimmed, as upstream splits them', () => {
    expect(matchesNamePattern('sd*, nvme*', 'nvme0n1')).toBe(false);
    expect(matchesNamePattern('sd*, nvme*', ' nvme0n1')).toBe(true);
  });

  test('the default "*" matches every entry name', () => {
    expect(['disk1', 'lost+found', '.hidden', 'x y'].every((n) => matchesNamePattern('*', n))).toBe(true);
  });

  test('validation names every malformed glob of the list', () => {
    expect(validateNamePattern('sd*,[a-,nvme*,x\\')).toBe(
      'glob "[a-" is malformed (malformed character class); glob "x\\\\" is malformed (ends with an unfinished \\ escape)',
    );
    expect(validateNamePattern('sd*,nvme[0-9]*')).toBeUndefined();
  });
});
