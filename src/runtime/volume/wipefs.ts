/**
 * Lists a device's signatures with `wipefs --no-act` (util-linux, libblkid's
 * low-level probe). We prefer it to `blkid -p`: wipefs reports every signature it
 * finds with its offset (a partition table and a stale filesystem, both GPT
 * headers), where blkid reports one and gives up (exit 8) on ambivalent devices.
 * `--no-act` opens the device read-only, so it works on a device in use.
 */
import { execFile } from 'node:child_process';
import type { DeviceSignature } from './signature';

/** The columns we ask for; USAGE says whether it is a filesystem, a partition table, RAID... */
const COLUMNS = 'DEVICE,OFFSET,TYPE,UUID,LABEL,USAGE';

export interface WipefsOptions {
  /** The wipefs binary. @default 'wipefs' */
  readonly command?: string;
  /** Give up after this long. @default 10000 */
  readonly timeoutMs?: number;
}

/** Runs `wipefs --no-act --json` on `devicePath`; rejects with wipefs' own message on failure. */
export function runWipefs(devicePath: string, options: WipefsOptions = {}): Promise<DeviceSignature[]> {
  const command = options.command ?? 'wipefs';
  const args = ['--no-act', '--json', '--output', COLUMNS, devicePath];
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: options.timeoutMs ?? 10_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) {
        const detail = stderr.trim() || error.message;
        reject(new Error(`${command} ${args.join(' ')} failed: ${detail}`));
        return;
      }
      try {
        resolve(parseWipefsJson(stdout));
      } catch (parseError) {
        reject(new Error(`${command} ${args.join(' ')} printed output we cannot read: ${(parseError as Error).message}`));
      }
    });
  });
}

interface WipefsRow {
  readonly offset?: unknown;
  readonly type?: unknown;
  readonly uuid?: unknown;
  readonly label?: unknown;
  readonly usage?: unknown;
}

/** Parses `wipefs --json` output. Empty output (older versions on a blank device) means no signature. */
export function parseWipefsJson(stdout: string): DeviceSignature[] {
  if (stdout.trim() === '') {
    return [];
  }
  const parsed = JSON.parse(stdout) as { signatures?: unknown };
  if (!Array.isArray(parsed.signatures)) {
    throw new Error('no "signatures" array');
  }
  return (parsed.signatures as WipefsRow[]).map((row) => {
    const offset = Number(row.offset); // a hex string such as "0x438"
    if (typeof row.type !== 'string' || !Number.isSafeInteger(offset)) {
      throw new Error(`unexpected signature entry ${JSON.stringify(row)}`);
    }
    return {
      type: row.type,
      usage: typeof row.usage === 'string' ? row.usage : 'unknown',
      offset,
      ...(typeof row.label === 'string' && row.label !== '' ? { label: row.label } : {}),
      ...(typeof row.uuid === 'string' && row.uuid !== '' ? { uuid: row.uuid } : {}),
    };
  });
}
