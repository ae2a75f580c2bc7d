/**
 * Refusing a block device that is in use, before anything writes to it.
 *
 * Two checks, because the kernel offers one and it is not enough:
 * - `open(O_EXCL)` on a block device claims it; it fails with EBUSY while the
 *   device is mounted, swapped on, part of a device-mapper / md / LVM stack, or
 *   claimed by another exclusive opener (mkfs, wipefs, blkdiscard, another wipe);
 * - a plain `open` by another process (a VM, a database on the raw device, a
 *   shell's `exec 3<>/dev/sdb`) does not claim anything, so the process table is
 *   searched too: any process we can see with an fd on the same device number
 *   holds it. (A container without the host's PID namespace sees only its own
 *   processes; the exclusive claim is the check that always sees the kernel.)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export type ExclusiveOpen =
  | { readonly ok: true; readonly fd: number }
  | { readonly ok: false; readonly reason: string };

export interface ExclusiveOpenOptions {
  /** Open for writing (the wiper) rather than for reading only (a check). @default false */
  readonly write?: boolean;
  /** Add O_DIRECT (the wiper's aligned writes). @default false */
  readonly direct?: boolean;
  /** Where to look for other processes' open files. @default '/proc' */
  readonly procRoot?: string;
}

function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Opens `device` exclusively and checks that no other visible process has it
 * open. On success the caller owns `fd` and must close it; the device stays
 * claimed until then.
 */
export function openDeviceExclusively(device: string, options: ExclusiveOpenOptions = {}): ExclusiveOpen {
  const c = fs.constants;
  // eslint-disable-next-line no-bitwise -- open(2) flags are a bit set
  const flags = (options.write ? c.O_RDWR : c.O_RDONLY) | c.O_EXCL | (options.direct ? c.O_DIRECT : 0);
  let fd: number;
  try {
    fd = fs.openSync(device, flags);
  } catch (e) {
    if (code(e) === 'EBUSY') {
      return { ok: false, reason: `device "${device}" is in use (mounted, or claimed by another program or device stack); refusing to touch it` };
    }
    return { ok: false, reason: `device "${device}" cannot be opened exclusively: ${code(e) ?? String(e)}` };
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isBlockDevice()) {
      fs.closeSync(fd);
      return { ok: false, reason: `"${device}" is not a block device` };
    }
    const holders = processesHoldingDevice(st.rdev, options.procRoot ?? '/proc', process.pid);
    if (holders.length > 0) {
      fs.closeSync(fd);
      return { ok: false, reason: `device "${device}" is held open by process ${holders.map((h) => `${h.pid} (${h.command})`).join(', ')}; refusing to touch it` };
    }
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
  return { ok: true, fd };
}

/** Opens `device` exclusively, checks it is not in use, and closes it again. */
export function checkDeviceNotInUse(device: string, options: Pick<ExclusiveOpenOptions, 'procRoot'> = {}): { ok: true } | { ok: false; reason: string } {
  const opened = openDeviceExclusively(device, options);
  if (!opened.ok) return opened;
  fs.closeSync(opened.fd);
  return { ok: true };
}

export interface DeviceHolder {
  readonly pid: number;
  readonly command: string;
}

/**
 * Visible processes with an open file on block device `rdev`, except `ownPid` (this
 * agent holds the device it checks, and claims it). Processes that vanish or deny us
 * while we look are skipped.
 */
export function processesHoldingDevice(rdev: number, procRoot: string, ownPid?: number): DeviceHolder[] {
  const holders: DeviceHolder[] = [];
  for (const pidName of fs.readdirSync(procRoot)) {
    if (!/^\d+$/.test(pidName)) continue;
    const pid = Number(pidName);
    if (pid === ownPid) continue;
    const fdDir = path.join(procRoot, pidName, 'fd');
    let fds: string[];
    try {
      fds = fs.readdirSync(fdDir);
    } catch {
      continue;
    }
    for (const fdName of fds) {
      let st: fs.Stats;
      try {
        st = fs.statSync(path.join(fdDir, fdName));
      } catch {
        continue;
      }
      if (st.isBlockDevice() && st.rdev === rdev) {
        holders.push({ pid, command: commandOf(procRoot, pidName) });
        break;
      }
    }
  }
  return holders;
}

/** The program a process runs (its argv[0]'s base name; threads renaming themselves make `comm` misleading). */
function commandOf(procRoot: string, pid: string): string {
  try {
    const argv0 = fs.readFileSync(path.join(procRoot, pid, 'cmdline'), 'utf8').split('\0')[0];
    return argv0 ? path.basename(argv0) : fs.readFileSync(path.join(procRoot, pid, 'comm'), 'utf8').trim();
  } catch {
    return '?';
  }
}
