/**
 * Which program the bin is, decided from how it was started, in this order:
 *
 * 1. an explicit subcommand as the first argument (`run`, `devices`, `plan`,
 *    `node-cleanup`) wins;
 * 2. otherwise the name it was started under, when that is a replaced program's
 *    binary (`local-provisioner`, `local-pv-provisioner`, `main`);
 * 3. otherwise its flags and environment, when they belong to exactly one
 *    dialect: a flag that only that dialect has, or a variable only its replaced
 *    program reads (MY_NODE_NAME for the Go static provisioner, `LP_*` for the
 *    device provisioner);
 * 4. otherwise (no cue, or cues of two dialects) it refuses, saying how to choose.
 *
 * Never a guess between two valid readings: rule 3 needs cues of one dialect only.
 */
import * as path from 'node:path';
import { FlagSpec, longNames, quote } from './flags';

export interface DialectDef<C extends string> {
  readonly command: C;
  /** Who speaks it, for messages: e.g. "the Go static provisioner". */
  readonly title: string;
  readonly flags: readonly FlagSpec[];
  /** Variables the replaced program itself reads: set and not empty, each names this dialect. */
  readonly envCues: readonly string[];
  /** Base names of the replaced program's binary. */
  readonly binaries: readonly string[];
  /** Chosen only by its subcommand (our own tools). */
  readonly explicitOnly?: boolean;
}

export type DialectChoice<C extends string> =
  | {
    readonly kind: 'chosen';
    readonly command: C;
    /** The arguments after the subcommand, if one was given. */
    readonly args: readonly string[];
    /** Chosen by its subcommand (not by the binary's name, flags or environment). */
    readonly explicit: boolean;
    /** Why, for the first log line. */
    readonly reason: string;
  }
  | { readonly kind: 'help' }
  | { readonly kind: 'undecided'; readonly message: string };

/** Flag names written in argv (before `--`), without dashes or values. */
function writtenFlagNames(argv: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const arg of argv) {
    if (arg === '--') break;
    const m = /^--?([^-=][^=]*)/.exec(arg);
    if (m) names.add(m[1]);
  }
  return names;
}

interface Cues {
  readonly flags: string[];
  readonly env: string[];
}

function describeCues(cues: Cues): string {
  const parts = [
    ...(cues.flags.length > 0 ? [`flag${cues.flags.length > 1 ? 's' : ''} ${cues.flags.map((f) => `--${f}`).join(', ')}`] : []),
    ...(cues.env.length > 0 ? [`environment ${cues.env.join(', ')}`] : []),
  ];
  return parts.join(' and ');
}

/** Applies the rules above; `genericName` is the bin's own name, for messages. */
export function chooseDialect<C extends string>(
  dialects: readonly DialectDef<C>[],
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  invokedAs: string,
  genericName: string,
): DialectChoice<C> {
  const first = argv[0];
  const named = dialects.find((d) => d.command === first);
  if (named) return { kind: 'chosen', command: named.command, args: argv.slice(1), explicit: true, reason: `the first argument is the subcommand ${quote(named.command)}` };
  const base = path.basename(invokedAs);
  const byBinary = dialects.find((d) => d.binaries.includes(base));
  if (byBinary) {
    return { kind: 'chosen', command: byBinary.command, args: argv, explicit: false, reason: `started as ${quote(base)}, ${byBinary.title}'s binary` };
  }
  if (first === 'help' || first === '--help' || first === '-h' || first === '-help') return { kind: 'help' };

  const candidates = dialects.filter((d) => !d.explicitOnly);
  const written = writtenFlagNames(argv);
  const cued = candidates
    .map((d) => {
      const others = new Set(candidates.filter((o) => o !== d).flatMap((o) => o.flags.flatMap(longNames)));
      const flags = d.flags.flatMap(longNames).filter((n) => written.has(n) && !others.has(n));
      const envCues = d.envCues.filter((v) => (env[v] ?? '') !== '');
      return { dialect: d, cues: { flags, env: envCues } };
    })
    .filter((c) => c.cues.flags.length + c.cues.env.length > 0);

  const how = 'Pass the subcommand as the first argument '
    + `(${candidates.map((d) => quote(d.command)).join(', ')}; in a manifest: args: ["${candidates[0].command}", ...]), `
    + 'or start the bin under the replaced program\'s name '
    + `(${candidates.filter((d) => d.binaries.length > 0).map((d) => `${quote(`/${d.binaries[0]}`)} for ${d.title}`).join(', ')}).`;
  if (cued.length === 1) {
    const [{ dialect, cues }] = cued;
    return {
      kind: 'chosen',
      command: dialect.command,
      args: argv,
      explicit: false,
      reason: `no subcommand, and ${describeCues(cues)} belong${cues.flags.length + cues.env.length > 1 ? '' : 's'} only to ${dialect.title}`,
    };
  }
  const started = `started as ${quote(base)}${base === genericName ? '' : ' (not a replaced program\'s binary name)'} with no subcommand`;
  if (cued.length === 0) {
    return { kind: 'undecided', message: `${genericName}: ${started}, and no flag or environment variable says which program to be. ${how}` };
  }
  const readings = cued.map((c) => `  ${c.dialect.title} (${c.dialect.command}): ${describeCues(c.cues)}`).join('\n');
  return { kind: 'undecided', message: `${genericName}: ${started}, and its flags and environment fit more than one program:\n${readings}\n${how}` };
}
