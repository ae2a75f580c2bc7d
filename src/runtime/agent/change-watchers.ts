/**
 * Notices the changes that should start a pass at once instead of waiting for
 * the period: entries appearing in a discovery directory (inotify through
 * fs.watch) and mounts coming and going (the kernel signals every change of
 * /proc/self/mountinfo with POLLPRI, which Node cannot wait for; util-linux's
 * `findmnt --poll`, a child in our mount namespace, waits for us).
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import type { Socket } from 'node:net';
import type { KubeLogger } from '../kube/logger';

export interface Watcher {
  close(): void;
}

/**
 * Watches each directory's first level. A directory that does not exist yet, or
 * was removed and made again (the old watch cannot see the new directory), is
 * watched anew on the next `refresh`.
 */
export class DirectoryWatcher implements Watcher {
  private readonly watchers = new Map<string, { watcher: fs.FSWatcher; inode: string }>();
  private readonly listeners: ((dir: string) => void)[] = [];

  /** Called with the directory each time one of the watched directories changes. */
  onChange(listener: (dir: string) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Watches exactly these directories from now on. Returns those it started
   * watching now: their content is unknown, so the caller should look.
   */
  refresh(dirs: readonly string[]): string[] {
    const wanted = new Set(dirs);
    for (const [dir, w] of this.watchers) {
      if (!wanted.has(dir) || inodeOf(dir) !== w.inode) this.drop(dir, w.watcher);
    }
    const started: string[] = [];
    for (const dir of wanted) {
      if (this.watchers.has(dir)) continue;
      const inode = inodeOf(dir);
      if (inode === undefined) continue; // missing for now; discovery reports it, and refresh() tries again
      try {
        const watcher = fs.watch(dir, { persistent: false }, () => {
          // The directory itself was removed or moved: this watch is dead; the next refresh starts a new one.
          if (inodeOf(dir) !== inode) this.drop(dir, watcher);
          this.changed(dir);
        });
        // The directory itself went away (or its mount did): watch it again on the next refresh.
        watcher.on('error', () => {
          this.drop(dir, watcher);
          this.changed(dir);
        });
        this.watchers.set(dir, { watcher, inode });
        started.push(dir);
      } catch {
        // Gone between the stat and the watch; the next refresh tries again.
      }
    }
    return started;
  }

  close(): void {
    for (const w of this.watchers.values()) w.watcher.close();
    this.watchers.clear();
  }

  private changed(dir: string): void {
    for (const listener of this.listeners) listener(dir);
  }

  private drop(dir: string, watcher: fs.FSWatcher): void {
    watcher.close();
    if (this.watchers.get(dir)?.watcher === watcher) this.watchers.delete(dir);
  }
}

/** `dev:ino` of a directory, or undefined when it is not there. */
function inodeOf(dir: string): string | undefined {
  try {
    const st = fs.statSync(dir);
    return st.isDirectory() ? `${st.dev}:${st.ino}` : undefined;
  } catch {
    return undefined;
  }
}

export interface MountTableWatcherOptions {
  /**
   * A command that prints a line on every change of this process's mount table.
   * `setpriv --pdeathsig` ends it with us, however we end.
   * @default setpriv --pdeathsig KILL -- findmnt --poll --raw --noheadings -o ACTION
   */
  readonly command?: readonly string[];
  /** When the command cannot run: how often the mount table is re-read and compared instead. @default 250 */
  readonly fallbackIntervalMs?: number;
  /** The mount table re-read by the fallback. @default /proc/self/mountinfo */
  readonly file?: string;
  /** Told (warn) when the command cannot run and the fallback takes over. */
  readonly logger?: KubeLogger;
}

export const FINDMNT_POLL = ['setpriv', '--pdeathsig', 'KILL', '--', 'findmnt', '--poll', '--raw', '--noheadings', '-o', 'ACTION'];

/**
 * Calls `onChange` when the mount table changes: at once, and with no work while
 * nothing changes. If `findmnt --poll` cannot run (or stops), the table is re-read
 * every 250 ms and compared, as before.
 */
export class MountTableWatcher implements Watcher {
  private child?: ChildProcess;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly onChange: () => void, private readonly options: MountTableWatcherOptions = {}) {
    const [command, ...args] = options.command ?? FINDMNT_POLL;
    try {
      this.child = spawn(command, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    } catch (err) {
      this.fallBack(String(err));
      return;
    }
    const child = this.child;
    child.stdout!.on('data', () => this.onChange());
    child.once('error', (err) => this.fallBack(err.message));
    child.once('exit', (code, signal) => this.fallBack(`it exited (${signal ?? `code ${code}`})`));
    // Like the timer it replaces, it does not keep the process alive.
    child.unref();
    (child.stdout as Socket).unref();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.child?.kill();
  }

  private fallBack(reason: string): void {
    if (this.closed || this.timer) return;
    this.child = undefined;
    const intervalMs = this.options.fallbackIntervalMs ?? 250;
    const [command] = this.options.command ?? FINDMNT_POLL;
    this.options.logger?.warn({ command, reason, intervalMs }, 'cannot wait for mount table changes; re-reading the mount table periodically instead');
    const file = this.options.file ?? '/proc/self/mountinfo';
    const read = () => {
      try {
        return fs.readFileSync(file, 'utf8');
      } catch {
        return undefined;
      }
    };
    let last = read();
    this.timer = setInterval(() => {
      const now = read();
      if (now === last) return;
      last = now;
      this.onChange();
    }, intervalMs);
    this.timer.unref();
    // A change while we switched over would otherwise go unseen until the next one.
    this.onChange();
  }
}
