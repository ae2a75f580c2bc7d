import { readableLine } from './readable-log-line';

/**
 * Structured logs: one JSON object per line (what log pipelines want), or readable text
 * lines for development (`--log-format text`). Both carry the same fields. The lines
 * are pino's (level as a name, ISO time, bindings, fields, `msg`, an error under `err`
 * with its type, message and stack), written by a few dozen lines of our own.
 */

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = 'json' | 'text';

/** One log method: fields and a message, or a message alone; an Error as the fields goes under `err`. */
export interface LogFn {
  (fields: object, message?: string): void;
  (message: string): void;
}

export interface Logger {
  readonly level: LogLevel;
  readonly trace: LogFn;
  readonly debug: LogFn;
  readonly info: LogFn;
  readonly warn: LogFn;
  readonly error: LogFn;
  readonly fatal: LogFn;
  /** A logger whose every line carries `bindings` too. */
  child(bindings: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  /** @default "info" */
  readonly level?: LogLevel;
  /** @default "json" */
  readonly format?: LogFormat;
  /** Fields on every line, e.g. `{ node: 'worker-1' }`. @default {} */
  readonly bindings?: Record<string, unknown>;
  /** Where lines go. @default process.stdout */
  readonly destination?: { write(line: string): unknown };
}

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? process.stdout;
  const write = options.format === 'text' ? (line: string) => destination.write(readableLine(line)) : (line: string) => destination.write(line);
  return lineLogger(options.level ?? 'info', options.bindings ?? {}, write);
}

function lineLogger(level: LogLevel, bindings: Record<string, unknown>, write: (line: string) => void): Logger {
  const log = (at: LogLevel, fieldsOrMessage: object | string, message?: string): void => {
    let fields: object = fieldsOrMessage as object;
    let msg = message;
    if (typeof fieldsOrMessage === 'string') {
      fields = {};
      msg = fieldsOrMessage;
    } else if (fieldsOrMessage instanceof Error) {
      fields = { err: fieldsOrMessage };
      msg ??= fieldsOrMessage.message;
    }
    const record: Record<string, unknown> = { level: at, time: new Date().toISOString(), ...bindings, ...fields };
    if (record.err !== undefined) record.err = serializeError(record.err);
    if (msg !== undefined) record.msg = msg;
    write(`${stringify(record)}\n`);
  };
  const threshold = LOG_LEVELS.indexOf(level);
  const methods = Object.fromEntries(LOG_LEVELS.map((at): [LogLevel, LogFn] => [at,
    LOG_LEVELS.indexOf(at) < threshold ? () => {} : (fieldsOrMessage: object | string, message?: string) => log(at, fieldsOrMessage, message)]));
  return {
    ...methods as Record<LogLevel, LogFn>,
    level,
    child: (more) => lineLogger(level, { ...bindings, ...more }, write),
  };
}

/** An Error as pino writes one: type, message, stack, its own fields, and its cause. */
function serializeError(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return err;
  const out: Record<string, unknown> = { type: err.constructor?.name ?? err.name, message: err.message, stack: err.stack };
  for (const [key, value] of Object.entries(err)) if (!(key in out)) out[key] = value;
  if (err.cause !== undefined && depth < 5) out.cause = serializeError(err.cause, depth + 1);
  return out;
}

/** JSON that never throws: a cycle becomes "[Circular]", a BigInt its decimal string. */
function stringify(record: Record<string, unknown>): string {
  try {
    return JSON.stringify(record);
  } catch {
    const seen = new WeakSet<object>();
    return JSON.stringify(record, (_key, value: unknown) => {
      if (typeof value === 'bigint') return value.toString();
      if (value && typeof value === 'object') {
        if (seen.has(value)) return '[Circular]';
        seen.add(value);
      }
      return value;
    });
  }
}

/** The fields that name a volume in every log line about it. */
export interface VolumeFields {
  /** PV name; omit while the volume has none yet. */
  readonly pv?: string;
  /** `spec.local.path` (host path). */
  readonly path: string;
  readonly storageClass: string;
}

/** A child logger whose every line names the volume's PV, path and StorageClass. */
export function volumeLogger(logger: Logger, volume: VolumeFields): Logger {
  return logger.child({ pv: volume.pv, path: volume.path, storageClass: volume.storageClass });
}
