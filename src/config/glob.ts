/**
 * `namePattern`: comma-separated globs with Go `filepath.Match` semantics, so a
 * pattern behaves exactly as it did under the Go provisioner:
 * `*` any run of non-`/` characters, `?` one non-`/` character, `[a-z]` / `[^x]`
 * classes (negation is `^`, not `!`), `\` escapes the next character. A pattern
 * Go would reject (`[a-`, `[]`, a trailing `\`) is an error, never a silent miss.
 */

class MalformedGlob extends Error {}

/** Translates one glob to an anchored RegExp, or throws MalformedGlob. */
function compileGlob(glob: string): RegExp {
  const chars = Array.from(glob); // code points, as Go walks runes
  let i = 0;
  let source = '';
  const codePoint = (c: string) => c.codePointAt(0)!;
  const escaped = (c: string) => `\\u{${codePoint(c).toString(16)}}`;

  // Go's getEsc: one possibly escaped character of a class; `-` and `]` must be escaped.
  const classChar = (): string => {
    const c = chars[i];
    if (c === undefined || c === '-' || c === ']') throw new MalformedGlob('malformed character class');
    i++;
    if (c !== '\\') return c;
    const next = chars[i++];
    if (next === undefined) throw new MalformedGlob('unterminated character class');
    return next;
  };

  while (i < chars.length) {
    const c = chars[i++];
    if (c === '*') {
      source += '[^/]*';
    } else if (c === '?') {
      source += '[^/]';
    } else if (c === '\\') {
      const next = chars[i++];
      if (next === undefined) throw new MalformedGlob('ends with an unfinished \\ escape');
      source += escaped(next);
    } else if (c === '[') {
      const negated = chars[i] === '^';
      if (negated) i++;
      let ranges = '';
      let count = 0;
      for (;;) {
        if (i >= chars.length) throw new MalformedGlob('unterminated character class');
        if (chars[i] === ']' && count > 0) {
          i++;
          break;
        }
        const lo = classChar();
        let hi = lo;
        if (chars[i] === '-') {
          i++;
          hi = classChar();
        }
        count++;
        // Go never matches a reversed range; JavaScript would throw on it, so leave it out.
        if (codePoint(lo) <= codePoint(hi)) ranges += `${escaped(lo)}-${escaped(hi)}`;
      }
      source += `[${negated ? '^' : ''}${ranges}]`;
    } else {
      source += escaped(c);
    }
  }
  return new RegExp(`^${source}$`, 'su');
}

const cache = new Map<string, RegExp | string>();

/** The compiled glob, or the reason it is malformed. */
function compiled(glob: string): RegExp | string {
  let entry = cache.get(glob);
  if (entry === undefined) {
    try {
      entry = compileGlob(glob);
    } catch (e) {
      if (!(e instanceof MalformedGlob)) throw e;
      entry = e.message;
    }
    // Patterns come from a handful of config keys; the bound only guards against misuse.
    if (cache.size > 1000) cache.clear();
    cache.set(glob, entry);
  }
  return entry;
}

/** Go `filepath.Match(glob, name)`; false for a malformed glob. */
export function matchesGlob(glob: string, name: string): boolean {
  const re = compiled(glob);
  return typeof re !== 'string' && re.test(name);
}

/** True when any comma-separated glob of `namePattern` matches the entry name (as upstream splits it: no trimming). */
export function matchesNamePattern(namePattern: string, name: string): boolean {
  return namePattern.split(',').some((glob) => matchesGlob(glob, name));
}

/** The reason a namePattern is malformed (naming each bad glob), or undefined when valid. */
export function validateNamePattern(namePattern: string): string | undefined {
  const problems = namePattern.split(',').flatMap((glob) => {
    const re = compiled(glob);
    return typeof re === 'string' ? [`glob ${JSON.stringify(glob)} is malformed (${re})`] : [];
  });
  return problems.length > 0 ? problems.join('; ') : undefined;
}
