/**
 * The mount table as this process sees it (/proc/self/mountinfo). A directory
 * is a Filesystem volume only when it is exactly a mount point, which is what
 * tells a real local volume from a stray directory. Re-reading it costs one
 * small file read, so each discovery pass takes a fresh one.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { deviceNumberOf, diskSequence, type DeviceNumber } from '../volume';

export const MOUNTINFO_PATH = '/proc/self/mountinfo';

/** One line of mountinfo (see proc(5)). */
export interface MountEntry {
  readonly mountId: number;
  readonly parentId: number;
  readonly major: number;
  readonly minor: number;
  /** The directory of the source filesystem that is mounted (a bind mount's subdirectory). */
  readonly root: string;
  /** Where it is mounted, relative to this process's root. */
  readonly mountPoint: string;
  readonly mountOptions: string;
  readonly fsType: string;
  /** The device or other source, e.g. /dev/sdb1. */
  readonly source: string;
  readonly superOptions: string;
  /** The diskseq of the disk behind it, when mountTableReader read one (volume/identity.ts diskSequence). */
  readonly diskSequence?: string;
}

export interface MountTable {
  readonly entries: readonly MountEntry[];
  /** The topmost mount at each mount point (the last of its lines), so a lookup costs no scan of the table. */
  readonly mountPoints: ReadonlyMap<string, MountEntry>;
}

/** Undoes the kernel's octal escapes of space, tab, newline and backslash (`\040`). */
export function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * Parses mountinfo text. A malformed line is an error naming the line: a mount
 * table we cannot read must not look like one without mounts.
 */
export function parseMountInfo(text: string): MountTable {
  const entries: MountEntry[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const fields = line.split(' ');
    const separator = fields.indexOf('-', 6);
    const deviceNumber = /^(\d+):(\d+)$/.exec(fields[2] ?? '');
    if (fields.length < 10 || separator < 0 || fields.length < separator + 4 || !deviceNumber) {
      throw new Error(`mountinfo line ${index + 1} is not in the expected format: ${JSON.stringify(line)}`);
    }
    entries.push({
      mountId: Number(fields[0]),
      parentId: Number(fields[1]),
      major: Number(deviceNumber[1]),
      minor: Number(deviceNumber[2]),
      root: unescapeMountField(fields[3]),
      mountPoint: unescapeMountField(fields[4]),
      mountOptions: fields[5],
      fsType: unescapeMountField(fields[separator + 1]),
      source: unescapeMountField(fields[separator + 2]),
      superOptions: fields[separator + 3],
    });
  });
  return { entries, mountPoints: new Map(entries.map((e) => [e.mountPoint, e])) };
}

/** Reads and parses the mount table (of this process, unless `file` says otherwise). */
export async function readMountTable(file = MOUNTINFO_PATH): Promise<MountTable> {
  return parseMountInfo(await fs.promises.readFile(file, 'utf8'));
}

/**
 * A reader of the mount table that parses only when the text changed (an idle node's never
 * does), and returns the same table while neither the text nor the disks behind it changed.
 * Each mount of a disk carries the disk's diskseq: a disk detached, another attached under
 * its number and mounted at the same path under a reused mount id leaves the text as it
 * was, but not the table.
 */
export function mountTableReader(
  file = MOUNTINFO_PATH,
  sequenceOf: (device: DeviceNumber) => string | undefined = (device) => diskSequence(device),
): () => Promise<MountTable> {
  let last: { readonly text: string; readonly parsed: MountTable; readonly sequences: string; readonly table: MountTable } | undefined;
  return async () => {
    const text = await fs.promises.readFile(file, 'utf8');
    const parsed = last?.text === text ? last.parsed : parseMountInfo(text);
    // One sysfs read per disk, not per mount.
    const byDevice = new Map<string, string | undefined>();
    for (const e of parsed.entries) {
      const disk = diskOf(e);
      if (disk === undefined || byDevice.has(disk)) continue;
      const device = deviceOf(disk, e);
      byDevice.set(disk, device && sequenceOf(device));
    }
    const sequences = [...byDevice].join(' ');
    if (last?.parsed === parsed && last.sequences === sequences) return last.table;
    last = { text, parsed, sequences, table: withDiskSequences(parsed, byDevice) };
    return last.table;
  };
}

/**
 * The disk a mount is on: its device number, or for a filesystem with an anonymous one
 * (major 0: btrfs and the like) the device its source names, as volume/identity.ts takes
 * the identity of such a mount from it. Undefined for a filesystem without a disk (tmpfs).
 */
function diskOf(e: MountEntry): string | undefined {
  // Only /dev is looked at: a stat elsewhere could wait on a hung network filesystem.
  return e.major !== 0 ? `${e.major}:${e.minor}` : e.source.startsWith('/dev/') ? e.source : undefined;
}

/** The device number of a disk from diskOf; none for a source this container cannot see. */
function deviceOf(disk: string, e: MountEntry): DeviceNumber | undefined {
  if (e.major !== 0) return e;
  try {
    const st = fs.statSync(disk, { bigint: true });
    return st.isBlockDevice() ? deviceNumberOf(st.rdev) : undefined;
  } catch {
    return undefined;
  }
}

function withDiskSequences(table: MountTable, byDevice: ReadonlyMap<string, string | undefined>): MountTable {
  const entries = table.entries.map((e) => {
    const disk = diskOf(e);
    const sequence = disk === undefined ? undefined : byDevice.get(disk);
    return sequence === undefined ? e : { ...e, diskSequence: sequence };
  });
  return { entries, mountPoints: new Map(entries.map((e) => [e.mountPoint, e])) };
}

/** True when `dir` itself (not a parent) is a mount point. `dir` is normalised, not resolved through symlinks. */
export function isMountPoint(dir: string, table: MountTable): boolean {
  return mountAt(dir, table) !== undefined;
}

/** What path.posix.normalize would change: doubled or trailing slashes, `.` and `..` segments. */
const NOT_NORMAL = /\/\/|(?:^|\/)\.\.?(?:\/|$)|.\/$/;

/** `p` normalised and without a trailing slash (`/` stays), as the mount table and PVs spell paths. */
export function normalisePath(p: string): string {
  // The usual path, one we wrote, is already normal: one test instead of a normalize (thousands per pass).
  if (p !== '' && !NOT_NORMAL.test(p)) return p;
  const normalised = path.posix.normalize(p);
  return normalised.length > 1 ? normalised.replace(/\/+$/, '') : normalised;
}

/** The mount at `dir` (the topmost, when several are stacked there), if `dir` is a mount point. */
export function mountAt(dir: string, table: MountTable): MountEntry | undefined {
  return table.mountPoints.get(normalisePath(dir));
}
