/**
 * Flags as data: each flag's type, the environment variable behind it and its
 * default, and the typed values a command line (read by its dialect's syntax,
 * see go-flag-syntax.ts and pflag-syntax.ts) and the environment resolve to,
 * with every problem named by the flag or variable it came from.
 */
import { castDuration } from './cast-duration';
import { formatGoDuration, parseGoDuration } from '../../config/duration';

export type FlagType = 'string' | 'duration' | 'number' | 'uint' | 'int' | 'boolean' | 'list' | 'severity';

export interface FlagSpec {
  readonly name: string;
  readonly type: FlagType;
  /** What it does, for --help; flags marked `ignored` are listed by name only. */
  readonly help?: string;
  /** Environment variable read when the flag is not given (an empty value counts as unset). */
  readonly env?: string;
  readonly default?: string | number | boolean | string[];
  /** Extra long names for the same value. */
  readonly aliases?: readonly string[];
  /** One letter after a single dash (pflag dialects only; Go's flag package has none). */
  readonly shorthand?: string;
  /** The values a string flag takes. */
  readonly choices?: readonly string[];
  /** A duration that must be more than 0 (a period). */
  readonly positive?: boolean;
  /** Accepted as the replaced program accepts it, with no effect here; says why (logged at debug). */
  readonly ignored?: string;
}

export type FlagValue = string | number | boolean | string[] | undefined;

/** Where a value came from. */
export type ValueSource = 'flag' | 'env' | 'default';

/** One flag as written on the command line. */
export interface FlagOccurrence {
  readonly spec: FlagSpec;
  /** The flag as written, e.g. `-v`, `--polling-interval`. */
  readonly written: string;
  /** The value's text; undefined for a boolean given without one (true). */
  readonly value?: string;
}

/** A command line read by a dialect's syntax. */
export interface SyntaxResult {
  readonly occurrences: readonly FlagOccurrence[];
  /** Arguments that are not flags, which the replaced programs ignore. */
  readonly positionals: readonly string[];
  readonly help: boolean;
  /** The command line cannot be read (unknown flag, missing value): the whole message. */
  readonly error?: string;
}

/** How a dialect splits a command line into flags, values and other arguments. */
export interface FlagSyntax {
  /** For messages, e.g. "Go's flag package". */
  readonly name: string;
  parse(specs: readonly FlagSpec[], argv: readonly string[]): SyntaxResult;
}

/**
 * How environment values are read: `plain` as the same text on the command line;
 * `viper` as the device provisioner's viper reads them (durations through
 * spf13/cast, booleans through strconv.ParseBool with anything else false).
 */
export type EnvSemantics = 'plain' | 'viper';

/** A line for the log once it exists (main writes them before the command starts). */
export interface Notice {
  readonly level: 'debug' | 'info' | 'warn';
  readonly msg: string;
  readonly fields: Record<string, unknown>;
}

export interface ResolvedFlags {
  readonly values: Record<string, FlagValue>;
  readonly sources: Record<string, ValueSource>;
  /** Each names the flag (or variable) and what is wrong with it. */
  readonly errors: string[];
  readonly notices: Notice[];
}

/** A value in double quotes, escaped, so that quotes in messages always balance. */
export function quote(text: string): string {
  return JSON.stringify(text);
}

/** The long names a spec answers to. */
export function longNames(spec: FlagSpec): string[] {
  return [spec.name, ...(spec.aliases ?? [])];
}

/** strconv.ParseBool, which both Go flag packages use. */
function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

const SEVERITIES = ['INFO', 'WARNING', 'ERROR', 'FATAL'];

/** A klog severity (name in any case, or a number) as 0 (INFO) to 3 (FATAL). */
function parseSeverity(text: string): number | undefined {
  const byName = SEVERITIES.indexOf(text.toUpperCase());
  if (byName >= 0) return byName;
  return /^[+-]?\d+$/.test(text) ? Number(text) : undefined;
}

/** One line of CSV, as pflag's string slices read it (double quotes may wrap a field). */
function csvFields(text: string): string[] | undefined {
  const fields: string[] = [];
  let i = 0;
  while (i <= text.length) {
    let field = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) return undefined;
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
      if (i < text.length && text[i] !== ',') return undefined;
    } else {
      const comma = text.indexOf(',', i);
      const end = comma < 0 ? text.length : comma;
      field = text.slice(i, end);
      if (field.includes('"')) return undefined;
      i = end;
    }
    fields.push(field);
    i++;
  }
  return fields;
}

interface Converted {
  readonly value?: FlagValue;
  readonly error?: string;
  readonly notice?: Notice;
}

function durationError(source: string, raw: string): string {
  const negative = raw.startsWith('-') && parseGoDuration(raw.slice(1)) !== undefined;
  return negative
    ? `${source}: ${quote(raw)} is negative`
    : `${source}: ${quote(raw)} is not a duration (Go syntax with a unit, e.g. 10s, 5m0s, 1h30m)`;
}

/** A duration text that names no time at all: every digit is 0. */
function isZeroDuration(text: string): boolean {
  return !/[1-9]/.test(text);
}

function convertDuration(spec: FlagSpec, raw: string, source: string, semantics: EnvSemantics): Converted {
  if (semantics === 'viper') {
    const cast = castDuration(raw);
    if (cast.ms === undefined || cast.ms <= 0) {
      return spec.positive
        ? { error: `${source}: ${quote(raw)} ${cast.how}, and an interval must be more than 0 (the device provisioner crash-looped on it); set a duration with a unit, e.g. "5m"` }
        : { value: 0 };
    }
    const notice: Notice | undefined = cast.appendedNs
      ? { level: 'warn', msg: 'duration without a unit read as nanoseconds, as the device provisioner reads it', fields: { variable: source, value: raw, readAs: cast.how } }
      : undefined;
    return { value: cast.ms, notice };
  }
  const ms = parseGoDuration(raw);
  if (ms === undefined) return { error: durationError(source, raw) };
  if (spec.positive && isZeroDuration(raw)) return { error: `${source}: ${quote(raw)} must be more than 0` };
  // Finer than a millisecond is below what timers keep: a positive period stays positive.
  return { value: spec.positive ? Math.max(ms, 1) : ms };
}

function convert(spec: FlagSpec, raw: string | undefined, source: string, semantics: EnvSemantics): Converted {
  if (spec.type === 'boolean') {
    if (raw === undefined) return { value: true };
    const b = parseGoBool(raw);
    if (b !== undefined) return { value: b };
    if (semantics === 'viper') {
      return { value: false, notice: { level: 'warn', msg: 'not a boolean; read as false, as the device provisioner reads it', fields: { variable: source, value: raw } } };
    }
    return { error: `${source}: ${quote(raw)} is not a boolean (true or false)` };
  }
  const text = raw ?? '';
  switch (spec.type) {
    case 'duration':
      return convertDuration(spec, text, source, semantics);
    case 'number': {
      const n = Number(text);
      return Number.isFinite(n) && n > 0 && text.trim() !== '' ? { value: n } : { error: `${source}: ${quote(text)} is not a positive number` };
    }
    case 'uint':
      return /^\d+$/.test(text) ? { value: Number(text) } : { error: `${source}: ${quote(text)} is not a whole number of 0 or more` };
    case 'int':
      return /^[+-]?\d+$/.test(text) ? { value: Number(text) } : { error: `${source}: ${quote(text)} is not a whole number` };
    case 'severity': {
      const s = parseSeverity(text);
      return s === undefined ? { error: `${source}: ${quote(text)} is not a severity (${SEVERITIES.join(', ')}, or 0 to 3)` } : { value: s };
    }
    case 'list': {
      const fields = csvFields(text);
      if (fields === undefined) return { error: `${source}: ${quote(text)} is not a comma-separated list (a double quote opens or closes a whole field)` };
      // Names of Kubernetes objects hold no spaces: a space after a comma is only layout.
      return { value: fields.map((f) => f.trim()).filter((f) => f !== '') };
    }
    default:
      if (spec.choices && !spec.choices.includes(text)) return { error: `${source}: ${quote(text)} is not one of ${spec.choices.join(', ')}` };
      return { value: text };
  }
}

function defaultValue(spec: FlagSpec): FlagValue {
  if (spec.type === 'duration' && typeof spec.default === 'string') return parseGoDuration(spec.default);
  return spec.default;
}

/**
 * Resolves each flag: the command line first (the last occurrence wins; list flags
 * append, as pflag's string slices do), then its environment variable when set and
 * not empty, then its default. A flag marked `ignored` that was given is noted at
 * debug level, with the reason.
 */
export function resolveFlags(specs: readonly FlagSpec[], line: SyntaxResult, env: NodeJS.ProcessEnv, semantics: EnvSemantics = 'plain'): ResolvedFlags {
  const values: Record<string, FlagValue> = {};
  const sources: Record<string, ValueSource> = {};
  const errors: string[] = [];
  const notices: Notice[] = [];
  const keep = (c: Converted): FlagValue => {
    if (c.error) errors.push(c.error);
    if (c.notice) notices.push(c.notice);
    return c.value;
  };
  for (const spec of specs) {
    const given = line.occurrences.filter((o) => o.spec === spec);
    const envText = spec.env ? env[spec.env] : undefined;
    if (given.length > 0) {
      sources[spec.name] = 'flag';
      if (spec.type === 'list') {
        values[spec.name] = given.flatMap((o) => (keep(convert(spec, o.value, o.written, 'plain')) as string[] | undefined) ?? []);
      } else {
        const last = given[given.length - 1];
        values[spec.name] = keep(convert(spec, last.value, last.written, 'plain'));
      }
    } else if (spec.env && envText !== undefined && envText !== '') {
      sources[spec.name] = 'env';
      values[spec.name] = keep(convert(spec, envText, spec.env, semantics));
    } else {
      sources[spec.name] = 'default';
      values[spec.name] = defaultValue(spec);
    }
  }
  for (const o of line.occurrences) {
    if (o.spec.ignored) notices.push({ level: 'debug', msg: 'flag accepted and ignored', fields: { flag: o.written, value: o.value ?? true, why: o.spec.ignored } });
  }
  return { values, sources, errors, notices };
}

function describeDefault(spec: FlagSpec): string {
  if (spec.default === undefined || spec.default === '' || (Array.isArray(spec.default) && spec.default.length === 0)) return '';
  if (spec.type === 'duration' && typeof spec.default === 'string') {
    return ` (default ${formatGoDuration(parseGoDuration(spec.default)!)})`;
  }
  return ` (default ${Array.isArray(spec.default) ? spec.default.join(',') : String(spec.default)})`;
}

/** Help for the flags that do something, one entry each, with the variable behind each. */
export function formatFlagHelp(specs: readonly FlagSpec[]): string {
  return specs
    .filter((s) => !s.ignored)
    .map((s) => {
      const names = [...(s.shorthand ? [`-${s.shorthand}`] : []), ...longNames(s).map((n) => `--${n}`)].join(', ');
      const env = s.env ? ` [$${s.env}]` : '';
      return `  ${names}${s.type === 'boolean' ? '' : ` <${s.type}>`}${env}\n      ${s.help ?? ''}${describeDefault(s)}`;
    })
    .join('\n');
}

/** The names of flags accepted for compatibility only, for one line of help. */
export function formatIgnoredFlags(specs: readonly FlagSpec[]): string {
  return specs.filter((s) => s.ignored).map((s) => `--${s.name}`).join(', ');
}
