/**
 * The stable identity of a volume: what lets us tell, later and after a reboot,
 * whether the disk or filesystem at a path is still the one a PV was made for.
 *
 * Names move. Kernel names (`/dev/sdb`) follow probe order, `/dev/disk/by-path`
 * follows the port, a udev link or an fstab line can point somewhere else after a
 * re-plug. An identity is recorded on each PV when it is created, and compared
 * with the identity of whatever the path names before anything is wiped and at
 * every discovery. It is a string `<kind>:<value>`, from the most stable source the
 * kernel offers for the device, in this order:
 *
 * - `partition:<start sector>@<identity of its disk>`;
 * - `dm:<uuid>` (LVM and other device-mapper devices), `loop:<backing file>@<offset>`;
 * - `wwid:<id>` (SCSI VPD 0x83, NVMe namespace id), `serial:<model>/<serial>`;
 * - `devnum:<major>:<minor>/<size>`, the fallback: stable only until the next reboot
 *   or re-plug, so a mismatch after one is refused like any other.
 *
 * A filesystem volume (a mount point) is `fs:<root in its filesystem>@<identity of
 * the device behind the filesystem>`, or for a filesystem without a block device
 * (tmpfs, overlay) `mount:<fs type>:<major>:<minor>:<root>`.
 *
 * Only sysfs is read (present in every privileged container; the udev database
 * often is not), so an identity computed at creation and one computed later in the
 * same deployment come from the same sources.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type DeviceNumber, deviceNumberOf, formatDeviceNumber } from './device-number';

export interface IdentityOptions {
  /** @default '/sys' */
  readonly sysfsRoot?: string;
}

async function readAttribute(dir: string, name: string): Promise<string | undefined> {
  try {
    const value = (await fs.promises.readFile(path.join(dir, name), 'utf8')).trim();
    return value === '' ? undefined : value;
  } catch {
    return undefined;
  }
}

function parseDeviceNumber(text: string | undefined): DeviceNumber | undefined {
  const m = /^(\d+):(\d+)$/.exec(text ?? '');
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/**
 * The identity of the block device `device` (major:minor). Throws only when sysfs
 * does not know the device at all (it is gone).
 */
export async function blockDeviceIdentity(device: DeviceNumber, options: IdentityOptions = {}): Promise<string> {
  const sysfsRoot = options.sysfsRoot ?? '/sys';
  const number = formatDeviceNumber(device);
  let dir: string;
  try {
    dir = await fs.promises.realpath(path.join(sysfsRoot, 'dev', 'block', number));
  } catch (error) {
    throw new Error(`block device ${number} is not known to the kernel (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const attr = (name: string) => readAttribute(dir, name);

  if (await attr('partition') !== undefined) {
    const disk = parseDeviceNumber(await readAttribute(path.dirname(dir), 'dev'));
    const start = await attr('start');
    if (disk && start !== undefined) return `partition:${start}@${await blockDeviceIdentity(disk, options)}`;
  }
  const dmUuid = await attr('dm/uuid');
  if (dmUuid) return `dm:${dmUuid}`;
  const backingFile = await attr('loop/backing_file');
  if (backingFile) return `loop:${backingFile}@${await attr('loop/offset') ?? '0'}`;
  const wwid = await attr('wwid') ?? await attr('device/wwid');
  if (wwid) return `wwid:${wwid.replace(/\s+/g, ' ')}`;
  const serial = await attr('serial') ?? await attr('device/serial');
  if (serial) return `serial:${(await attr('device/model') ?? '').replace(/\s+/g, ' ')}/${serial}`;
  return `devnum:${number}/${await attr('size') ?? '?'}`;
}

/** What the mount table says of a mount (a line of /proc/self/mountinfo has these fields). */
export interface MountSource {
  readonly major: number;
  readonly minor: number;
  /** The directory of the source filesystem that is mounted. */
  readonly root: string;
  readonly fsType: string;
  readonly source: string;
}

/**
 * The identity of the filesystem volume mounted as `entry`: the device behind it
 * and the directory of that filesystem it shows. `deviceIdentity` names the device
 * (IdentityCache passes its cached lookup).
 */
export async function mountIdentity(
  entry: MountSource,
  options: IdentityOptions = {},
  deviceIdentity: (device: DeviceNumber) => Promise<string> = (device) => blockDeviceIdentity(device, options),
): Promise<string> {
  if (entry.major !== 0) {
    return `fs:${entry.root}@${await deviceIdentity({ major: entry.major, minor: entry.minor })}`;
  }
  // btrfs and friends report an anonymous device number; their source names the disk.
  if (entry.source.startsWith('/dev/')) {
    try {
      const st = await fs.promises.stat(entry.source, { bigint: true });
      if (st.isBlockDevice()) {
        return `fs:${entry.root}@${await deviceIdentity(deviceNumberOf(st.rdev))}`;
      }
    } catch {
      // the source is not visible here: fall back to what the mount table says
    }
  }
  return `mount:${entry.fsType}:${entry.major}:${entry.minor}:${entry.root}`;
}

/** True when an identity can only be trusted until the next reboot or re-plug. */
export function isWeakIdentity(identity: string): boolean {
  return identity.startsWith('devnum:') || identity.startsWith('mount:');
}

/** A mount as the table lists it, with its id and, when read, its disk's sequence number (mountInstanceKey). */
export interface MountInstance extends MountSource {
  readonly mountId: number;
  readonly diskSequence?: string;
}

/**
 * The kernel's sequence number of the disk behind `device` (its `diskseq`; a partition's
 * is its disk's): a new one each time a disk is attached, never reused in a boot. Undefined
 * without one (kernels before 5.15). Read synchronously: a sysfs attribute is in memory.
 */
export function diskSequence(device: DeviceNumber, sysfsRoot = '/sys'): string | undefined {
  // Not path.join: `..` must be resolved by the kernel, through the device's sysfs link.
  const dir = `${sysfsRoot}/dev/block/${formatDeviceNumber(device)}`;
  const read = (file: string) => {
    try {
      return fs.readFileSync(file, 'utf8').trim() || undefined;
    } catch {
      return undefined;
    }
  };
  return read(`${dir}/diskseq`) ?? (read(`${dir}/partition`) !== undefined ? read(`${dir}/../diskseq`) : undefined);
}

/**
 * One mount as long as it lives: its id with its device, root and the disk's sequence
 * number. An id is reused after an unmount and a device number after a detach, so a disk
 * detached and another attached under its number, then mounted at the same path, matches
 * every field of the table; only `diskSequence` (set by discovery's mountTableReader) tells
 * them apart. Without it (an older kernel), a key only spares work: the cleaner reads the
 * identity afresh.
 */
export function mountInstanceKey(entry: MountInstance): string {
  return `${entry.mountId}:${entry.major}:${entry.minor}:${entry.root}@${entry.diskSequence ?? ''}`;
}

/**
 * Identities of the devices and mounts seen so far, so a pass over many volumes
 * reads one sysfs file per device instead of a dozen. A device is known by its
 * number and its `diskseq` (the kernel numbers every disk it attaches, never
 * twice in a boot), so a number reused by another disk is read afresh; a mount by
 * mountInstanceKey.
 */
export class IdentityCache {
  private readonly devices = new Map<string, string>();
  /** Looks in progress, by device number: the many mounts of one device examined at once (a pass) share one. */
  private readonly looking = new Map<string, Promise<string>>();
  private readonly mounts = new Map<string, string>();

  constructor(private readonly options: IdentityOptions = {}) {}

  block(device: DeviceNumber): Promise<string> {
    const number = formatDeviceNumber(device);
    let look = this.looking.get(number);
    if (look === undefined) {
      look = this.lookUp(device, number).finally(() => this.looking.delete(number));
      this.looking.set(number, look);
    }
    return look;
  }

  async mount(entry: MountInstance): Promise<string> {
    const key = mountInstanceKey(entry);
    let identity = this.mounts.get(key);
    if (identity === undefined) {
      identity = await mountIdentity(entry, this.options, (device) => this.block(device));
      this.mounts.set(key, identity);
    }
    return identity;
  }

  private async lookUp(device: DeviceNumber, number: string): Promise<string> {
    const seq = await readAttribute(path.join(this.options.sysfsRoot ?? '/sys', 'dev', 'block', number), 'diskseq');
    // Without diskseq (older kernels) nothing tells a reused number: read it every time.
    if (seq === undefined) return blockDeviceIdentity(device, this.options);
    const key = `${number}@${seq}`;
    let identity = this.devices.get(key);
    if (identity === undefined) {
      identity = await blockDeviceIdentity(device, this.options);
      for (const k of this.devices.keys()) if (k.startsWith(`${number}@`)) this.devices.delete(k);
      this.devices.set(key, identity);
    }
    return identity;
  }

  /** Forgets mounts no longer in the table. */
  retainMounts(liveIds: ReadonlySet<number>): void {
    for (const key of this.mounts.keys()) if (!liveIds.has(Number(key.split(':')[0]))) this.mounts.delete(key);
  }
}
