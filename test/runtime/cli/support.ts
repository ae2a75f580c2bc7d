import { CommandOptions, parseCommandLine, ParseOutcome } from '../../../src/runtime/cli/commands';
import type { Notice } from '../../../src/runtime/cli/flags';

type Outcome<K extends ParseOutcome['kind']> = Extract<ParseOutcome, { kind: K }>;

function outcome<K extends ParseOutcome['kind']>(kind: K, argv: string[], env: NodeJS.ProcessEnv, invokedAs?: string): Outcome<K> {
  const out = parseCommandLine(argv, env, invokedAs);
  if (out.kind !== kind) throw new Error(`expected ${kind}, got ${out.kind}: ${JSON.stringify(out)}`);
  return out as Outcome<K>;
}

/** The options the command line resolves to; fails the test on an error or help. */
export function options(argv: string[], env: NodeJS.ProcessEnv = {}, invokedAs?: string): CommandOptions {
  return outcome('options', argv, env, invokedAs).options;
}

/** The options of `command`; fails the test when the command line resolves to another. */
export function optionsOf<C extends CommandOptions['command']>(command: C, argv: string[], env: NodeJS.ProcessEnv = {}, invokedAs?: string): Extract<CommandOptions, { command: C }> {
  const out = options(argv, env, invokedAs);
  if (out.command !== command) throw new Error(`expected ${command}, got ${out.command}`);
  return out as Extract<CommandOptions, { command: C }>;
}

/** The whole outcome of a command line that resolves (options, reason, notices). */
export function resolved(argv: string[], env: NodeJS.ProcessEnv = {}, invokedAs?: string): Outcome<'options'> {
  return outcome('options', argv, env, invokedAs);
}

/** The notices at `level`, as { msg, ...fields }. */
export function notices(argv: string[], env: NodeJS.ProcessEnv = {}, level: Notice['level'] = 'debug', invokedAs?: string): Record<string, unknown>[] {
  return resolved(argv, env, invokedAs).notices.filter((n) => n.level === level).map((n) => ({ msg: n.msg, ...n.fields }));
}

/** The message of a command line that is refused; fails the test otherwise. */
export function error(argv: string[], env: NodeJS.ProcessEnv = {}, invokedAs?: string): string {
  return outcome('error', argv, env, invokedAs).message;
}

/** Help text; fails the test otherwise. */
export function help(argv: string[], env: NodeJS.ProcessEnv = {}, invokedAs?: string): string {
  return outcome('help', argv, env, invokedAs).text;
}

/** Every double quote and every single quote (apostrophes inside words aside) in the text is paired. */
export function quotesBalance(text: string): boolean {
  const count = (t: string, q: string) => [...t].filter((c) => c === q).length;
  return count(text, '"') % 2 === 0 && count(text.replace(/(?<=\w)'(?=\w)/g, ''), '\'') % 2 === 0;
}
