/**
 * Turns one JSON log line into a readable one for development:
 * `02:10:04.512 WARN  path is not a mount point  pv=local-pv-1a2b path=/mnt/disks/v1 storageClass=fast`
 *
 * Written here rather than taken from pino-pretty: a dozen lines against a transport
 * with its own worker thread and ten dependencies in the runtime image.
 */
export function readableLine(jsonLine: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : `${jsonLine}\n`;
  }
  const { time, level, msg, err, ...fields } = record;
  const clock = typeof time === 'string' ? time.replace(/^.*T/, '').replace(/Z$/, '') : String(time ?? '');
  const head = `${clock} ${String(level ?? '').toUpperCase().padEnd(5)} ${String(msg ?? '')}`;
  const pairs = Object.entries(fields).map(([k, v]) => `${k}=${formatValue(v)}`);
  const error = err as { message?: string; stack?: string } | undefined;
  if (error) pairs.push(`err=${formatValue(error.message ?? error)}`);
  const stack = error?.stack ? `\n${error.stack.split('\n').map((l) => `    ${l}`).join('\n')}` : '';
  return `${head}${pairs.length > 0 ? `  ${pairs.join(' ')}` : ''}${stack}\n`;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}
