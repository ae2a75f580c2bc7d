/**
 * A child process whose stdout and stderr are collected line by line as they come,
 * for the tests that run a program whole (the bin, the container image) and read
 * what it printed.
 */
import type { ChildProcess } from 'node:child_process';

export class CollectedProcess {
  /** Complete lines of stdout and stderr, in arrival order. */
  readonly lines: string[] = [];
  private partial = '';
  private readonly exit: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    const collect = (chunk: Buffer) => {
      const parts = (this.partial + chunk.toString('utf8')).split('\n');
      this.partial = parts.pop()!;
      this.lines.push(...parts);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    this.exit = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Everything printed so far (with an unfinished last line), for failure messages and output checks. */
  log(): string {
    return [...this.lines, ...(this.partial ? [this.partial] : [])].join('\n');
  }

  /** Its exit code once it has exited (null when a signal ended it). */
  exited(): Promise<number | null> {
    return this.exit;
  }
}
