import { createLogger, isLogLevel, LogFormat, LogLevel, volumeLogger } from '../../../src/runtime/observability/logger';
import { readableLine } from '../../../src/runtime/observability/readable-log-line';

/** A logger writing into an array of lines. */
function capture(level: LogLevel = 'info', format: LogFormat = 'json') {
  const lines: string[] = [];
  const logger = createLogger({ level, format, bindings: { node: 'worker-1' }, destination: { write: (l: string) => lines.push(l) } });
  return { logger, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('createLogger', () => {
  test('writes one JSON object per line with an ISO time, a level name and the bindings', () => {
    const { logger, lines, records } = capture();
    logger.info({ classes: 2 }, 'config loaded');
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith('\n')).toBe(true);
    const [record] = records();
    expect(record).toEqual({ level: 'info', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/), node: 'worker-1', classes: 2, msg: 'config loaded' });
  });

  test('drops lines below the configured level', () => {
    const { logger, records } = capture('warn');
    logger.info('quiet');
    logger.warn('loud');
    expect(records().map((r) => r.msg)).toEqual(['loud']);
  });

  test('serializes an error with its message and stack', () => {
    const { logger, records } = capture();
    logger.error({ err: new Error('boom') }, 'pass failed');
    const err = records()[0].err as Record<string, string>;
    expect(err.message).toBe('boom');
    expect(err.stack).toContain('Error: boom');
  });

  test('writes readable text lines in the text format', () => {
    const { logger, lines } = capture('info', 'text');
    logger.warn({ path: '/mnt/disks/a b' }, 'not a mount point');
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} WARN  not a mount point {2}node=worker-1 path="\/mnt\/disks\/a b"\n$/);
  });
});

describe('volumeLogger', () => {
  test('names the PV, path and StorageClass on every line', () => {
    const { logger, records } = capture();
    const log = volumeLogger(logger, { pv: 'local-pv-1a2b', path: '/mnt/disks/vol1', storageClass: 'fast-disks' });
    log.info('cleaning');
    log.warn('cleanup failed');
    for (const r of records()) expect(r).toMatchObject({ pv: 'local-pv-1a2b', path: '/mnt/disks/vol1', storageClass: 'fast-disks' });
  });

  test('leaves the PV out while the volume has none', () => {
    const { logger, records } = capture();
    volumeLogger(logger, { path: '/dev/sdb', storageClass: 'local-storage' }).info('device holds data');
    expect(records()[0]).not.toHaveProperty('pv');
    expect(records()[0]).toMatchObject({ path: '/dev/sdb', storageClass: 'local-storage' });
  });
});

describe('isLogLevel', () => {
  test('accepts pino\'s levels and nothing else', () => {
    expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal'].every(isLogLevel)).toBe(true);
    expect(isLogLevel('warning')).toBe(false);
    expect(isLogLevel('silent')).toBe(false);
  });
});

describe('readableLine', () => {
  test('puts time, level and message first, then the fields as key=value', () => {
    const line = readableLine('{"level":"info","time":"2026-11-22T02:10:04.512Z","msg":"PV created","pv":"local-pv-1","capacity":10737418240}\n');
    expect(line).toBe('02:10:04.512 INFO  PV created  pv=local-pv-1 capacity=10737418240\n');
  });

  test('quotes values with spaces, quotes or an equals sign, and empty ones', () => {
    const line = readableLine('{"level":"info","time":"2026-11-22T02:10:04.512Z","msg":"m","a":"x y","b":"k=v","c":"","d":{"e":1}}');
    expect(line).toBe('02:10:04.512 INFO  m  a="x y" b="k=v" c="" d={"e":1}\n');
  });

  test('puts an error\'s message among the fields and its stack indented below', () => {
    const line = readableLine(JSON.stringify({ level: 'error', time: '2026-11-22T02:10:04.512Z', msg: 'failed', err: { message: 'boom', stack: 'Error: boom\n    at x' } }));
    expect(line).toBe('02:10:04.512 ERROR failed  err=boom\n    Error: boom\n        at x\n');
  });

  test('passes a line that is not JSON through unchanged', () => {
    expect(readableLine('plain text')).toBe('plain text\n');
  });
});
