/**
 * The node's volume record: a durable account, on the node itself, of the state
 * of every volume's data (record-entry.ts), which discovery consults before it
 * offers anything and the deleter follows to clean. The API server's PVs are not
 * enough: an administrator can delete a PV or strip its finalizers while the agent
 * is down, and then nothing in the cluster remembers that a tenant wrote there.
 *
 * It is a directory on the host (the DaemonSet mounts it; both dialects' agents on
 * a node share it): `record.json` marks it as ours, and `volumes/` holds one JSON
 * file per volume, named by a hash of its identity. Every change is written to a
 * new file, fsynced, renamed over the old one and the directory fsynced, so a crash
 * at any point leaves either the old line or the new one. Changes are made under
 * an flock on `lock`, after re-reading what another agent may have written, so two
 * processes never claim one piece of storage.
 *
 * A record that cannot be read whole (the directory gone, a file that does not
 * parse) is unusable, and says why: nothing is offered or cleaned then, because a
 * guess could call dirty data clean.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseRecordEntry, VolumeRecordEntry } from './record-entry';
import { flockDescriptor } from '../volume/directory-lock';

export type RecordHealth = { readonly ok: true } | { readonly ok: false; readonly problem: string };

const MARKER = 'record.json';
const VOLUMES = 'volumes';
const LOCK = 'lock';
/** How long an update waits for another agent's. */
const LOCK_WAIT_SECONDS = 60;
/** At most this many changes under one hold of the lock: another agent sharing the record waits no longer than for these. */
const CHANGES_PER_HOLD = 32;
/** A hold lets the lock go once no change was asked for this long (the pool controller asks for two per volume it makes). */
const LINGER_MS = 20;

type Decide<T> = (record: VolumeRecord) => { writes: ReadonlyArray<VolumeRecordEntry | { remove: string }>; result: T };

interface QueuedChange<T> {
  readonly decide: Decide<T>;
  readonly resolve: (result: T) => void;
  readonly reject: (error: Error) => void;
}

/** The file name of a volume's line. */
function fileOf(identity: string): string {
  return `${createHash('sha256').update(identity).digest('hex').slice(0, 40)}.json`;
}

/** What changes when a file or directory is replaced or written: its inode and times. */
interface Stamp {
  readonly ino: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

function stampOf(file: string): Stamp | undefined {
  try {
    const st = fs.statSync(file, { bigint: true });
    return { ino: st.ino, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
  } catch {
    return undefined;
  }
}

function sameStamp(a: Stamp | undefined, b: Stamp | undefined): boolean {
  return a !== undefined && b !== undefined && a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** Writes `text` to `file` so that a crash leaves the old content or the new, never a part (the caller fsyncs the directory). */
function writeDurably(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
}

/**
 * writeDurably off the event loop: a batch's files are written and fsynced side by side
 * on libuv's threads, the agent's other work (its API requests) going on meanwhile.
 */
async function writeDurablyAsync(file: string, text: string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  const handle = await fs.promises.open(tmp, 'w', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.promises.rename(tmp, file);
}

function fsyncDirectory(dir: string): void {
  const fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY); // eslint-disable-line no-bitwise
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

async function fsyncDirectoryAsync(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY); // eslint-disable-line no-bitwise
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export interface OpenedRecord {
  readonly record: VolumeRecord;
  /** True when the directory did not exist and was made now: it is then no host directory the DaemonSet mounts. */
  readonly madeDirectory: boolean;
}

export class VolumeRecord {
  /**
   * Opens the record in `dir`, making it (and the directory, when missing) on first
   * use. Never throws: a record that cannot be used says so in health().
   */
  static open(dir: string): OpenedRecord {
    let madeDirectory = false;
    try {
      if (!fs.existsSync(dir)) {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        madeDirectory = true;
      }
      const volumes = path.join(dir, VOLUMES);
      const marker = path.join(dir, MARKER);
      if (!fs.existsSync(marker)) {
        const held = fs.existsSync(volumes) ? fs.readdirSync(volumes).filter((f) => f.endsWith('.json')) : [];
        if (held.length > 0) {
          return { record: new VolumeRecord(dir, `${marker} is missing while ${volumes} holds ${held.length} volume(s): the record was damaged`), madeDirectory };
        }
        fs.mkdirSync(volumes, { recursive: true, mode: 0o700 });
        writeDurably(marker, `${JSON.stringify({ format: 1, created: new Date().toISOString() })}\n`);
        fsyncDirectory(dir);
      }
    } catch (e) {
      return { record: new VolumeRecord(dir, `the volume record in ${dir} cannot be made: ${(e as Error).message}`), madeDirectory };
    }
    const record = new VolumeRecord(dir);
    record.refresh();
    return { record, madeDirectory };
  }

  private entriesByIdentity = new Map<string, VolumeRecordEntry>();
  private stamp?: Stamp;
  /** Each line's file as last read or written by this process. */
  private fileStamps = new Map<string, Stamp | undefined>();
  private markerStamp?: Stamp;
  private problem?: string;
  private rev = 0;
  private readonly volumesDir: string;
  /** Changes waiting for the lock, in the order asked. */
  private readonly queued: Array<QueuedChange<unknown>> = [];
  /** Whether a hold of the lock is being taken or held for the queued changes. */
  private draining = false;
  /** Set while a hold waits for one more change before it lets the lock go. */
  private asked?: () => void;

  private constructor(readonly dir: string, private readonly openProblem?: string) {
    this.volumesDir = path.join(dir, VOLUMES);
    this.problem = openProblem;
  }

  /** Changes with every line read or written and with the record's health: equal revisions, equal record. */
  get revision(): number {
    return this.rev;
  }

  health(): RecordHealth {
    return this.problem === undefined ? { ok: true } : { ok: false, problem: this.problem };
  }

  get(identity: string): VolumeRecordEntry | undefined {
    return this.entriesByIdentity.get(identity);
  }

  entries(): readonly VolumeRecordEntry[] {
    return [...this.entriesByIdentity.values()];
  }

  /** Reads the record again if anything changed it since (another agent, an administrator's command). */
  refresh(): RecordHealth {
    if (this.openProblem !== undefined) return this.health();
    const before = this.problem;
    const health = this.read();
    if (this.problem !== before) this.rev++;
    return health;
  }

  private read(): RecordHealth {
    const marker = stampOf(path.join(this.dir, MARKER));
    if (marker === undefined) {
      this.problem = `the volume record ${path.join(this.dir, MARKER)} is gone (the state directory was deleted or unmounted while the agent ran)`;
      return this.health();
    }
    const stamp = stampOf(this.volumesDir);
    if (stamp === undefined) {
      this.problem = `the volume record's directory ${this.volumesDir} is gone`;
      return this.health();
    }
    const unchanged = this.problem === undefined && sameStamp(stamp, this.stamp) && sameStamp(marker, this.markerStamp) && this.filesUnchanged();
    if (unchanged) return this.health();
    const read = new Map<string, VolumeRecordEntry>();
    const fileStamps = new Map<string, Stamp | undefined>();
    for (const name of fs.readdirSync(this.volumesDir)) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(this.volumesDir, name);
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (e) {
        this.problem = `volume record file ${file} cannot be read: ${(e as NodeJS.ErrnoException).code ?? String(e)}`;
        return this.health();
      }
      const parsed = parseRecordEntry(text);
      if (!parsed.ok) {
        this.problem = `volume record file ${file} ${parsed.message}`;
        return this.health();
      }
      if (fileOf(parsed.entry.identity) !== name) {
        this.problem = `volume record file ${file} holds the line of another volume (${parsed.entry.identity})`;
        return this.health();
      }
      read.set(parsed.entry.identity, parsed.entry);
      fileStamps.set(file, stampOf(file));
    }
    this.entriesByIdentity = read;
    this.fileStamps = fileStamps;
    this.rev++;
    this.stamp = stamp;
    this.markerStamp = marker;
    this.problem = undefined;
    return this.health();
  }

  /**
   * Whether every file read last time is as it was: a file edited in place (an editor, a
   * disk error) changes no directory stamp. One stat per volume, a few milliseconds for thousands.
   */
  private filesUnchanged(): boolean {
    for (const [file, stamp] of this.fileStamps) if (!sameStamp(stampOf(file), stamp)) return false;
    return true;
  }

  /**
   * Changes the record under its lock: `decide` sees the record as it is now (another
   * agent's changes included) and returns the lines to write; each is durable before
   * this resolves. Identities mapped to `undefined` are removed. Throws when the record
   * is unusable or cannot be written: nothing may act on a change that is not recorded.
   * Changes asked for while the lock is held, or soon after the last (LINGER_MS), are made
   * under the same hold, one after another (each sees the ones before), up to a batch: the
   * lock is taken by a child process (flock), which costs the agent more than the change.
   */
  update<T>(decide: Decide<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ decide, resolve, reject } as QueuedChange<unknown>);
      if (this.asked) this.asked();
      else if (!this.draining) void this.drain();
    });
  }

  /** Holds the lock while changes wait for it, a batch at a time. */
  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queued.length > 0) {
        const lockFd = fs.openSync(path.join(this.dir, LOCK), fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600); // eslint-disable-line no-bitwise
        try {
          const locked = await flockDescriptor(lockFd, path.join(this.dir, LOCK), LOCK_WAIT_SECONDS).catch((e: Error) => e);
          if (locked !== true) {
            const error = locked || new Error(`the volume record in ${this.dir} stayed locked by another agent for ${LOCK_WAIT_SECONDS} s`);
            for (const change of this.queued.splice(0)) change.reject(error);
            continue;
          }
          const health = this.refresh();
          for (let n = 0; n < CHANGES_PER_HOLD; n++) {
            if (this.queued.length === 0 && !await this.changeAskedWithin(LINGER_MS)) break;
            const change = this.queued.shift()!;
            if (!health.ok) {
              change.reject(new Error(health.problem));
              continue;
            }
            try {
              change.resolve(await this.apply(change.decide));
            } catch (e) {
              change.reject(e as Error);
              break; // a write failed part way: the next hold reads the record again before any other change
            }
          }
        } finally {
          fs.closeSync(lockFd);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /** Whether a change is asked for within `ms`. */
  private changeAskedWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.asked = undefined;
        resolve(false);
      }, ms);
      this.asked = () => {
        clearTimeout(timer);
        this.asked = undefined;
        resolve(true);
      };
    });
  }

  /** One change, under the lock. */
  private async apply<T>(decide: Decide<T>): Promise<T> {
    const { writes, result } = decide(this);
    if (writes.length === 0) return result;
    // Each line durable (its own file written, fsynced, renamed), side by side; then the directory, once. All end before
    // the lock goes, a failed one included.
    const written = await Promise.allSettled(writes.map(async (w) => {
      if ('remove' in w) {
        const file = path.join(this.volumesDir, fileOf(w.remove));
        await fs.promises.rm(file, { force: true });
        this.entriesByIdentity.delete(w.remove);
        this.fileStamps.delete(file);
      } else {
        const file = path.join(this.volumesDir, fileOf(w.identity));
        await writeDurablyAsync(file, `${JSON.stringify(w, null, 1)}\n`);
        this.entriesByIdentity.set(w.identity, w);
        this.fileStamps.set(file, stampOf(file));
      }
    }));
    const failed = written.find((w): w is PromiseRejectedResult => w.status === 'rejected');
    if (failed) throw failed.reason;
    await fsyncDirectoryAsync(this.volumesDir);
    this.rev++;
    // Our own writes are in memory already: the next refresh need not read them back.
    this.stamp = stampOf(this.volumesDir);
    return result;
  }
}
