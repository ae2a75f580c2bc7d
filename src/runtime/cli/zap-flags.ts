/**
 * controller-runtime's zap flags (v0.23), which the device provisioner
 * registers for its logs: the level and the encoder become our log level and
 * format; the stack-trace level and the time encoding are accepted and ignored.
 */
import type { FlagSpec, FlagValue, ValueSource } from './flags';
import type { LogFormat, LogLevel } from '../observability';

export const ZAP_FLAGS: readonly FlagSpec[] = [
  { name: 'zap-log-level', type: 'string', help: 'debug, info, error, panic, or a verbosity from 1 (1 debug, 2 and more trace) (unless --log-level is given).' },
  { name: 'zap-encoder', type: 'string', choices: ['json', 'console'], help: 'json, or console for readable lines (unless --log-format is given).' },
  { name: 'zap-devel', type: 'boolean', help: 'Development logging: console lines at debug level, unless the level or encoder flags say otherwise.' },
  {
    name: 'zap-stacktrace-level',
    type: 'string',
    choices: ['info', 'error', 'panic'],
    ignored: 'errors carry their stack under "err"; other lines carry none',
  },
  {
    name: 'zap-time-encoding',
    type: 'string',
    choices: ['epoch', 'millis', 'nano', 'iso8601', 'rfc3339', 'rfc3339nano'],
    ignored: 'times are written in ISO 8601 (RFC 3339 with milliseconds)',
  },
];

const ZAP_LEVELS: Record<string, LogLevel> = { debug: 'debug', info: 'info', error: 'error', panic: 'fatal' };

/** `--zap-log-level` as our level, or an error naming the value. */
export function zapLogLevel(text: string): { level?: LogLevel; error?: string } {
  if (ZAP_LEVELS[text]) return { level: ZAP_LEVELS[text] };
  if (/^\d+$/.test(text) && Number(text) > 0) return { level: Number(text) === 1 ? 'debug' : 'trace' };
  return { error: `--zap-log-level: ${JSON.stringify(text)} is not one of debug, info, error, panic, or a whole number above 0` };
}

export interface ZapLogSettings {
  readonly level?: LogLevel;
  readonly format?: LogFormat;
  readonly errors: string[];
}

/** What the zap flags given ask for (undefined where they say nothing). */
export function zapLogSettings(values: Record<string, FlagValue>, sources: Record<string, ValueSource>): ZapLogSettings {
  const errors: string[] = [];
  const devel = sources['zap-devel'] === 'flag' && values['zap-devel'] === true;
  let level: LogLevel | undefined = devel ? 'debug' : undefined;
  if (sources['zap-log-level'] === 'flag') {
    const parsed = zapLogLevel(values['zap-log-level'] as string);
    if (parsed.error) errors.push(parsed.error);
    level = parsed.level;
  }
  let format: LogFormat | undefined = devel ? 'text' : undefined;
  if (sources['zap-encoder'] === 'flag' && values['zap-encoder'] !== undefined) format = values['zap-encoder'] === 'console' ? 'text' : 'json';
  return { level, format, errors };
}
