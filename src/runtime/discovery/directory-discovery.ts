/**
 * Directory-dialect discovery for one class: list the first level of mountDir
 * (hidden entries too), keep the names namePattern matches, and decide for each
 * entry whether it is a volume, measuring those that are. One bad entry is a
 * rejection for that entry; a missing directory is reported for the class.
 * Nothing here talks to the API server.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { matchesNamePattern, type ClassConfig } from '../../config';
import type { DirectoryVolume } from '../pv';
import { blockDeviceSize, filesystemSize, IdentityCache, inspectEntry, type EntryInspection } from '../volume';
import { classifyEntry, type RejectionCode } from './entry-classification';
import { MountPointMemo } from './mount-point-memo';
import { mountAt, type MountTable } from './mount-table';

export interface DiscoveredVolume extends DirectoryVolume {
  /** mountDir/entry: the same volume as this container sees it (what cleanup works on). */
  readonly mountPath: string;
  /** A mount point directory, or a block device (or a symlink to one). */
  readonly source: 'mount-point' | 'block-device';
  /** The resolved block device, for block entries (e.g. /dev/sdb for a by-id symlink). */
  readonly devicePath?: string;
  /** What the volume really is (volume/identity.ts): two entries with one identity are one disk. */
  readonly identity: string;
}

/** Entries examined between two turns of the event loop (a few milliseconds' work). */
const ENTRIES_PER_TURN = 256;

/** An entry that is not offered, and why, for logs, Events and `plan`. */
export interface Rejection {
  readonly className: string;
  readonly entryName: string;
  /** mountDir/entry. */
  readonly path: string;
  readonly code: RejectionCode;
  /** One sentence naming the path and what is wrong, e.g. `path "/mnt/disks/vol1" is not a valid mount point`. */
  readonly reason: string;
  /** What to do about it, when there is something to say. */
  readonly hint?: string;
  /** The entry is a symlink: what it leads to can change with no change in the discovery directory. */
  readonly viaSymlink?: boolean;
}

export interface ClassDiscovery {
  readonly className: string;
  readonly mountDir: string;
  readonly volumes: readonly DiscoveredVolume[];
  readonly rejections: readonly Rejection[];
  /** Set when the discovery directory itself cannot be listed (missing, not a directory, no permission). */
  readonly problem?: string;
}

/** What a pass keeps between passes: identities, and findings at mount points (mount-point-memo.ts). */
export interface DiscoveryMemory {
  readonly identities: IdentityCache;
  readonly mountPoints?: MountPointMemo;
}

/** Discovers one class's volumes, given a fresh mount table. */
export async function discoverClassVolumes(
  className: string,
  classConfig: ClassConfig,
  mountTable: MountTable,
  memory: DiscoveryMemory = { identities: new IdentityCache() },
): Promise<ClassDiscovery> {
  const { mountDir } = classConfig;
  let names: string[];
  let realMountDir: string;
  try {
    names = (await fs.promises.readdir(mountDir)).sort();
    // The mount table holds resolved paths; a mountDir reached through a symlink must still match.
    realMountDir = await fs.promises.realpath(mountDir);
  } catch (error) {
    return { className, mountDir, volumes: [], rejections: [], problem: listingProblem(className, mountDir, error) };
  }

  // In batches, the event loop let go between them: a pass over thousands of entries
  // never holds off a health probe or a scrape for long, and the entries of a batch
  // on one disk share one look at it (IdentityCache).
  const wanted = names.filter((name) => matchesNamePattern(classConfig.namePattern, name));
  const results: Array<DiscoveredVolume | Rejection> = [];
  for (let start = 0; start < wanted.length; start += ENTRIES_PER_TURN) {
    if (start > 0) await yieldToEventLoop();
    const batch = wanted.slice(start, start + ENTRIES_PER_TURN);
    results.push(...await Promise.all(batch.map((name) => examineEntry(className, classConfig, mountTable, memory, name, realMountDir))));
  }
  return {
    className,
    mountDir,
    volumes: results.filter((r): r is DiscoveredVolume => !('reason' in r)),
    rejections: results.filter((r): r is Rejection => 'reason' in r),
  };
}

/** Discovers every class of a configuration (classes in name order). */
export async function discoverDirectoryVolumes(
  storageClassMap: Readonly<Record<string, ClassConfig>>,
  mountTable: MountTable,
  memory: DiscoveryMemory = { identities: new IdentityCache() },
): Promise<ClassDiscovery[]> {
  const classNames = Object.keys(storageClassMap).sort();
  return Promise.all(classNames.map((name) => discoverClassVolumes(name, storageClassMap[name], mountTable, memory)));
}

async function examineEntry(
  className: string,
  classConfig: ClassConfig,
  mountTable: MountTable,
  { identities, mountPoints }: DiscoveryMemory,
  entryName: string,
  realMountDir: string,
): Promise<DiscoveredVolume | Rejection> {
  const mount = mountAt(path.posix.join(realMountDir, entryName), mountTable);
  const memoKey = { className, mountDir: classConfig.mountDir, hostDir: classConfig.hostDir, volumeMode: classConfig.volumeMode, entryName };
  const recalled = mount && mountPoints?.recall(memoKey, mount);
  if (recalled) return recalled;
  // Not that mount any more: a later mount that happens to look the same (mount IDs are reused) is measured afresh.
  mountPoints?.forget(memoKey);
  const mountPath = path.posix.join(classConfig.mountDir, entryName);
  const reject = (code: RejectionCode, reason: string, hint?: string): Rejection => ({
    className,
    entryName,
    path: mountPath,
    code,
    reason,
    ...(hint !== undefined ? { hint } : {}),
  });

  let inspection: EntryInspection;
  try {
    inspection = inspectEntry(mountPath);
  } catch (error) {
    return reject('unreadable-entry', `cannot inspect path ${JSON.stringify(mountPath)}: ${(error as Error).message}`);
  }
  const decision = classifyEntry({
    path: mountPath,
    inspection,
    isMountPoint: mount !== undefined,
    className,
    classVolumeMode: classConfig.volumeMode,
  });
  if (!decision.accept) {
    const rejection = reject(decision.code, decision.reason, decision.hint);
    return inspection.linkTarget !== undefined ? { ...rejection, viaSymlink: true } : rejection;
  }

  let capacityBytes: number;
  let identity: string;
  try {
    capacityBytes = decision.source === 'block-device' ? await blockDeviceSize(mountPath) : filesystemSize(mountPath);
    identity = decision.source === 'block-device' ? await identities.block(inspection.deviceNumber!) : await identities.mount(mount!);
  } catch (error) {
    return reject('size-unknown', `cannot measure path ${JSON.stringify(mountPath)}: ${(error as Error).message}`);
  }
  const volume: DiscoveredVolume = {
    className,
    entryName,
    hostPath: path.posix.join(classConfig.hostDir, entryName),
    mountPath,
    volumeMode: decision.volumeMode,
    capacityBytes,
    source: decision.source,
    identity,
    ...(decision.source === 'block-device' ? { devicePath: inspection.resolvedPath } : {}),
  };
  if (decision.source === 'mount-point') mountPoints?.remember(memoKey, mount!, volume);
  return volume;
}

function listingProblem(className: string, mountDir: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const where = `discovery directory ${JSON.stringify(mountDir)} of class "${className}"`;
  switch (code) {
    case 'ENOENT':
      return `${where} does not exist; create it on the host and mount it into the container at that path`;
    case 'ENOTDIR':
      return `${where} is not a directory`;
    case 'EACCES':
    case 'EPERM':
      return `${where} cannot be read: permission denied`;
    default:
      return `${where} cannot be listed: ${(error as Error).message}`;
  }
}
