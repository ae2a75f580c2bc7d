/**
 * Whether a Filesystem volume is still in use, before it is emptied.
 *
 * A Released PV's volume may still be used: a pod whose container did not go
 * keeps its bind mount of the volume and goes on writing. Emptying it then
 * destroys data someone is using, and hands the next tenant a volume another
 * process still writes into. Two kinds of use are looked for, in every process
 * this agent can see (all of the node's with `hostPID`, else its own container's):
 * - the volume mounted anywhere else: in any visible mount namespace, a mount of
 *   the same filesystem showing the volume's directory (or one below it) at a
 *   place other than the volume's own paths;
 * - a process holding it: an open file, a working or root directory, or a mapped
 *   file on the volume.
 * Block volumes have their own check (exclusive-open.ts): the kernel refuses an
 * exclusive open of a mounted device. A pool's directory volumes are checked the same
 * way as mounted ones (directoryVolumeUsers).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isStrictlyInside } from './path-safety';
import { parseMountInfo, readMountTable } from '../discovery/mount-table';
import { openDirectory } from '../volume/directory-handle';

/** The volume as mounted where the agent sees it. */
export interface MountedVolume {
  /** st_dev of the volume root. */
  readonly dev: bigint;
  /** major:minor of the filesystem, as the mount table gives it. */
  readonly major: number;
  readonly minor: number;
  /** The directory of the filesystem that is the volume (a bind mount's subdirectory, or "/"). */
  readonly root: string;
  /** Where the volume is expected to be mounted: its own places (container and host paths); anywhere else is a use. */
  readonly ownMountPoints: readonly string[];
}

export interface InUseOptions {
  /** @default '/proc' */
  readonly procRoot?: string;
  /** Processes not counted (this agent). @default [process.pid] */
  readonly ignorePids?: readonly number[];
}

function readLink(p: string): string | undefined {
  try {
    return fs.readlinkSync(p);
  } catch {
    return undefined;
  }
}

function processName(procRoot: string, pid: string): string {
  try {
    return fs.readFileSync(path.join(procRoot, pid, 'comm'), 'utf8').trim();
  } catch {
    return '?';
  }
}

/** `dir` is `root` or inside it (paths within one filesystem, as the mount table gives them). */
function withinRoot(dir: string, root: string): boolean {
  return root === '/' || dir === root || isStrictlyInside(dir, root);
}

/**
 * Descriptions of what uses the volume ("mounted at ... (pid 123 nginx)", "pid 123
 * (nginx) has a file open in it"), empty when nothing visible does.
 */
export function filesystemVolumeUsers(volume: MountedVolume, options: InUseOptions = {}): string[] {
  const procRoot = options.procRoot ?? '/proc';
  const ignore = new Set((options.ignorePids ?? [process.pid]).map(String));
  const pids = fs.readdirSync(procRoot).filter((name) => /^\d+$/.test(name));
  const users: string[] = [];
  const volumeMountIds = new Set<number>();
  const wholeFilesystem = volume.root === '/';

  // One mount table per mount namespace.
  const seenNamespaces = new Set<string>();
  for (const pid of pids) {
    const ns = readLink(path.join(procRoot, pid, 'ns', 'mnt'));
    if (ns === undefined || seenNamespaces.has(ns)) continue;
    seenNamespaces.add(ns);
    let table;
    try {
      table = parseMountInfo(fs.readFileSync(path.join(procRoot, pid, 'mountinfo'), 'utf8'));
    } catch {
      continue;
    }
    for (const entry of table.entries) {
      if (entry.major !== volume.major || entry.minor !== volume.minor || !withinRoot(entry.root, volume.root)) continue;
      volumeMountIds.add(entry.mountId);
      if (!volume.ownMountPoints.includes(entry.mountPoint)) {
        users.push(`mounted at ${entry.mountPoint} (mount namespace of pid ${pid} ${processName(procRoot, pid)})`);
      }
    }
  }

  const ourNamespace = readLink(path.join(procRoot, 'self', 'ns', 'mnt'));
  for (const pid of pids) {
    if (ignore.has(pid)) continue;
    const sameNamespace = readLink(path.join(procRoot, pid, 'ns', 'mnt')) === ourNamespace;
    const what = holdingOf(procRoot, pid, volume, volumeMountIds, wholeFilesystem, sameNamespace);
    if (what) users.push(`pid ${pid} (${processName(procRoot, pid)}) ${what}`);
  }
  return users;
}

/** How process `pid` holds the volume, if it does. */
function holdingOf(
  procRoot: string,
  pid: string,
  volume: MountedVolume,
  volumeMountIds: ReadonlySet<number>,
  wholeFilesystem: boolean,
  sameNamespace: boolean,
): string | undefined {
  const dir = path.join(procRoot, pid);
  const onVolumeDevice = (p: string): boolean => {
    try {
      return fs.statSync(p, { bigint: true }).dev === volume.dev;
    } catch {
      return false;
    }
  };
  // A directory of a shared filesystem is the volume only if its path (seen in our namespace) lies in a volume mount.
  const inOwnMount = (p: string): boolean => {
    const target = readLink(p);
    return target !== undefined && volume.ownMountPoints.some((m) => target === m || isStrictlyInside(target, m));
  };
  for (const [link, what] of [['cwd', 'works in it'], ['root', 'has it as its root directory']] as const) {
    const p = path.join(dir, link);
    if (onVolumeDevice(p) && (wholeFilesystem || (sameNamespace && inOwnMount(p)))) return what;
  }
  let fds: string[] = [];
  try {
    fds = fs.readdirSync(path.join(dir, 'fd'));
  } catch {
    // gone, or not ours to look at
  }
  for (const fd of fds) {
    if (!onVolumeDevice(path.join(dir, 'fd', fd))) continue;
    if (wholeFilesystem || volumeMountIds.has(mountIdOfFd(dir, fd))) return 'has a file open in it';
  }
  if (wholeFilesystem && mapsFileOf(dir, volume)) return 'has a file of it mapped in memory';
  return undefined;
}

function mountIdOfFd(processDir: string, fd: string): number {
  try {
    const m = /^mnt_id:\s*(\d+)$/m.exec(fs.readFileSync(path.join(processDir, 'fdinfo', fd), 'utf8'));
    return m ? Number(m[1]) : -1;
  } catch {
    return -1;
  }
}

/** Whether a mapping of the process is a file on the volume's device (maps lines carry `major:minor` in hex). */
function mapsFileOf(processDir: string, volume: MountedVolume): boolean {
  let maps: string;
  try {
    maps = fs.readFileSync(path.join(processDir, 'maps'), 'utf8');
  } catch {
    return false;
  }
  const wanted = `${volume.major.toString(16).padStart(2, '0')}:${volume.minor.toString(16).padStart(2, '0')}`;
  return maps.split('\n').some((line) => line.split(/\s+/)[3] === wanted && line.split(/\s+/)[4] !== '0');
}

/**
 * What uses a directory volume that is no mount point of its own but a directory of a
 * mounted filesystem (a pool's volume): the directory mounted anywhere (a pod's bind
 * mount of it), and processes holding it through such a mount. The filesystem's own
 * mount, through which the agent sees the directory, is no use of it.
 */
export async function directoryVolumeUsers(dir: string, options: InUseOptions = {}): Promise<string[]> {
  const handle = openDirectory(dir);
  try {
    const mount = (await readMountTable()).entries.find((e) => e.mountId === handle.mountId);
    if (!mount || !isStrictlyInside(dir, mount.mountPoint)) throw new Error(`${dir} is not inside the mount it was reached through`);
    const root = path.posix.join(mount.root, path.posix.relative(mount.mountPoint, dir));
    return filesystemVolumeUsers({ dev: handle.dev, major: mount.major, minor: mount.minor, root, ownMountPoints: [] }, options);
  } finally {
    fs.closeSync(handle.fd);
  }
}
