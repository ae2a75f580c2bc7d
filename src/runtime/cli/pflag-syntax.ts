/**
 * Command lines as spf13/pflag reads them, which node-cleanup and (through
 * cobra) the device provisioner use: long flags take two dashes, `--name=value`
 * or `--name value`, booleans `--name` or `--name=false`; a single dash starts
 * one-letter shorthands (`-v=5`, `-v 5`, `-v5`), so `-name` is not a long flag;
 * arguments that are not flags may come anywhere and are left over; `--` ends
 * the flags; `--help` and `-h` ask for help unless a flag has that name.
 */
import { FlagOccurrence, FlagSpec, FlagSyntax, longNames, quote, SyntaxResult } from './flags';

function parse(specs: readonly FlagSpec[], argv: readonly string[]): SyntaxResult {
  const byName = new Map<string, FlagSpec>();
  const byShorthand = new Map<string, FlagSpec>();
  for (const spec of specs) {
    for (const name of longNames(spec)) byName.set(name, spec);
    if (spec.shorthand) byShorthand.set(spec.shorthand, spec);
  }
  const occurrences: FlagOccurrence[] = [];
  const positionals: string[] = [];
  const fail = (error: string): SyntaxResult => ({ occurrences, positionals, help: false, error });
  const help = (): SyntaxResult => ({ occurrences, positionals, help: true });

  let i = 0;
  while (i < argv.length) {
    const arg = argv[i++];
    if (arg.length < 2 || !arg.startsWith('-')) {
      positionals.push(arg);
      continue;
    }
    if (arg === '--') {
      positionals.push(...argv.slice(i));
      break;
    }
    if (arg.startsWith('--')) {
      const body = arg.slice(2);
      if (body.startsWith('-') || body.startsWith('=')) return fail(`bad flag syntax: ${quote(arg)}`);
      const eq = body.indexOf('=');
      const name = eq < 0 ? body : body.slice(0, eq);
      const spec = byName.get(name);
      if (!spec) return name === 'help' ? help() : fail(`unknown flag ${quote(`--${name}`)}`);
      const written = `--${name}`;
      if (eq >= 0) occurrences.push({ spec, written, value: body.slice(eq + 1) });
      else if (spec.type === 'boolean') occurrences.push({ spec, written });
      else if (i < argv.length) occurrences.push({ spec, written, value: argv[i++] });
      else return fail(`flag ${quote(written)} needs a value`);
      continue;
    }
    // Shorthands: each letter is a flag; one that takes a value takes the rest of the argument.
    let letters = arg.slice(1);
    while (letters !== '') {
      const letter = letters[0];
      const spec = byShorthand.get(letter);
      if (!spec) {
        if (letter === 'h') return help();
        const long = byName.has(arg.slice(1).split('=')[0]) ? `; long flags take two dashes: ${quote(`-${arg}`)}` : '';
        return fail(`unknown shorthand flag ${quote(letter)} in ${quote(arg)}${long}`);
      }
      const written = `-${letter}`;
      if (letters.length > 2 && letters[1] === '=') {
        occurrences.push({ spec, written, value: letters.slice(2) });
        letters = '';
      } else if (spec.type === 'boolean') {
        occurrences.push({ spec, written });
        letters = letters.slice(1);
      } else if (letters.length > 1) {
        occurrences.push({ spec, written, value: letters.slice(1) });
        letters = '';
      } else if (i < argv.length) {
        occurrences.push({ spec, written, value: argv[i++] });
        letters = '';
      } else {
        return fail(`flag ${quote(written)} needs a value`);
      }
    }
  }
  return { occurrences, positionals, help: false };
}

export const PFLAG_SYNTAX: FlagSyntax = { name: 'spf13/pflag', parse };
