/**
 * A small declarative flag parser with the Go `flag` package's conventions
 * (`-name value`, `--name=value`, booleans as `--name` or `--name=false`) and an
 * environment variable behind each flag, because both systems we replace are
 * configured that way and their users' manifests pass flags and env unchanged.
 */
import { parseArgs } from 'node:util';
import { formatGoDuration, parseGoDuration } from '../../config';

export type FlagType = 'string' | 'duration' | 'number' | 'boolean' | 'list';

export interface FlagSpec {
  readonly name: string;
  readonly type: FlagType;
  readonly help: string;
  /** Environment variable read when the flag is not given. */
  readonly env?: string;
  readonly default?: string | number | boolean | string[];
  /** Extra flag names accepted for the same value (other dialects' spellings). */
  readonly aliases?: string[];
}

export type FlagValue = string | number | boolean | string[] | undefined;

export interface ParsedFlags {
  readonly values: Record<string, FlagValue>;
  readonly positionals: string[];
  /** Each names the flag (or variable) and what is wrong with it. */
  readonly errors: string[];
  /** The command line itself could not be read (unknown flag, missing value). */
  readonly syntaxError?: string;
  readonly help: boolean;
}

/** Go's flag package accepts `-name`; Node's parser wants `--name`. */
function normalizeDashes(argv: readonly string[]): string[] {
  return argv.map((a) => (/^-[a-zA-Z][a-zA-Z0-9-]+(=.*)?$/.test(a) ? `-${a}` : a));
}

function convert(spec: FlagSpec, raw: string | boolean, source: string): { value?: FlagValue; error?: string } {
  switch (spec.type) {
    case 'boolean': {
      if (typeof raw === 'boolean') return { value: raw };
      const v = raw.toLowerCase();
      if (['1', 't', 'true', 'yes'].includes(v)) return { value: true };
      if (['0', 'f', 'false', 'no', ''].includes(v)) return { value: false };
      return { error: `${source}: "${raw}" is not a boolean (true or false)` };
    }
    case 'duration': {
      const ms = parseGoDuration(String(raw));
      return ms === undefined
        ? { error: `${source}: "${raw}" is not a duration (Go syntax, e.g. 10s, 5m0s, 1h30m)` }
        : { value: ms };
    }
    case 'number': {
      const n = Number(raw);
      return Number.isFinite(n) && n > 0 && String(raw).trim() !== ''
        ? { value: n }
        : { error: `${source}: "${raw}" is not a positive number` };
    }
    case 'list':
      return { value: String(raw).split(',').map((s) => s.trim()).filter((s) => s !== '') };
    default:
      return { value: String(raw) };
  }
}

function defaultValue(spec: FlagSpec): FlagValue {
  if (spec.type === 'duration' && typeof spec.default === 'string') return parseGoDuration(spec.default);
  return spec.default;
}

/** Parses argv (without node and script) against the specs, then the environment. */
export function parseFlags(specs: readonly FlagSpec[], argv: readonly string[], env: NodeJS.ProcessEnv): ParsedFlags {
  const options: Record<string, { type: 'string' | 'boolean'; multiple: boolean }> = {
    help: { type: 'boolean', multiple: false },
    h: { type: 'boolean', multiple: false },
  };
  for (const spec of specs) {
    for (const name of [spec.name, ...(spec.aliases ?? [])]) {
      options[name] = { type: spec.type === 'boolean' ? 'boolean' : 'string', multiple: false };
    }
  }
  // Go's flag package takes `--name=false` for a boolean; Node's parser takes no value there,
  // so such flags are taken out here and their values set after parsing.
  const booleanNames = new Set(specs.filter((spec) => spec.type === 'boolean').flatMap((spec) => [spec.name, ...(spec.aliases ?? [])]));
  const explicitBooleans = new Map<string, string>();
  const args = normalizeDashes(argv).filter((arg) => {
    const m = /^--([^=]+)=(.*)$/.exec(arg);
    if (!m || !booleanNames.has(m[1])) return true;
    explicitBooleans.set(m[1], m[2]);
    return false;
  });
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    return { values: {}, positionals: [], errors: [], syntaxError: (e as Error).message, help: false };
  }
  for (const [name, value] of explicitBooleans) parsed.values[name] = value;
  const errors: string[] = [];
  const values: Record<string, FlagValue> = {};
  for (const spec of specs) {
    const given = [spec.name, ...(spec.aliases ?? [])].find((n) => parsed.values[n] !== undefined);
    let result: { value?: FlagValue; error?: string };
    if (given !== undefined) {
      result = convert(spec, parsed.values[given] as string | boolean, `--${given}`);
    } else if (spec.env && env[spec.env] !== undefined) {
      result = convert(spec, env[spec.env] as string, spec.env);
    } else {
      result = { value: defaultValue(spec) };
    }
    if (result.error) errors.push(result.error);
    values[spec.name] = result.value;
  }
  return { values, positionals: parsed.positionals, errors, help: Boolean(parsed.values.help || parsed.values.h) };
}

function describeDefault(spec: FlagSpec): string {
  if (spec.default === undefined || spec.default === '') return '';
  if (spec.type === 'duration' && typeof spec.default === 'string') {
    return ` (default ${formatGoDuration(parseGoDuration(spec.default)!)})`;
  }
  return ` (default ${Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default)})`;
}

/** Help text in the style of Go's flag package, with each flag's variable. */
export function formatFlagHelp(specs: readonly FlagSpec[]): string {
  return specs
    .map((s) => {
      const names = [s.name, ...(s.aliases ?? [])].map((n) => `--${n}`).join(', ');
      const env = s.env ? ` [$${s.env}]` : '';
      return `  ${names}${s.type === 'boolean' ? '' : ` <${s.type}>`}${env}\n      ${s.help}${describeDefault(s)}`;
    })
    .join('\n');
}
