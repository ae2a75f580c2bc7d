/**
 * In-process cleanup of one Released volume: check the path on the real
 * filesystem, then hand it to the cleaner for what it is — a directory is
 * emptied, a block device gets the class's command (directory dialect) or the
 * wipe (device dialect). Run it as a process-table task, after the controller's
 * re-check of the PV.
 */
import type { OutputStream } from './block-cleaner';
import { runBlockCleaner } from './block-cleaner';
import { cleanFilesystemVolume } from './filesystem-cleaner';
import { resolveVolumePath } from './path-safety';
import type { CleanTarget } from './release-decision';
import { wipeDevice } from './wipe';

export interface CleanVolumeOptions {
  /** Aborted on timeout or shutdown (the process table's signal). */
  readonly signal?: AbortSignal;
  /** Each line a cleaner command prints. */
  readonly onOutput?: (line: string, stream: OutputStream) => void;
  /** Bytes written by a wipe, as it goes. */
  readonly onWritten?: (bytes: number) => void;
}

export type CleanVolumeResult =
  | { readonly ok: true; readonly kind: 'directory' | 'block-device'; readonly cleaner: string }
  | {
    readonly ok: false;
    /** The volume is gone (path missing): not unsafe, but nothing was cleaned. */
    readonly missing: boolean;
    readonly reason: string;
  };

/** Cleans the volume `target` names, refusing anything unsafe. Never throws. */
export async function cleanVolume(target: CleanTarget, options: CleanVolumeOptions = {}): Promise<CleanVolumeResult> {
  try {
    const resolved = await resolveVolumePath(target.path, target.classDir);
    if (!resolved.ok) return resolved;

    if (resolved.kind === 'directory') {
      if (target.method.kind === 'device-wipe') {
        return { ok: false, missing: false, reason: `PV "${target.pvName}": "${target.path}" is a directory, not a device` };
      }
      const r = await cleanFilesystemVolume(resolved.path, { signal: options.signal });
      return r.ok ? { ok: true, kind: 'directory', cleaner: 'filesystem' } : { ok: false, missing: false, reason: r.reason };
    }

    if (target.method.kind === 'device-wipe') {
      const r = await wipeDevice(resolved.device, { signal: options.signal, onWritten: options.onWritten });
      return r.ok ? { ok: true, kind: 'block-device', cleaner: 'wipe' } : { ok: false, missing: false, reason: r.reason ?? 'wipe failed' };
    }
    const command = target.method.blockCleanerCommand;
    const r = await runBlockCleaner({
      command,
      device: resolved.path,
      timeoutMs: 0,
      signal: options.signal,
      onOutput: options.onOutput,
    });
    return r.ok
      ? { ok: true, kind: 'block-device', cleaner: command[0] ?? '' }
      : { ok: false, missing: false, reason: r.reason ?? 'block cleaner failed' };
  } catch (e) {
    return { ok: false, missing: false, reason: `cleanup of PV "${target.pvName}" failed: ${e instanceof Error ? e.message : String(e)}` };
  }
}
