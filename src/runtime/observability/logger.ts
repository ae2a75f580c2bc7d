import pino from 'pino';
import { readableLine } from './readable-log-line';

/**
 * Structured logs: one JSON object per line (what log pipelines want), or readable text
 * lines for development (`--log-format text`). Both carry the same fields.
 */

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = 'json' | 'text';
export type Logger = pino.Logger;

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
  const format = options.format ?? 'json';
  return pino(
    {
      level: options.level ?? 'info',
      base: options.bindings ?? {},
      timestamp: pino.stdTimeFunctions.isoTime,
      // "level":"warn" rather than pino's numeric 40: what people grep and filter on.
      formatters: { level: (label) => ({ level: label }) },
    },
    format === 'text' ? { write: (line: string) => destination.write(readableLine(line)) } : destination,
  );
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
