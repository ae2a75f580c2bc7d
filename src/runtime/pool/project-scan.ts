/**
 * The walk that gives an XFS or ext4 pool volume back what a tenant took out of its
 * project. The kernel lets a file's owner change its project ID from the host's user
 * namespace (project-quota.ts): a tenant's pod that does not run in a user namespace
 * of its own can give its files project 0 (counted against no limit) or a neighbour's
 * project (counted against the neighbour's limit, which then refuses the neighbour's
 * writes), or clear a directory's inherit flag. No notification says so: a change of
 * project raises no inotify or fanotify event (checked on Linux 6.1: `chattr -p` gives
 * only the open and close of the tool's own descriptor). So every volume is walked.
 *
 * Each walk goes from the volume's root by handles (volume/directory-handle.ts): no
 * symlink is followed, no other filesystem entered. Projects are read per directory
 * with `lsattr -p -d` (run in the directory, given its entries' names, its lines matched
 * to them in order); a file or directory found in another project, or a directory
 * without the inherit flag, is opened by handle without following a symlink, checked to
 * be the inode the walk saw, and set back through that descriptor (`xfs_io chproj`,
 * `chattr +P`): whatever a tenant swaps in meanwhile is never touched.
 *
 * Symlinks, FIFOs, sockets and device nodes carry a project too, but theirs cannot be
 * read or set (FS_IOC_FSGETXATTR needs a descriptor of the inode itself). A volume that
 * holds more inodes than the kernel charges to its project after its files and
 * directories were set back holds some charged elsewhere, so these are: a symlink is
 * made anew in place (same target, so it is charged to the volume), any other is
 * removed (it holds no data). Counts that two walks in a row find short are acted on,
 * so a tenant creating and deleting files while it is walked is never mistaken for one.
 *
 * The walks run at a low duty cycle (a pause three times as long as each directory
 * took), and the volumes are walked again every `periodMs`: a volume's files are back in
 * its project within that period plus the time the walk of every volume takes
 * (docs/operations.md).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { run } from './command';
import type { Logger } from '../observability';
import { handlePath, openDirectory } from '../volume/directory-handle';

/** How much longer than a directory's walk the walk rests after it. */
const REST_FACTOR = 3;
/** Names per lsattr run: well below the kernel's limit on arguments. */
const NAMES_PER_RUN = 512;
/** The depth past which a volume's tree is not followed (said): as the cleaner's. */
const MAX_DEPTH = 256;

/** One volume to walk: its root, and the project its every inode must carry. */
export interface ScannedVolume {
  readonly identity: string;
  readonly root: string;
  readonly id: number;
}

/** What a walk set back, for a person. */
export interface ScanFinding {
  readonly volume: string;
  readonly what: string;
}

/** A walked volume: its findings, and its inodes, to compare with what the kernel charges its project. */
export interface VolumeWalk {
  readonly findings: ScanFinding[];
  /** Distinct inodes in the volume, its root included. */
  readonly inodes: number;
  /** The symlinks, FIFOs, sockets and device nodes, by their path from the root, as Buffers of their names. */
  readonly specials: ReadonlyArray<{ readonly at: readonly Buffer[]; readonly symlink: boolean }>;
}

/** What lsattr says of an entry: its project, and its flags (`P`: new entries inherit the project). */
interface EntryProject {
  readonly id: number;
  readonly inherits: boolean;
}

const OPEN_ENTRY = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY; // eslint-disable-line no-bitwise

/**
 * Walks one volume (see the header), setting back every file and directory of another
 * project and every directory without the inherit flag.
 */
export async function walkVolume(volume: ScannedVolume, rest: (ms: number) => Promise<void>): Promise<VolumeWalk> {
  const findings: ScanFinding[] = [];
  const specials: Array<{ at: Buffer[]; symlink: boolean }> = [];
  const seen = new Set<bigint>();
  const root = openDirectory(volume.root);
  try {
    seen.add(fs.fstatSync(root.fd, { bigint: true }).ino);
    const rootProject = await projectOfHandle(root.fd);
    if (rootProject.id !== volume.id || !rootProject.inherits) {
      await setBack(root.fd, volume.id, true);
      findings.push({ volume: volume.identity, what: describe(volume, [], rootProject, true) });
    }
    const queue: Array<{ readonly fd: number; readonly at: Buffer[] }> = [{ fd: fs.openSync(handlePath(root.fd), fs.constants.O_RDONLY), at: [] }];
    while (queue.length > 0) {
      const dir = queue.shift()!;
      const started = Date.now();
      try {
        const entries = fs.readdirSync(handlePath(dir.fd), { withFileTypes: true, encoding: 'buffer' });
        const walked: Array<{ name: Buffer; ino: bigint; directory: boolean }> = [];
        for (const entry of entries) {
          const name = entry.name;
          const st = fs.lstatSync(handlePath(dir.fd, name), { bigint: true, throwIfNoEntry: false });
          if (!st || st.dev !== root.dev) continue; // gone meanwhile, or another filesystem mounted there
          const fresh = !seen.has(st.ino);
          seen.add(st.ino);
          if (st.isDirectory()) {
            walked.push({ name, ino: st.ino, directory: true });
          } else if (fresh && st.isFile()) {
            walked.push({ name, ino: st.ino, directory: false });
          } else if (fresh) {
            specials.push({ at: [...dir.at, name], symlink: st.isSymbolicLink() });
          }
        }
        const projects = await projectsIn(dir.fd, walked.map((w) => w.name));
        for (const w of walked) {
          const project = projects.get(w.name.toString('latin1'));
          if (!project) continue; // gone, or swapped for something else, meanwhile: the next walk sees it
          if (project.id !== volume.id || (w.directory && !project.inherits)) {
            if (await setBackEntry(dir.fd, w.name, w.ino, volume.id, w.directory)) {
              findings.push({ volume: volume.identity, what: describe(volume, [...dir.at, w.name], project, w.directory) });
            }
          }
          if (w.directory && dir.at.length < MAX_DEPTH) {
            try {
              queue.push({ fd: openDirectory(w.name, dir.fd).fd, at: [...dir.at, w.name] });
            } catch {
              // swapped for something that is not a directory meanwhile: the next walk sees it
            }
          }
        }
      } finally {
        fs.closeSync(dir.fd);
      }
      await rest((Date.now() - started) * REST_FACTOR);
    }
    return { findings, inodes: seen.size, specials };
  } finally {
    fs.closeSync(root.fd);
  }
}

/**
 * Makes the volume's special files charged to it again (see the header): each symlink
 * made anew in place, any other removed. Each is reached by handles from the root, its
 * own name never followed.
 */
export async function rechargeSpecials(volume: ScannedVolume, specials: VolumeWalk['specials']): Promise<ScanFinding[]> {
  const findings: ScanFinding[] = [];
  for (const special of specials) {
    const root = openDirectory(volume.root);
    const opened = [root.fd];
    try {
      for (const step of special.at.slice(0, -1)) opened.push(openDirectory(step, opened[opened.length - 1]).fd);
      const dirFd = opened[opened.length - 1];
      const name = special.at[special.at.length - 1];
      const st = fs.lstatSync(handlePath(dirFd, name), { throwIfNoEntry: false });
      if (!st || st.isFile() || st.isDirectory()) continue;
      const at = path.join(volume.root, ...special.at.map((n) => n.toString()));
      if (st.isSymbolicLink()) {
        const target = fs.readlinkSync(handlePath(dirFd, name), { encoding: 'buffer' });
        const temporary = Buffer.from(`.lvp-recharge-${process.pid}-${Date.now()}`);
        fs.symlinkSync(target, handlePath(dirFd, temporary));
        fs.lchownSync(handlePath(dirFd, temporary), st.uid, st.gid);
        fs.renameSync(handlePath(dirFd, temporary), handlePath(dirFd, name));
        findings.push({ volume: volume.identity, what: `symlink ${at} was charged to another project than its volume's ${volume.id}; made anew in place, charged to the volume` });
      } else {
        fs.unlinkSync(handlePath(dirFd, name));
        findings.push({ volume: volume.identity, what: `${kindOf(st)} ${at} was charged to another project than its volume's ${volume.id}; removed (it held no data)` });
      }
    } catch (e) {
      // Changed meanwhile (gone, swapped for a symlink or a file): the next walk sees it. Anything else is said.
      if (!CHANGED_MEANWHILE.has((e as NodeJS.ErrnoException).code ?? '')) throw e;
    } finally {
      for (const fd of opened) fs.closeSync(fd);
    }
  }
  return findings;
}

/** What a walk's step meets when the tenant changed its tree under it. */
const CHANGED_MEANWHILE: ReadonlySet<string> = new Set(['ENOENT', 'ENOTDIR', 'ELOOP']);

function kindOf(st: fs.Stats): string {
  if (st.isFIFO()) return 'FIFO';
  if (st.isSocket()) return 'socket';
  return 'device node';
}

function describe(volume: ScannedVolume, at: readonly Buffer[], was: EntryProject, directory: boolean): string {
  const where = path.join(volume.root, ...at.map((n) => n.toString()));
  const how = was.id !== volume.id ? `project ${was.id}` : 'no inherit flag';
  return `${directory ? 'directory' : 'file'} ${where} had ${how}, not its volume's project ${volume.id}${directory ? ' with inheritance' : ''} `
    + '(changed from the host\'s user namespace); set back, so it counts against its volume\'s limit again';
}

/** The project of each named entry of the open directory, by name (latin1, byte for byte), from lsattr, run in the directory. */
async function projectsIn(dirFd: number, names: readonly Buffer[]): Promise<Map<string, EntryProject>> {
  const projects = new Map<string, EntryProject>();
  const cwd = `/proc/${process.pid}/fd/${dirFd}`;
  for (let i = 0; i < names.length; i += NAMES_PER_RUN) {
    const batch = names.slice(i, i + NAMES_PER_RUN);
    // A name that is not UTF-8 cannot be passed as an argument: read through a handle instead.
    const plain = batch.filter((n) => Buffer.from(n.toString('utf8'), 'utf8').equals(n));
    for (const odd of batch.filter((n) => !plain.includes(n))) {
      const project = await projectOfEntry(dirFd, odd);
      if (project) projects.set(odd.toString('latin1'), project);
    }
    if (plain.length === 0) continue;
    const { stdout } = await promisify(execFile)('lsattr', ['-p', '-d', '--', ...plain.map((n) => n.toString('utf8'))], {
      cwd, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LC_ALL: 'C' },
    }).catch((e: { stdout?: Buffer }) => ({ stdout: e.stdout ?? Buffer.alloc(0) })); // an entry lsattr cannot read fails it, the others are printed
    let cursor = 0;
    for (const name of plain) {
      const line = /^\s*(\d+)\s+(\S+)\s/.exec(stdout.subarray(cursor, cursor + 64).toString('latin1'));
      if (!line) continue;
      const nameAt = cursor + line[0].length;
      if (!stdout.subarray(nameAt, nameAt + name.length).equals(name) || stdout[nameAt + name.length] !== 0x0a) continue; // not printed: gone or unreadable
      projects.set(name.toString('latin1'), { id: Number(line[1]), inherits: line[2].includes('P') });
      cursor = nameAt + name.length + 1;
    }
  }
  return projects;
}

/** One entry's project, read through a descriptor opened without following a symlink. */
async function projectOfEntry(dirFd: number, name: Buffer): Promise<EntryProject | undefined> {
  let fd: number;
  try {
    fd = fs.openSync(handlePath(dirFd, name), OPEN_ENTRY);
  } catch {
    return undefined;
  }
  try {
    return await projectOfHandle(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** What `xfs_io lsproj` and `lsattr` say of an open descriptor: `projid = <ID>`, then `<flags> <path>` (`P`: inherit). */
async function projectOfHandle(fd: number): Promise<EntryProject> {
  const out = await run('xfs_io', ['-r', '-c', 'lsproj', '-c', 'lsattr', `/proc/${process.pid}/fd/${fd}`]);
  const id = /^projid = (\d+)$/m.exec(out);
  const flags = /^([-A-Za-z]+) \/proc\//m.exec(out);
  if (!id || !flags) throw new Error(`xfs_io named no project for descriptor ${fd}: ${out.trim()}`);
  return { id: Number(id[1]), inherits: flags[1].includes('P') };
}

/**
 * Sets back the entry `name` of the open directory, if it is still the inode `ino` the
 * walk saw: opened without following a symlink, set through its descriptor.
 */
async function setBackEntry(dirFd: number, name: Buffer, ino: bigint, id: number, directory: boolean): Promise<boolean> {
  let fd: number;
  try {
    fd = fs.openSync(handlePath(dirFd, name), OPEN_ENTRY);
  } catch {
    return false;
  }
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (st.ino !== ino || (directory ? !st.isDirectory() : !st.isFile())) return false;
    await setBack(fd, id, directory);
    return true;
  } finally {
    fs.closeSync(fd);
  }
}

async function setBack(fd: number, id: number, directory: boolean): Promise<void> {
  await run('xfs_io', ['-c', `chproj ${id}`, ...directory ? ['-c', 'chattr +P'] : [], `/proc/${process.pid}/fd/${fd}`]);
}

/** How often every volume of a pool is walked. */
export const SCAN_PERIOD_MS = 60_000;
/** Walks in a row that must find a volume's inodes short of its charge before its special files are recharged (see the header). */
const SHORT_WALKS = 2;

/**
 * Walks a pool's volumes, one after another, again every `periodMs`, until closed; what
 * it set back waits for `take()` (each pass reports it), and `onFindings` is told at once.
 */
export class ProjectScanner {
  private found: ScanFinding[] = [];
  private readonly short = new Map<string, number>();
  private closed = false;
  private wake?: () => void;

  /**
   * @param volumes the volumes to walk now
   * @param charged how many inodes the kernel charges to each project now
   * @param recharge makes a volume's special files charged to it (rechargeSpecials, with what room its pool gives it)
   */
  constructor(
    private readonly volumes: () => readonly ScannedVolume[],
    private readonly charged: () => Promise<ReadonlyMap<number, number>>,
    private readonly recharge: (volume: ScannedVolume, specials: VolumeWalk['specials']) => Promise<ScanFinding[]>,
    private readonly onFindings: () => void,
    private readonly logger: Logger,
    private readonly periodMs = SCAN_PERIOD_MS,
  ) {
    void this.loop();
  }

  /** What the walks set back since the last call. */
  take(): ScanFinding[] {
    const found = this.found;
    this.found = [];
    return found;
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      const started = Date.now();
      for (const volume of this.volumes()) {
        if (this.closed) return;
        try {
          const found = await this.walk(volume);
          if (found.length > 0) {
            this.found.push(...found);
            this.onFindings();
          }
        } catch (err) {
          // Destroyed meanwhile, its root swapped, a tool failing: walked again next time.
          const message = `the walk of ${volume.root} failed: ${(err as Error).message}; walked again within ${this.periodMs / 1000} s`;
          this.logger.warn({ volume: volume.identity }, message);
        }
      }
      await this.rest(Math.max(0, this.periodMs - (Date.now() - started)));
    }
  }

  private async walk(volume: ScannedVolume): Promise<ScanFinding[]> {
    const started = Date.now();
    const walked = await walkVolume(volume, (ms) => this.rest(ms));
    const charged = (await this.charged()).get(volume.id) ?? 0;
    const { inodes, specials, findings } = walked;
    // A volume charged less than it holds is said: some of its inodes count against another project.
    (charged < inodes ? this.logger.info : this.logger.debug)(
      { volume: volume.identity, inodes, charged, specials: specials.length, setBack: findings.length, ms: Date.now() - started }, 'pool volume walked',
    );
    if (charged >= walked.inodes || walked.specials.length === 0) {
      this.short.delete(volume.identity);
      return walked.findings;
    }
    const times = (this.short.get(volume.identity) ?? 0) + 1;
    this.short.set(volume.identity, times);
    if (times < SHORT_WALKS) return walked.findings;
    this.short.delete(volume.identity);
    return [...walked.findings, ...await this.recharge(volume, walked.specials)];
  }

  /** A pause that close() ends at once. */
  private rest(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
