/**
 * Command lines as Go's `flag` package reads them, which the Go static
 * provisioner uses: `-name` and `--name` are the same; a value is `-name=value`
 * or `-name value`, except for booleans, which take only `-name` or
 * `-name=false`; `--` ends the flags; the first argument that is not a flag ends
 * them too, and everything from there on is left over (the provisioner never
 * reads it). `-h` and `-help` ask for help unless a flag has that name.
 */
import { FlagOccurrence, FlagSpec, FlagSyntax, longNames, quote, SyntaxResult } from './flags';

function parse(specs: readonly FlagSpec[], argv: readonly string[]): SyntaxResult {
  const byName = new Map<string, FlagSpec>();
  for (const spec of specs) for (const name of longNames(spec)) byName.set(name, spec);
  const occurrences: FlagOccurrence[] = [];
  const result = (rest: readonly string[], extra: { help?: boolean; error?: string } = {}): SyntaxResult =>
    ({ occurrences, positionals: [...rest], help: extra.help ?? false, error: extra.error });

  let i = 0;
  while (i < argv.length) {
    const arg = argv[i];
    if (arg.length < 2 || !arg.startsWith('-')) return result(argv.slice(i));
    if (arg === '--') return result(argv.slice(i + 1));
    const dashes = arg.startsWith('--') ? '--' : '-';
    const body = arg.slice(dashes.length);
    if (body === '' || body.startsWith('-') || body.startsWith('=')) return result([], { error: `bad flag syntax: ${quote(arg)}` });
    i++;
    const eq = body.indexOf('=');
    const name = eq < 0 ? body : body.slice(0, eq);
    const inline = eq < 0 ? undefined : body.slice(eq + 1);
    const spec = byName.get(name);
    if (!spec) {
      if (name === 'h' || name === 'help') return result([], { help: true });
      return result([], { error: `unknown flag ${quote(dashes + name)}` });
    }
    const written = dashes + name;
    if (spec.type === 'boolean') {
      // `-flag false` is the flag, then a first non-flag argument: Go reads it so.
      occurrences.push({ spec, written, value: inline });
      continue;
    }
    if (inline !== undefined) {
      occurrences.push({ spec, written, value: inline });
      continue;
    }
    if (i >= argv.length) return result([], { error: `flag ${quote(written)} needs a value` });
    occurrences.push({ spec, written, value: argv[i] });
    i++;
  }
  return result([]);
}

export const GO_FLAG_SYNTAX: FlagSyntax = { name: 'Go\'s flag package', parse };
