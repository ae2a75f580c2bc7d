/**
 * PV names in the device dialect. Upstream names a device's PV
 * `local-<node>-<device base name>` with every run of characters other than
 * `[0-9A-Za-z.]` turned into one `-`, lower-cased. We keep that name wherever the
 * API server accepts it (so upstream's PVs are adopted) and fix it where it does
 * not. Distinct devices can still map to one name (`sd_a`, `sd-a`); that is found
 * and reported, never merged.
 */
import { fnv1a32 } from './fnv1a';
import { DNS_SUBDOMAIN_MAX_LENGTH, dnsSubdomainProblem } from '../../config';

/** Upstream's rule, exactly, whether or not the result is a valid name. */
export function upstreamDevicePVName(nodeName: string, deviceBaseName: string): string {
  return `local-${nodeName}-${deviceBaseName}`.replace(/[^0-9A-Za-z.]+/g, '-').toLowerCase();
}

export interface DevicePVName {
  readonly name: string;
  /** True when upstream's name was not a valid PV name and this is our fixed one. */
  readonly fixed: boolean;
}

const HASH_LENGTH = 8;

/**
 * The PV name for a device: upstream's when valid; otherwise a valid name made
 * from it (dots only between letters or digits, no leading or trailing
 * punctuation, at most 253 characters) ending in `-` and 8 hex digits of FNV-1a
 * over node and base name. The hash is added to every fixed name, not only to
 * shortened ones: trimming alone could turn `sda_` into `sda`, another device's
 * valid name.
 */
export function devicePVName(nodeName: string, deviceBaseName: string): DevicePVName {
  const upstream = upstreamDevicePVName(nodeName, deviceBaseName);
  if (dnsSubdomainProblem(upstream) === undefined) {
    return { name: upstream, fixed: false };
  }
  const hash = fnv1a32(`${nodeName}/${deviceBaseName}`).toString(16).padStart(HASH_LENGTH, '0');
  const core = trimPunctuation(
    trimPunctuation(upstream.replace(/[.-]*\.[.-]*/g, '.')).slice(0, DNS_SUBDOMAIN_MAX_LENGTH - HASH_LENGTH - 1),
  );
  return { name: core === '' ? hash : `${core}-${hash}`, fixed: true };
}

function trimPunctuation(s: string): string {
  return s.replace(/^[.-]+|[.-]+$/g, '');
}

/** A device as naming sees it. */
export interface NameableDevice {
  /** The device path as walked (e.g. /dev/disk/by-path/pci-...). */
  readonly path: string;
  readonly baseName: string;
}

export interface NamedDevice<D extends NameableDevice> extends DevicePVName {
  readonly device: D;
}

/** Two or more devices whose names came out the same: none of them gets it. */
export interface DeviceNameCollision {
  readonly name: string;
  readonly paths: readonly string[];
}

export interface DeviceNaming<D extends NameableDevice> {
  /** Devices with a name of their own. */
  readonly named: ReadonlyArray<NamedDevice<D>>;
  /** Names that several devices came out with, each listing the devices; those devices are left unnamed. */
  readonly collisions: readonly DeviceNameCollision[];
}

/**
 * Names every device of a node. Devices that share a name are all left out and
 * reported: picking one would make which disk a PV means depend on walk order.
 */
export function assignDevicePVNames<D extends NameableDevice>(nodeName: string, devices: readonly D[]): DeviceNaming<D> {
  const byName = new Map<string, Array<NamedDevice<D>>>();
  for (const device of devices) {
    const named = { device, ...devicePVName(nodeName, device.baseName) };
    byName.set(named.name, [...(byName.get(named.name) ?? []), named]);
  }
  const named: Array<NamedDevice<D>> = [];
  const collisions: DeviceNameCollision[] = [];
  for (const [name, group] of byName) {
    if (group.length === 1) {
      named.push(group[0]);
    } else {
      collisions.push({ name, paths: group.map((g) => g.device.path).sort() });
    }
  }
  return { named, collisions };
}
