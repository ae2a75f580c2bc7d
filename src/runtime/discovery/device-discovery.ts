/**
 * Device-dialect discovery: walk deviceDir, keep the entries whose base name the
 * deviceNameFilter matches, and inspect each: a block device (or a symlink to
 * one) is a device with its exact size and what it holds; anything else that
 * matched (a broken link, a regular file, an unreadable entry) is an error device,
 * and the others go on. Two paths to one disk offer it once.
 */
import * as path from 'node:path';
import { compileDeviceNameFilter, type DeviceSpecConfig } from '../../config';
import { codeUnitOrder } from '../code-unit-order';
import {
  blockDeviceSize,
  IdentityCache,
  inspectEntry,
  probeSignatures,
  type DeviceNumber,
  type EntryInspection,
  type SignatureProbe,
  type WipefsOptions,
} from '../volume';
import { walkDeviceDir } from './device-walk';

export interface DiscoveredDevice {
  /** The path as walked (e.g. /dev/disk/by-path/pci-...): `spec.local.path`. */
  readonly path: string;
  readonly baseName: string;
  /** The device node it resolves to (e.g. /dev/sdb). */
  readonly devicePath: string;
  readonly deviceNumber: DeviceNumber;
  /** Exact size in bytes. */
  readonly capacityBytes: number;
  /** What the disk really is (volume/identity.ts), whatever path leads to it. */
  readonly identity: string;
  /** What the device holds; undefined when the caller chose not to probe it. */
  readonly signatures?: SignatureProbe;
}

/** A matched entry that cannot be offered, and why (counted in the error_devices metric). */
export interface ErrorDevice {
  readonly path: string;
  readonly reason: string;
}

export interface DeviceDiscovery {
  readonly deviceDir: string;
  readonly devices: readonly DiscoveredDevice[];
  readonly errorDevices: readonly ErrorDevice[];
  /**
   * Further paths to a disk of `devices` (udev gives a disk several names: by-id, by-path
   * with and without `.0`). Not offered, and not errors: the disk is counted once.
   */
  readonly aliases: readonly ErrorDevice[];
  /** Set when deviceDir itself cannot be listed or the filter cannot be compiled; nothing is discovered then. */
  readonly problem?: string;
}

export interface DeviceDiscoveryOptions {
  /**
   * Which devices to probe for signatures (a `wipefs` run each). Probing only
   * devices that have no PV yet keeps a pass cheap.
   * @default every device
   */
  readonly shouldProbe?: (device: Omit<DiscoveredDevice, 'signatures'>) => boolean;
  readonly wipefs?: WipefsOptions;
  /** Identities seen before (a pass over many devices reads one sysfs file each). */
  readonly identities?: IdentityCache;
}

export async function discoverDevices(
  spec: Pick<DeviceSpecConfig, 'deviceDir' | 'deviceNameFilter'>,
  options: DeviceDiscoveryOptions = {},
): Promise<DeviceDiscovery> {
  const { deviceDir } = spec;
  let filter: RegExp;
  try {
    filter = compileDeviceNameFilter(spec.deviceNameFilter);
  } catch (error) {
    return { deviceDir, devices: [], errorDevices: [], aliases: [], problem: `deviceNameFilter ${JSON.stringify(spec.deviceNameFilter)} is not a valid regular expression: ${(error as Error).message}` };
  }

  const walk = await walkDeviceDir(deviceDir);
  const rootProblem = walk.unreadable.find((u) => u.path === deviceDir);
  if (rootProblem) {
    return { deviceDir, devices: [], errorDevices: [], aliases: [], problem: `deviceDir ${JSON.stringify(deviceDir)} cannot be listed: ${rootProblem.reason}` };
  }

  const errorDevices: ErrorDevice[] = walk.unreadable.map((u) => ({
    path: u.path,
    reason: `directory ${JSON.stringify(u.path)} under deviceDir cannot be listed, so its devices are unknown: ${u.reason}`,
  }));
  const identities = options.identities ?? new IdentityCache();
  const examined = await Promise.all(
    walk.entries.filter((entry) => filter.test(path.posix.basename(entry))).map((entry) => examineDevice(entry, identities)),
  );

  const found: Array<{ device: Omit<DiscoveredDevice, 'signatures'>; viaSymlink: boolean }> = [];
  for (const result of examined) {
    if (result === undefined) continue;
    if ('reason' in result) errorDevices.push(result);
    else found.push(result);
  }

  const aliases: ErrorDevice[] = [];
  const devices = await Promise.all(
    onePathPerDisk(found, aliases).map(async (device) =>
      (options.shouldProbe ?? (() => true))(device) ? { ...device, signatures: await probeSignatures(device.path, options.wipefs) } : device,
    ),
  );
  return { deviceDir, devices, errorDevices: errorDevices.sort((a, b) => codeUnitOrder(a.path, b.path)), aliases };
}

/** A matched entry as a device, as an error device, or undefined for a symlink to a directory (not a device at all). */
async function examineDevice(
  entry: string,
  identities: IdentityCache,
): Promise<{ device: Omit<DiscoveredDevice, 'signatures'>; viaSymlink: boolean } | ErrorDevice | undefined> {
  const p = JSON.stringify(entry);
  let inspection: EntryInspection;
  try {
    inspection = inspectEntry(entry);
  } catch (error) {
    return { path: entry, reason: `cannot inspect ${p}: ${(error as Error).message}` };
  }
  if (inspection.kind === 'directory') return undefined;
  if (inspection.kind !== 'block-device') {
    return { path: entry, reason: `${p} is ${inspection.description}, not a block device` };
  }
  try {
    const capacityBytes = await blockDeviceSize(entry);
    const identity = await identities.block(inspection.deviceNumber!);
    return {
      device: {
        path: entry,
        baseName: path.posix.basename(entry),
        devicePath: inspection.resolvedPath ?? entry,
        deviceNumber: inspection.deviceNumber!,
        capacityBytes,
        identity,
      },
      viaSymlink: inspection.linkTarget !== undefined,
    };
  } catch (error) {
    return { path: entry, reason: `cannot read the size of ${p}: ${(error as Error).message}` };
  }
}

/**
 * Keeps one path per disk (the device node itself before symlinks, then the
 * first path in order) and lists the other paths as aliases: two PVs over one
 * disk would let two workloads write to it.
 */
function onePathPerDisk(
  found: ReadonlyArray<{ device: Omit<DiscoveredDevice, 'signatures'>; viaSymlink: boolean }>,
  aliases: ErrorDevice[],
): Array<Omit<DiscoveredDevice, 'signatures'>> {
  const ordered = [...found].sort((a, b) => Number(a.viaSymlink) - Number(b.viaSymlink) || codeUnitOrder(a.device.path, b.device.path));
  const kept = new Map<string, Omit<DiscoveredDevice, 'signatures'>>();
  for (const { device } of ordered) {
    const first = kept.get(device.identity);
    if (first) {
      aliases.push({
        path: device.path,
        reason: `${JSON.stringify(device.path)} is the same disk (${device.devicePath}) as ${JSON.stringify(first.path)}, which is offered instead`,
      });
    } else {
      kept.set(device.identity, device);
    }
  }
  return [...kept.values()].sort((a, b) => codeUnitOrder(a.path, b.path));
}
