/**
 * Notices the changes that should start a pass at once instead of waiting for
 * the period: entries appearing in a discovery directory (inotify through
 * fs.watch) and mounts coming and going (the mount table, which inotify cannot
 * watch, is re-read cheaply a few times a second and compared).
 */
import * as fs from 'node:fs';

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

  constructor(private readonly onChange: (dir: string) => void) {}

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
          this.onChange(dir);
        });
        // The directory itself went away (or its mount did): watch it again on the next refresh.
        watcher.on('error', () => {
          this.drop(dir, watcher);
          this.onChange(dir);
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

/** Calls `onChange` when the mount table's content changes. */
export class MountTableWatcher implements Watcher {
  private last: string | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly onChange: () => void,
    intervalMs = 250,
    private readonly file = '/proc/self/mountinfo',
  ) {
    this.last = this.read();
    this.timer = setInterval(() => this.check(), intervalMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  private read(): string | undefined {
    try {
      return fs.readFileSync(this.file, 'utf8');
    } catch {
      return undefined;
    }
  }

  private check(): void {
    const now = this.read();
    if (now !== this.last) {
      this.last = now;
      this.onChange();
    }
  }
}
