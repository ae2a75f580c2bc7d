/**
 * Long-lived shells that start the storage tools for the agent. Node starts a child by
 * forking itself: with the agent's ~100 MiB that took 3.3 ms of the event loop's time for
 * each command (20 of 46 s of the agent's CPU while it made 1 000 btrfs volumes, profiled),
 * where a small bash forks in well under 1 ms, off the event loop. Each shell runs one
 * command at a time, given as its argv (NUL-separated on the shell's stdin: never parsed
 * as shell words), with its stdout and stderr passed back as they come and its exit code
 * after them, framed by a NUL and a token no other process knows (no file name or text a
 * tool prints has a NUL). A command cut short by its timeout is killed with its shell (the
 * shell's process group); the next command gets a new shell. A shell left idle exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/** More shells than commands the agent ever runs at once; beyond it commands wait for one. */
const MAX_SHELLS = 8;
/** A shell idle this long exits (the agent's passes run a command every few seconds at most). */
const IDLE_MS = 60_000;

/**
 * Reads NUL-separated requests (argc, then each arg); runs each with no stdin; after it,
 * writes NUL, the token and its exit code to stdout, and NUL and the token to stderr. A
 * command not on the PATH gets "ENOENT" for its code, as a spawn says it.
 */
const SCRIPT = `token=$1
while IFS= read -r -d '' argc; do
  args=()
  for ((i = 0; i < argc; i++)); do IFS= read -r -d '' arg || exit 1; args+=("$arg"); done
  if type -P -- "\${args[0]}" >/dev/null; then "\${args[@]}" </dev/null; code=$?; else code=ENOENT; fi
  printf '\\0%s %s\\n' "$token" "$code"
  printf '\\0%s\\n' "$token" >&2
done`;

export interface CommandResult {
  readonly stdout: string;
  readonly stderr: string;
  /** The exit code, or "ENOENT" when the command is not on the PATH. */
  readonly code: string;
}

/** One shell and the command it runs now. */
class Shell {
  private readonly child: ChildProcess;
  private readonly token = randomBytes(12).toString('hex');
  private stdout = '';
  private stderr = '';
  private pending?: { resolve: (r: CommandResult) => void; reject: (e: Error) => void };
  private idle?: NodeJS.Timeout;
  /** Taken for a command (from the pool's pick to the command's end). */
  taken = false;
  dead = false;

  /** @param onChange called when the shell goes free or ends */
  constructor(private readonly onChange: (shell: Shell) => void) {
    // Its own process group, so that a command cut short is killed with it.
    this.child = spawn('bash', ['-c', SCRIPT, 'lvp-command-shell', this.token], {
      stdio: ['pipe', 'pipe', 'pipe'], detached: true, env: { ...process.env, LC_ALL: 'C' },
    });
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => { this.stdout += d; this.settle(); });
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => { this.stderr += d; this.settle(); });
    this.child.once('error', (e) => this.end(new Error(`the command shell could not be started: ${e.message}`)));
    this.child.once('exit', () => this.end(new Error('the command shell ended')));
    this.child.stdin!.on('error', () => undefined); // its end is said by 'exit'
    // Never what keeps the agent running: a command waited for is kept alive by its timeout's timer.
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) (stream as unknown as { unref?: () => void }).unref?.();
  }

  run(argv: readonly string[]): Promise<CommandResult> {
    clearTimeout(this.idle);
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.child.stdin!.write(`${argv.length}\0${argv.map((a) => `${a}\0`).join('')}`);
    });
  }

  /** Ends the shell and the command it runs. */
  kill(): void {
    if (this.dead) return;
    try {
      process.kill(-this.child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
    this.end(new Error('the command shell was killed'));
  }

  private settle(): void {
    const outFrame = `\0${this.token} `;
    const errFrame = `\0${this.token}\n`;
    const out = this.stdout.indexOf('\0');
    const err = this.stderr.indexOf('\0');
    // A NUL that does not start the frame (a tool printed one), or output while no command runs (a child a tool left
    // behind): what follows cannot be told apart from the next command's, so the shell ends.
    const framed = (text: string, at: number, frame: string) => at < 0
      || (text.length - at >= frame.length ? text.startsWith(frame, at) : frame.startsWith(text.slice(at)));
    if (!framed(this.stdout, out, outFrame) || !framed(this.stderr, err, errFrame) || (!this.pending && (this.stdout || this.stderr))) {
      this.kill();
      return;
    }
    const end = out < 0 ? -1 : this.stdout.indexOf('\n', out);
    if (end < 0 || err < 0 || this.stderr.length - err < errFrame.length) return; // the rest is on its way
    const result = { stdout: this.stdout.slice(0, out), stderr: this.stderr.slice(0, err), code: this.stdout.slice(out + outFrame.length, end) };
    this.stdout = this.stdout.slice(end + 1);
    this.stderr = this.stderr.slice(err + errFrame.length);
    const { resolve } = this.pending!;
    this.pending = undefined;
    this.taken = false;
    this.idle = setTimeout(() => this.child.stdin!.end(), IDLE_MS).unref();
    resolve(result);
    this.onChange(this);
  }

  private end(error: Error): void {
    if (this.dead) return;
    this.dead = true;
    clearTimeout(this.idle);
    const pending = this.pending;
    this.pending = undefined;
    pending?.reject(error);
    this.onChange(this);
  }
}

/** The agent's shells. */
class ShellPool {
  private readonly shells = new Set<Shell>();
  private readonly waiting: Array<() => void> = [];

  /**
   * Runs `argv` in a free shell (a new one if none is free); after `timeoutMs` the command is
   * killed with its shell and this rejects.
   */
  async run(argv: readonly string[], timeoutMs: number): Promise<CommandResult> {
    const shell = await this.take();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      shell.kill();
    }, timeoutMs);
    try {
      return await shell.run(argv);
    } catch (e) {
      throw timedOut ? new Error(`timed out after ${timeoutMs} ms`) : e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A shell for one command, taken at once (a free one, or a new one) or when one goes free. */
  private async take(): Promise<Shell> {
    for (;;) {
      let shell = [...this.shells].find((s) => !s.taken && !s.dead);
      if (!shell && this.shells.size < MAX_SHELLS) {
        shell = new Shell((s) => this.changed(s));
        this.shells.add(shell);
      }
      if (shell) {
        shell.taken = true;
        return shell;
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  /** A shell ended (it is forgotten) or went free: the first command waiting looks again. */
  private changed(shell: Shell): void {
    if (shell.dead) this.shells.delete(shell);
    this.waiting.shift()?.();
  }
}

export const commandShells = new ShellPool();
