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
 * Watches each directory's first level. A directory that does not exist yet is
 * retried on every `refresh`, so creating it later is noticed too.
 */
export class DirectoryWatcher implements Watcher {
  private readonly watchers = new Map<string, fs.FSWatcher>();

  constructor(private readonly onChange: (dir: string) => void) {}

  /** Watches exactly these directories from now on. */
  refresh(dirs: readonly string[]): void {
    const wanted = new Set(dirs);
    for (const [dir, w] of this.watchers) {
      if (!wanted.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    for (const dir of wanted) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = fs.watch(dir, { persistent: false }, () => this.onChange(dir));
        // The directory itself went away (or its mount did): watch it again on the next refresh.
        w.on('error', () => {
          w.close();
          this.watchers.delete(dir);
          this.onChange(dir);
        });
        this.watchers.set(dir, w);
      } catch {
        // Missing for now; discovery reports it, and refresh() tries again.
      }
    }
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
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
