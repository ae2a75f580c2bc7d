/**
 * In-process cleanup of one Released volume, through handles from start to end:
 * the path is checked (path-safety.ts), then opened once — a directory without
 * following a symlink, a block device by its node — and everything after goes
 * through that open handle, never through the name again:
 * - the identity of what the handle holds must be the one recorded on the PV
 *   (volume/identity.ts): a path that now names another disk or filesystem is refused;
 * - it must not be in use: a directory mounted elsewhere or held by a process
 *   (volume-in-use.ts), a device mounted or held open (exclusive-open.ts);
 * - then it is cleaned: a directory emptied by a handle walk (and its root given back
 *   its recorded metadata, when the caller has it), a device wiped (device dialect:
 *   zeroed whole unless its spec says `wipe: upstream-ranges`; wipe.ts) or given to
 *   the class's command as `/proc/<pid>/fd/<n>`, a path that names the checked device
 *   for as long as the command runs.
 * Run it as a process-table task, after the controller's re-check of the PV.
 */
import * as fs from 'node:fs';
import type { OutputStream } from './block-cleaner';
import { runBlockCleaner } from './block-cleaner';
import { checkDeviceNotInUse } from './exclusive-open';
import { cleanFilesystemVolume } from './filesystem-cleaner';
import { findNestedMounts } from './nested-mounts';
import { resolveVolumePath } from './path-safety';
import type { CleanTarget } from './release-decision';
import { watchForStall } from './stall-watchdog';
import { filesystemVolumeUsers } from './volume-in-use';
import { wipeDevice } from './wipe';
import { readMountTable } from '../discovery/mount-table';
import { blockDeviceIdentity, blockDeviceSize, deviceNumberOf, DirectoryHandle, handlePath, mountIdentity, openDirectory, RootMetadata } from '../volume';

export interface CleanVolumeOptions {
  /** Aborted on timeout or shutdown (the process table's signal). */
  readonly signal?: AbortSignal;
  /** Each line a cleaner command prints. */
  readonly onOutput?: (line: string, stream: OutputStream) => void;
  /** Bytes written to a device being cleaned, as they reach it. */
  readonly onWritten?: (bytes: number) => void;
  /**
   * A device cleaner (wipe, command, Job) that sends no I/O to the device for this
   * long is stopped and the cleanup fails (stall-watchdog.ts). 0 = never.
   */
  readonly stallTimeoutMs?: number;
  /**
   * Runs the class's command on the checked device somewhere else (a cleanup Job,
   * `useJobForCleaning`) instead of in this process; the device stays open here,
   * checked and held, until it returns.
   */
  readonly runCommandElsewhere?: (signal: AbortSignal | undefined) => Promise<{ ok: true } | { ok: false; reason: string }>;
  /**
   * A directory volume's root metadata as recorded when it was first offered: the emptied
   * root is made exactly that, or the cleanup fails (filesystem-cleaner.ts). Devices ignore it.
   */
  readonly rootMetadata?: RootMetadata;
}

/**
 * Why a volume was not cleaned: it is gone (`missing`), it is not what the PV
 * recorded (`identity-mismatch`), something uses it (`in-use`), it may not be
 * cleaned for another reason (`refused`), or cleaning failed (`failed`).
 */
export type NotCleanedKind = 'missing' | 'identity-mismatch' | 'in-use' | 'refused' | 'failed';

export type CleanVolumeResult =
  | {
    readonly ok: true;
    readonly kind: 'directory' | 'block-device';
    readonly cleaner: string;
    /** The identity of the volume the handle held while it was cleaned: the one to record clean. */
    readonly identity: string;
  }
  | { readonly ok: false; readonly kind: NotCleanedKind; readonly reason: string };

const notCleaned = (kind: NotCleanedKind, reason: string): CleanVolumeResult => ({ ok: false, kind, reason });
const failedWith = (target: CleanTarget, e: unknown): CleanVolumeResult =>
  notCleaned('failed', `cleanup of PV "${target.pvName}" failed: ${e instanceof Error ? e.message : String(e)}`);

/** Compares the identity of what the handle holds with the one recorded on the PV (none recorded: nothing to compare). */
function identityProblem(target: CleanTarget, current: string): string | undefined {
  if (target.identity === undefined || target.identity === current) return undefined;
  return `"${target.path}" is not the volume PV "${target.pvName}" was made for: it recorded ${target.identity}, the path now holds ${current}; not cleaned`;
}

/** Cleans the volume `target` names, refusing anything unsafe. Never throws. */
export async function cleanVolume(target: CleanTarget, options: CleanVolumeOptions = {}): Promise<CleanVolumeResult> {
  try {
    const resolved = await resolveVolumePath(target.path, target.classDir);
    if (!resolved.ok) return notCleaned(resolved.missing ? 'missing' : 'refused', resolved.reason);
    if (resolved.kind === 'directory') {
      if (target.method.kind === 'device-wipe') return notCleaned('refused', `PV "${target.pvName}": "${target.path}" is a directory, not a device`);
      return await cleanDirectory(target, resolved.path, options);
    }
    return await cleanDevice(target, resolved.path, options);
  } catch (e) {
    return failedWith(target, e);
  }
}

async function cleanDirectory(target: CleanTarget, dir: string, options: CleanVolumeOptions): Promise<CleanVolumeResult> {
  let root: DirectoryHandle;
  try {
    root = openDirectory(dir);
  } catch (e) {
    return notCleaned('refused', `"${dir}" cannot be opened as a directory without following a symlink: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  try {
    // The mount the handle was reached through must be the volume's own mount, at its own path.
    const table = await readMountTable();
    const mount = table.entries.find((e) => e.mountId === root.mountId);
    if (!mount || mount.mountPoint !== dir) {
      return notCleaned('missing', `"${target.path}" is no longer a mount point: its volume is gone (unmounted or removed), so nothing is cleaned`);
    }
    const identity = await mountIdentity(mount);
    const mismatch = identityProblem(target, identity);
    if (mismatch) return notCleaned('identity-mismatch', mismatch);
    const nested = await findNestedMounts(dir);
    if (nested.length > 0) {
      return notCleaned('in-use', `"${target.path}" has mount points inside it (${nested.join(', ')}); they must be unmounted before it can be cleaned`);
    }
    const users = filesystemVolumeUsers({
      dev: root.dev, major: mount.major, minor: mount.minor, root: mount.root, ownMountPoints: [dir, target.hostPath],
    });
    if (users.length > 0) return notCleaned('in-use', `"${target.path}" is still in use: ${users.join('; ')}; it is cleaned once nothing uses it`);
    const r = await cleanFilesystemVolume(root, { signal: options.signal, rootMetadata: options.rootMetadata });
    return r.ok ? { ok: true, kind: 'directory', cleaner: 'filesystem', identity } : notCleaned('failed', r.reason);
  } finally {
    fs.closeSync(root.fd);
  }
}

async function cleanDevice(target: CleanTarget, device: string, options: CleanVolumeOptions): Promise<CleanVolumeResult> {
  // Held open for the whole cleanup: the kernel keeps this device (and its number) while we hold it.
  let fd: number;
  try {
    fd = fs.openSync(device, fs.constants.O_RDONLY);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return notCleaned(code === 'ENOENT' || code === 'ENXIO' ? 'missing' : 'failed', `device "${device}" cannot be opened: ${code ?? String(e)}`);
  }
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (!st.isBlockDevice()) return notCleaned('refused', `"${device}" is not a block device`);
    // No medium (a pulled drive's node, a detached loop device): the disk is gone, not another one.
    if (await blockDeviceSize(handlePath(fd) as string) === 0) return notCleaned('missing', `device "${device}" has no medium (size 0): its disk is gone`);
    const identity = await blockDeviceIdentity(deviceNumberOf(st.rdev));
    const mismatch = identityProblem(target, identity);
    if (mismatch) return notCleaned('identity-mismatch', mismatch);
    const pinned = handlePath(fd) as string;
    const inUse = checkDeviceNotInUse(pinned);
    if (!inUse.ok) return notCleaned('in-use', inUse.reason.replace(pinned, target.path));

    const watch = await watchForStall({
      device: deviceNumberOf(st.rdev), stallMs: options.stallTimeoutMs ?? 0, signal: options.signal, onWritten: options.onWritten,
    });
    const outcome = await runDeviceCleaner(target, pinned, fd, identity, { ...options, signal: watch.signal })
      .catch((e: unknown) => failedWith(target, e))
      .finally(() => watch.stop());
    const stalled = watch.stalled();
    return !outcome.ok && stalled ? notCleaned('failed', `cleanup of PV "${target.pvName}" on "${target.path}" was stopped: ${stalled}`) : outcome;
  } finally {
    fs.closeSync(fd);
  }
}

/** The wipe, the class's command here, or the command elsewhere, on the checked and held device. */
async function runDeviceCleaner(target: CleanTarget, pinned: string, fd: number, identity: string,
  options: CleanVolumeOptions): Promise<CleanVolumeResult> {
  if (target.method.kind === 'device-wipe') {
    const r = await wipeDevice(pinned, { signal: options.signal, extent: target.method.wipe ?? 'full' });
    return r.ok ? { ok: true, kind: 'block-device', cleaner: 'wipe', identity } : notCleaned('failed', (r.reason ?? 'wipe failed').replace(pinned, target.path));
  }
  const command = target.method.blockCleanerCommand;
  if (options.runCommandElsewhere) {
    const elsewhere = await options.runCommandElsewhere(options.signal);
    return elsewhere.ok ? { ok: true, kind: 'block-device', cleaner: command[0] ?? '', identity } : notCleaned('failed', elsewhere.reason);
  }
  const r = await runBlockCleaner({
    command,
    // The command's own processes see our descriptor under our pid.
    device: `/proc/${process.pid}/fd/${fd}`,
    deviceName: target.path,
    timeoutMs: 0,
    signal: options.signal,
    onOutput: options.onOutput,
  });
  return r.ok ? { ok: true, kind: 'block-device', cleaner: command[0] ?? '', identity } : notCleaned('failed', r.reason ?? 'block cleaner failed');
}
