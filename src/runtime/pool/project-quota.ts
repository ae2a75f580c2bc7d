/**
 * A pool's volumes on XFS or ext4: each a directory in the pool directory carrying a
 * project ID of its own, with the inherit flag, so that every file and directory made
 * in it carries that ID too; the project's hard limits (bytes, and inodes in proportion
 * to the filesystem's) are its claim's size. The kernel counts every block a project's
 * inodes hold, however they were written (fallocate, sparse files, many small files),
 * and refuses a hard link or a rename into a directory of another project (EXDEV).
 *
 * Who the limit binds: the kernel lets a file's owner change its project ID and the
 * inherit flag only from the host's user namespace. A tenant whose pods run in a user
 * namespace of their own (`hostUsers: false`), root in it or not, cannot leave its
 * project; a tenant's process in the host's user namespace that owns its files can
 * (`chattr -p`, to 0 or to a neighbour's ID), and no filesystem gives a way to stop it.
 * Each look at the pool puts back a volume's own ID and inherit flag on its root, and a
 * walk of every volume (project-scan.ts), always running while the pool is usable, puts
 * back every file's, within a bound the docs give.
 *
 * A volume is known by its project ID and its name (`project:<ID>:pvc-<claim UID>`),
 * the ID allocated from the kernel's own report and the node record (never one any
 * inode still carries, nor one a recorded volume has) and set before the directory has
 * its name: a directory is made under a name no claim has (`.making-...`), given its
 * project and limit, then renamed into place, so a volume's name never shows an
 * unlimited directory, whenever the agent is killed. Usage and limits are read by ID
 * (`xfs_quota report -n`, the quotactl interface both filesystems share), never by path,
 * and xfs_quota is given the filesystem's device, not its mount point: in the agent's
 * container a filesystem mounted on the node after the container started sits on the
 * hostPath bind of its directory, two mounts at one path, and xfs_quota, given the path,
 * reads the lower one.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  LimitEscape, PoolBackend, PoolSnapshot, PoolState, PoolVolumeLocation, PoolVolumeUsage, SnapshotSource, VolumeSourceRef, isPoolVolumeName,
  requirePoolVolumeName, requireSnapshotName,
} from './backend';
import { childHandlePath, run } from './command';
import { deviceOf, filesystemOf, mountOf } from './directory-storage';
import { ProjectScanner, rechargeSpecials, SCAN_PERIOD_MS, ScanFinding, ScannedVolume, VolumeWalk } from './project-scan';
import { reflinkCopy } from './reflink-copy';
import type { ProjectQuotaTenants } from '../../config';
import { cleanFilesystemVolume } from '../cleanup/filesystem-cleaner';
import { directoryVolumeUsers } from '../cleanup/volume-in-use';
import { createLogger, type Logger } from '../observability';
import { openDirectory } from '../volume/directory-handle';

export type ProjectQuotaFilesystem = 'xfs' | 'ext4';

/** statfs types: XFS_SUPER_MAGIC, EXT4_SUPER_MAGIC. */
const MAGIC: Record<ProjectQuotaFilesystem, number> = { xfs: 0x58465342, ext4: 0xef53 };
/**
 * The first project ID a volume may get: IDs below it are left to administrators and
 * other tools (kubelet's own quota monitoring starts at 1048577, and skips IDs in use).
 */
export const FIRST_PROJECT_ID = 2_000_000;
/** 2^32-1 means "no project" to the kernel. */
const LAST_PROJECT_ID = 0xfffffffe;
/** The name a volume is made under, before it is renamed to its own. */
const MAKING = '.making-';
const KiB = 1024;

/** One project of the quota report. */
export interface ProjectQuota {
  readonly usedBytes: number;
  readonly hardBytes: number;
  readonly inodes: number;
  readonly hardInodes: number;
}

/** What lsattr says of a directory: its project ID and whether new entries inherit it. */
interface DirectoryProject {
  readonly id: number;
  readonly inherits: boolean;
}

export function projectVolumeIdentity(id: number, name: string): string {
  return `project:${id}:${name}`;
}

export function parseProjectVolumeIdentity(identity: string): { readonly id: number; readonly name: string } | undefined {
  const m = /^project:(\d+):(.+)$/.exec(identity);
  return m && isPoolVolumeName(m[2]) ? { id: Number(m[1]), name: m[2] } : undefined;
}

/** A snapshot's identity, `project:<ID>:snapshot-<UID>`: never taken for a volume's (parseProjectVolumeIdentity refuses it). */
function parseSnapshotIdentity(identity: string): { readonly id: number; readonly name: string } | undefined {
  const m = /^project:(\d+):(snapshot-.+)$/.exec(identity);
  if (!m) return undefined;
  requireSnapshotName(m[2]);
  return { id: Number(m[1]), name: m[2] };
}

export class ProjectQuotaPool implements PoolBackend {
  private scanner?: ProjectScanner;
  /** Whether the XFS filesystem shares blocks between files (reflink), as open read it. */
  private reflink?: boolean;

  /**
   * @param dir the pool directory as this process sees it
   * @param recorded the identities of this pool's volumes in the node record
   */
  constructor(
    private readonly dir: string,
    private readonly filesystem: ProjectQuotaFilesystem,
    private readonly recorded: () => readonly string[],
    private readonly tenants: ProjectQuotaTenants = 'user-namespaced',
    /** Where the walk says what it could not do (the agent's); its own lines otherwise. */
    private readonly logger: Logger = createLogger(),
    private readonly scanPeriodMs = SCAN_PERIOD_MS,
  ) {}

  async open(): Promise<PoolState> {
    const device = await this.requireQuotas();
    if (this.filesystem === 'xfs') this.reflink ??= /\breflink=1\b/.test(await run('xfs_info', [this.dir]));
    await this.removeUnfinished();
    const escapes = [...await this.restoreProjects(), ...this.scanner?.take() ?? []].map((e) => (this.tenants === 'user-namespaced'
      ? { ...e, what: `${e.what}; the class is for pods in a user namespace of their own, and a pod of the host's user namespace used it` }
      : e));
    return { ...await this.look(device), escapes };
  }

  /**
   * XFS with reflink (mkfs.xfs's default since xfsprogs 5.1) shares a file's blocks between
   * two files; ext4 cannot, so a snapshot there would be a whole copy made while its tenant
   * writes.
   */
  snapshotsRefused(): string | undefined {
    if (this.filesystem === 'ext4') {
      return 'ext4 pools take no snapshot: ext4 cannot share blocks between files, so a snapshot would be a whole copy made while its tenant writes; '
        + 'btrfs, lvm-thin and XFS (with reflink) pools take them';
    }
    if (this.reflink === false) {
      return `the XFS filesystem of ${this.dir} was made without reflink, so a snapshot would be a whole copy made while its tenant writes; `
        + 'make it with reflink (mkfs.xfs -m reflink=1, the default since xfsprogs 5.1)';
    }
    return undefined;
  }

  snapshotNameIn(name: string): string {
    return name;
  }

  /**
   * A snapshot: a directory `name` in the pool with a project of its own, limited to the
   * volume's size, holding a reflink copy of the volume (reflink-copy.ts: its files' blocks
   * shared, walked by handles), made under a making name and renamed once whole. Each file
   * is copied at once, the tree file after file: not one point in time, unlike btrfs's and
   * LVM's. Its project counts what it holds; the pool counts its size as promised (look),
   * so rewrites of the blocks it shares never find the filesystem full.
   */
  async snapshot(volume: SnapshotSource, name: string): Promise<PoolSnapshot> {
    requireSnapshotName(name);
    const refused = this.snapshotsRefused();
    if (refused) throw new Error(refused);
    const source = parseProjectVolumeIdentity(volume.identity);
    const quota = source && (await this.report(await deviceOf(this.dir))).get(source.id);
    if (!source || await this.identityAt(volume.name) !== volume.identity || !quota) {
      throw new Error(`volume ${volume.identity} is not at ${path.join(this.dir, volume.name)} now`);
    }
    const identity = await this.snapshotAt(name) ?? await this.makeDirectory(name, quota.hardBytes, path.join(this.dir, volume.name));
    return { identity, sizeBytes: quota.hardBytes };
  }

  async snapshotAt(name: string): Promise<string | undefined> {
    requireSnapshotName(name);
    const project = (await this.projectsOf([name])).get(name);
    return project && ours(project) ? projectVolumeIdentity(project.id, name) : undefined;
  }

  async deleteSnapshot(identity: string): Promise<void> {
    const snapshot = parseSnapshotIdentity(identity);
    if (!snapshot) throw new Error(`"${identity}" is not the identity of a snapshot of an ${this.filesystem} pool`);
    await this.removeTree(snapshot);
  }

  async inspect(): Promise<PoolState> {
    this.requireFilesystem();
    const device = await deviceOf(this.dir);
    const off = await this.quotasOff(device);
    if (off) return { freeBytes: this.freeBytes(), volumes: new Map(), escapes: [], note: off };
    return { ...await this.look(device), escapes: [] };
  }

  /** The walk of every volume (project-scan.ts) runs until closed; `onChange` is told of what it sets back. */
  watch(onChange: () => void): { close(): void } {
    this.scanner?.close();
    const scanner = new ProjectScanner(
      () => this.scannedVolumes(),
      async () => new Map([...await this.report(await deviceOf(this.dir))].map(([id, q]) => [id, q.inodes])),
      (volume, specials) => this.recharge(volume, specials),
      onChange,
      this.logger,
      this.scanPeriodMs,
    );
    this.scanner = scanner;
    return { close: () => scanner.close() };
  }

  /**
   * A volume's special files made charged to it (project-scan.ts, rechargeSpecials). The
   * volume may be over its limit by then (its files set back into it), and XFS refuses
   * root a new inode there too: its hard limits are raised by what the new inodes need for
   * as long as they are made, and put back as they were.
   */
  private async recharge(volume: ScannedVolume, specials: VolumeWalk['specials']): Promise<ScanFinding[]> {
    const device = await deviceOf(this.dir);
    const quota = (await this.report(device)).get(volume.id);
    const needBytes = specials.length * 4 * KiB + 1024 * KiB;
    const needInodes = specials.length + 64;
    const raise = quota && (quota.usedBytes + needBytes > quota.hardBytes || quota.inodes + needInodes > quota.hardInodes);
    if (raise) {
      await xfsQuota(device, `limit -p bhard=${quota.usedBytes + needBytes} ihard=${quota.inodes + needInodes} ${volume.id}`);
    }
    try {
      return await rechargeSpecials(volume, specials);
    } finally {
      if (raise) await xfsQuota(device, `limit -p bhard=${quota.hardBytes} ihard=${quota.hardInodes} ${volume.id}`);
    }
  }

  /** The recorded volumes that are there, with their roots. */
  private scannedVolumes(): ScannedVolume[] {
    return this.recorded().flatMap((identity) => {
      const volume = parseProjectVolumeIdentity(identity);
      const root = volume && path.join(this.dir, volume.name);
      return root && fs.existsSync(root) ? [{ identity, root, id: volume.id }] : [];
    });
  }

  storage(): Promise<string> {
    return filesystemOf(this.dir);
  }

  async create(name: string, limitBytes: number, _volumeMode?: unknown, from?: VolumeSourceRef): Promise<string> {
    requirePoolVolumeName(name);
    const device = await deviceOf(this.dir);
    const at = path.join(this.dir, name);
    if (fs.existsSync(at)) {
      const project = (await this.projectsOf([name])).get(name);
      if (!project || !ours(project)) throw new Error(`${at} is there but is not a volume of this pool (no project of its own); it is left alone`);
      await this.limit(device, project.id, limitBytes);
      return projectVolumeIdentity(project.id, name);
    }
    return this.makeDirectory(name, limitBytes, from && await this.sourcePath(from));
  }

  /**
   * A directory `name` in the pool with a project of its own and its limit, holding a
   * reflink copy of `copyOf` if given: made under its making name (removed first if a
   * try cut short left it, copy and all: no one ever used it), renamed once whole.
   */
  private async makeDirectory(name: string, limitBytes: number, copyOf?: string): Promise<string> {
    const device = await deviceOf(this.dir);
    const id = await this.allocate(device);
    const making = path.join(this.dir, `${MAKING}${name}`);
    await this.removeUnfinishedAt(making);
    fs.mkdirSync(making, 0o755);
    const handle = openDirectory(making);
    try {
      await run('chattr', ['-p', String(id), '+P', childHandlePath(handle.fd)]);
    } finally {
      fs.closeSync(handle.fd);
    }
    await this.limit(device, id, limitBytes);
    if (copyOf) {
      const { leftOut } = await reflinkCopy(copyOf, making);
      if (leftOut.length > 0) this.logger.info({ from: copyOf, to: name, leftOut: leftOut.slice(0, 10) }, `${leftOut.length} entries hold no data and are not copied`);
    }
    fs.renameSync(making, path.join(this.dir, name));
    return projectVolumeIdentity(id, name);
  }

  /** Where a new volume is copied from: the snapshot or volume of that identity, checked at its name by its project. */
  private async sourcePath(from: VolumeSourceRef): Promise<string> {
    const refused = this.snapshotsRefused();
    if (refused) throw new Error(refused);
    const source = from.snapshot ? parseSnapshotIdentity(from.snapshot) : parseProjectVolumeIdentity(from.volume!);
    const found = source && (await this.projectsOf([source.name])).get(source.name);
    if (!source || found?.id !== source.id) throw new Error(`${from.snapshot ? 'snapshot' : 'volume'} ${from.snapshot ?? from.volume} is not in pool ${this.dir}`);
    return path.join(this.dir, source.name);
  }

  pathOf(name: string): PoolVolumeLocation {
    requirePoolVolumeName(name);
    return { directory: path.join(this.dir, name) };
  }

  async identityAt(name: string): Promise<string | undefined> {
    requirePoolVolumeName(name);
    const project = (await this.projectsOf([name])).get(name);
    return project && ours(project) ? projectVolumeIdentity(project.id, name) : undefined;
  }

  async names(): Promise<string[]> {
    return fs.readdirSync(this.dir).filter(isPoolVolumeName);
  }

  async users(name: string): Promise<string[]> {
    requirePoolVolumeName(name);
    const at = path.join(this.dir, name);
    return fs.existsSync(at) ? directoryVolumeUsers(at) : [];
  }

  async resize(identity: string, limitBytes: number): Promise<boolean> {
    const volume = parseProjectVolumeIdentity(identity);
    if (!volume || (await this.projectsOf([volume.name])).get(volume.name)?.id !== volume.id) return false;
    await this.limit(await deviceOf(this.dir), volume.id, limitBytes);
    return true;
  }

  /**
   * Empties the volume by handles (cleanup/filesystem-cleaner.ts: nothing a tenant swaps
   * in is followed), removes its directory, then lifts its project's limit. A directory
   * at its name that carries another project is left alone, said.
   */
  async destroy(identity: string): Promise<void> {
    const volume = parseProjectVolumeIdentity(identity);
    if (!volume) throw new Error(`"${identity}" is not the identity of a project-quota volume`);
    await this.removeTree(volume);
  }

  /** A volume's or snapshot's directory emptied by handles, removed, and its project's limit lifted. */
  private async removeTree(tree: { readonly id: number; readonly name: string }): Promise<void> {
    const device = await deviceOf(this.dir);
    const at = path.join(this.dir, tree.name);
    if (fs.existsSync(at)) {
      const handle = openDirectory(at);
      try {
        const project = await projectOf(childHandlePath(handle.fd));
        if (project.id !== tree.id) throw new Error(`${at} carries project ${project.id}, not ${tree.id}; it is left alone`);
        const cleaned = await cleanFilesystemVolume(handle);
        if (!cleaned.ok) throw new Error(cleaned.reason);
      } finally {
        fs.closeSync(handle.fd);
      }
      fs.rmdirSync(at);
    }
    await this.limit(device, tree.id, 0);
  }

  private requireFilesystem(): void {
    if (fs.statfsSync(this.dir).type !== MAGIC[this.filesystem]) throw new Error(`${this.dir} is not on an ${this.filesystem} filesystem; this pool needs one`);
  }

  /** The device of the pool's filesystem, when project quotas are counted and enforced on it; else throws, saying how to turn them on. */
  private async requireQuotas(): Promise<string> {
    this.requireFilesystem();
    const device = await deviceOf(this.dir);
    const off = await this.quotasOff(device);
    if (off) throw new Error(off);
    return device;
  }

  /** Why project quotas do not hold on the pool's filesystem now, in what xfs_quota said of it, or undefined when they do. */
  private async quotasOff(device: string): Promise<string | undefined> {
    const state = await xfsQuota(device, 'state -p');
    const mountPoint = (await mountOf(this.dir)).mountPoint;
    const accounting = /Accounting: (ON|OFF)/.exec(state)?.[1];
    const enforcement = /Enforcement: (ON|OFF)/.exec(state)?.[1];
    const how = this.filesystem === 'xfs'
      ? 'mount it with the prjquota option'
      : 'make it with project quotas ("mkfs.ext4 -O quota,project", or "tune2fs -O quota,project" unmounted) and mount it with prjquota';
    if (accounting === undefined) {
      return `xfs_quota says nothing of project quotas on ${device} (the filesystem of ${this.dir}, mounted at ${mountPoint}): they are off there, `
        + `or the filesystem has no project quota support; no volume made there could be limited: ${how}`;
    }
    if (accounting === 'OFF') return `xfs_quota says project quota accounting is OFF on ${device} (the filesystem of ${this.dir}), so no volume made there could be limited: ${how}`;
    if (enforcement !== 'ON') {
      return `xfs_quota says project quotas on ${device} (the filesystem of ${this.dir}) are counted but not enforced, so no volume's limit holds now; `
        + `nothing is provisioned until they are (${this.filesystem === 'xfs' ? `"xfs_quota -x -c 'enable -p' ${mountPoint}"` : `"quotaon -P ${mountPoint}"`})`;
    }
    return undefined;
  }

  /**
   * The volumes' use and limits, and what the filesystem can still give less every
   * snapshot's size: a snapshot shares its blocks with its volume until the tenant
   * rewrites them, and each rewrite then takes blocks the volume's own limit does not
   * count, up to the snapshot's size.
   */
  private async look(device: string): Promise<Omit<PoolState, 'escapes'>> {
    const snapshots = fs.readdirSync(this.dir).filter((n) => /^snapshot-/.test(n));
    const [report, projects] = await Promise.all([this.report(device), this.names().then((names) => this.projectsOf([...names, ...snapshots]))]);
    const volumes = new Map<string, PoolVolumeUsage>();
    let promisedToSnapshots = 0;
    for (const [name, project] of projects) {
      if (!ours(project)) continue;
      const quota = report.get(project.id);
      if (snapshots.includes(name)) promisedToSnapshots += quota?.hardBytes ?? 0;
      else volumes.set(projectVolumeIdentity(project.id, name), { usedBytes: quota?.usedBytes ?? 0, limitBytes: quota?.hardBytes || undefined });
    }
    return { freeBytes: Math.max(0, this.freeBytes() - promisedToSnapshots), volumes };
  }

  private freeBytes(): number {
    const st = fs.statfsSync(this.dir);
    return st.bavail * st.bsize;
  }

  /** The lowest free ID: none an inode carries (the report counts it), none a recorded volume has. */
  private async allocate(device: string): Promise<number> {
    const taken = new Set([...await this.report(device)].filter(([, q]) => q.inodes > 0).map(([id]) => id));
    for (const identity of this.recorded()) {
      const volume = parseProjectVolumeIdentity(identity);
      if (volume) taken.add(volume.id);
    }
    for (let id = FIRST_PROJECT_ID; id <= LAST_PROJECT_ID; id++) if (!taken.has(id)) return id;
    throw new Error(`every project ID from ${FIRST_PROJECT_ID} is in use on the filesystem of ${this.dir}`);
  }

  /**
   * Sets the project's hard limits: `limitBytes`, and its share of the filesystem's
   * inodes in proportion (ext4 has a fixed number: empty files would exhaust them for
   * everyone). 0 lifts both.
   */
  private async limit(device: string, id: number, limitBytes: number): Promise<void> {
    const st = fs.statfsSync(this.dir);
    const inodes = limitBytes === 0 ? 0 : Math.max(64, Math.ceil(st.files * (limitBytes / (st.blocks * st.bsize))));
    await xfsQuota(device, `limit -p bhard=${limitBytes} ihard=${inodes} ${id}`);
  }

  private async report(device: string): Promise<Map<number, ProjectQuota>> {
    return parseQuotaReport(await xfsQuota(device, 'report -p -b -i -n -N'));
  }

  /** The project of each named directory in the pool that has one (one lsattr for them all). */
  private async projectsOf(names: readonly string[]): Promise<Map<string, DirectoryProject>> {
    const present = names.filter((name) => fs.lstatSync(path.join(this.dir, name), { throwIfNoEntry: false })?.isDirectory());
    const projects = new Map<string, DirectoryProject>();
    if (present.length === 0) return projects;
    const listed = await run('lsattr', ['-p', '-d', '--', ...present.map((name) => path.join(this.dir, name))]);
    for (const m of listed.matchAll(/^\s*(\d+)\s+(\S+)\s+(.+)$/gm)) {
      projects.set(path.basename(m[3]), { id: Number(m[1]), inherits: m[2].includes('P') });
    }
    return projects;
  }

  /**
   * Each recorded volume's root carries its own ID again, with the inherit flag, if a
   * tenant in the host's user namespace took them off (see the header).
   */
  private async restoreProjects(): Promise<LimitEscape[]> {
    const recorded = this.recorded().flatMap((identity) => {
      const volume = parseProjectVolumeIdentity(identity);
      return volume ? [{ identity, ...volume }] : [];
    });
    const projects = await this.projectsOf(recorded.map((v) => v.name));
    const escapes: LimitEscape[] = [];
    for (const volume of recorded) {
      const project = projects.get(volume.name);
      if (!project || (project.id === volume.id && project.inherits)) continue;
      const handle = openDirectory(path.join(this.dir, volume.name));
      try {
        await run('chattr', ['-p', String(volume.id), '+P', childHandlePath(handle.fd)]);
      } finally {
        fs.closeSync(handle.fd);
      }
      escapes.push({
        volume: volume.identity,
        what: `volume ${path.join(this.dir, volume.name)} had project ${project.id}${project.inherits ? '' : ' without inheritance'}, not its own ${volume.id} `
          + 'with inheritance (changed from the host\'s user namespace); set back, so what is made in it from now on counts against its limit '
          + '(what was made meanwhile may count against none)',
      });
    }
    return escapes;
  }

  /** Directories a killed agent left half made (never a volume: no claim saw them), and the copies in them, go. */
  private async removeUnfinished(): Promise<void> {
    for (const name of fs.readdirSync(this.dir).filter((n) => n.startsWith(MAKING))) {
      await this.removeUnfinishedAt(path.join(this.dir, name));
    }
  }

  /** A half-made directory emptied by handles (a copy cut short) and removed. */
  private async removeUnfinishedAt(making: string): Promise<void> {
    if (!fs.existsSync(making)) return;
    const handle = openDirectory(making);
    try {
      const cleaned = await cleanFilesystemVolume(handle);
      if (!cleaned.ok) throw new Error(cleaned.reason);
    } finally {
      fs.closeSync(handle.fd);
    }
    removeEmptyDirectory(making);
  }
}

function removeEmptyDirectory(at: string): void {
  try {
    fs.rmdirSync(at);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** Each project the kernel counts, by ID, from `xfs_quota -c 'report -p -b -i -n -N'` (-n: IDs, not names; -N: no header). */
export function parseQuotaReport(shown: string): Map<number, ProjectQuota> {
  const report = new Map<number, ProjectQuota>();
  // #<id> <used KiB> <soft> <hard> <warnings> [<grace>] <inodes> <soft> <hard> <warnings> [<grace>]
  for (const m of shown.matchAll(/^#(\d+)\s+(\d+)\s+\d+\s+(\d+)\s+\d+\s+\[[^\]]*\]\s+(\d+)\s+\d+\s+(\d+)\s/gm)) {
    report.set(Number(m[1]), { usedBytes: Number(m[2]) * KiB, hardBytes: Number(m[3]) * KiB, inodes: Number(m[4]), hardInodes: Number(m[5]) });
  }
  return report;
}

function ours(project: DirectoryProject): boolean {
  return project.inherits && project.id >= FIRST_PROJECT_ID && project.id <= LAST_PROJECT_ID;
}

async function projectOf(at: string): Promise<DirectoryProject> {
  const m = /^\s*(\d+)\s+(\S+)/.exec(await run('lsattr', ['-p', '-d', '--', at]));
  if (!m) throw new Error(`lsattr named no project for ${at}`);
  return { id: Number(m[1]), inherits: m[2].includes('P') };
}

/**
 * xfs_quota in expert mode, foreign-filesystem mode on (ext4 too), on the filesystem's
 * device (see the header). It exits 0 on most errors, so anything on stderr fails.
 */
function xfsQuota(device: string, command: string): Promise<string> {
  return run('xfs_quota', ['-f', '-x', '-c', command, device], { stderrIsFailure: true });
}
