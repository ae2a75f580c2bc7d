/**
 * The block cleaner: runs a class's `blockCleanerCommand` on one device, as
 * upstream does (env `LOCAL_PV_BLKDEVICE=<device>`), with what upstream lacks:
 * - idle I/O priority (`ionice -c3`) so a wipe does not starve the node's
 *   workloads;
 * - its output is passed on line by line as it comes;
 * - the command and everything it starts live and die with this process: they
 *   run in a PID namespace of their own whose first process is killed when this
 *   process dies (`setpriv --pdeathsig`, `unshare --kill-child`), so a cleaner
 *   never outlives an agent killed with SIGKILL and goes on writing to a volume
 *   the next agent has already handed out; a timeout or abort kills the whole
 *   tree, and so does the command's own exit (nothing it left in the background
 *   survives it).
 * Whether the device may be touched at all (in use, the recorded disk) is the
 * caller's check (clean-volume.ts), made on the same open device.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';

export type OutputStream = 'stdout' | 'stderr';

export interface BlockCleanerOptions {
  /** argv; `argv[0]` is looked up on PATH. */
  readonly command: readonly string[];
  /** The device as the command should see it (`LOCAL_PV_BLKDEVICE`). */
  readonly device: string;
  /** The device as people know it, for messages. @default device */
  readonly deviceName?: string;
  /** Kill the command's process group after this long. 0 = no limit. */
  readonly timeoutMs: number;
  /** Receives each line the command prints. */
  readonly onOutput?: (line: string, stream: OutputStream) => void;
  /** Aborting it kills the process group as the timeout does. */
  readonly signal?: AbortSignal;
  /**
   * Run under `ionice -c3` (idle I/O class) when ionice is installed.
   * @default true
   */
  readonly lowIoPriority?: boolean;
  /** Extra environment for the command (merged over this process's). */
  readonly env?: Readonly<Record<string, string>>;
}

export interface BlockCleanerResult {
  readonly ok: boolean;
  /** Why it failed, in one line. */
  readonly reason?: string;
  /** The command's exit code, when it exited by itself. */
  readonly exitCode: number | null;
  /** The signal that ended it, when it was killed. */
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  /** False when the command never ran (it could not start). */
  readonly started: boolean;
  /** The command's pid, which is also its process group id. */
  readonly pid?: number;
  readonly durationMs: number;
}

const found = new Map<string, string | null>();
/** Where a program is on PATH, looked up once. */
function findOnPath(program: string): string | null {
  if (!found.has(program)) {
    found.set(program, null);
    for (const dir of (process.env.PATH ?? '').split(':')) {
      const candidate = path.join(dir || '.', program);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        found.set(program, candidate);
        break;
      } catch {
        // not here
      }
    }
  }
  return found.get(program)!;
}

/** A program named by path must be executable there; a bare name must be found on PATH. */
function isRunnable(program: string): boolean {
  if (!program.includes('/')) return findOnPath(program) !== null;
  try {
    fs.accessSync(program, fs.constants.X_OK);
    return fs.statSync(program).isFile();
  } catch {
    return false;
  }
}

/**
 * The command line that runs `command` tied to this process: in its own PID
 * namespace, killed with everything in it when this process dies. Without
 * util-linux's setpriv and unshare (not a Linux node) the command runs as it is.
 */
function tiedToThisProcess(command: readonly string[]): string[] {
  const setpriv = findOnPath('setpriv');
  const unshare = findOnPath('unshare');
  if (!setpriv || !unshare) return [...command];
  return [setpriv, '--pdeathsig', 'KILL', '--', unshare, '--pid', '--fork', '--kill-child=SIGKILL', '--', ...command];
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is already gone
  }
}

/** Runs the block cleaner command on `device`; never throws. */
export async function runBlockCleaner(options: BlockCleanerOptions): Promise<BlockCleanerResult> {
  const started = performance.now();
  const notRun = (reason: string): BlockCleanerResult => ({
    ok: false, reason, exitCode: null, signal: null, timedOut: false, started: false, durationMs: performance.now() - started,
  });
  if (options.command.length === 0) return notRun('the block cleaner command is empty');
  // Looked up here: inside the wrapper a missing program would only be an exit code.
  if (!isRunnable(options.command[0])) {
    return notRun(`cleaner "${options.command.join(' ')}" on "${options.deviceName ?? options.device}" could not start: ${options.command[0]} is not an executable program`);
  }
  const ionice = options.lowIoPriority === false ? null : findOnPath('ionice');
  const argv = tiedToThisProcess(ionice ? [ionice, '-c3', ...options.command] : options.command);

  return new Promise<BlockCleanerResult>((resolve) => {
    let timedOut = false;
    let aborted = false;
    const child = spawn(argv[0], argv.slice(1), {
      env: { ...process.env, ...options.env, LOCAL_PV_BLKDEVICE: options.device },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, so a timeout can kill everything it started.
      detached: true,
    });
    const timers: NodeJS.Timeout[] = [];
    // SIGKILL at once: the first process of the command's PID namespace ignores SIGTERM (it has no handler),
    // and a wipe stopped halfway is retried from the start anyway.
    const stop = (): void => {
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
    };
    if (options.timeoutMs > 0) {
      timers.push(setTimeout(() => {
        timedOut = true;
        stop();
      }, options.timeoutMs));
    }
    const onAbort = (): void => {
      aborted = true;
      stop();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();

    for (const stream of ['stdout', 'stderr'] as const) {
      readline.createInterface({ input: child[stream], crlfDelay: Infinity })
        .on('line', (line) => options.onOutput?.(line, stream));
    }

    let spawnError: Error | undefined;
    child.on('error', (e) => {
      spawnError = e;
    });
    child.on('exit', () => {
      // Whatever the command left running in its group goes with it.
      if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
    });
    child.on('close', (exitCode, signal) => {
      for (const t of timers) clearTimeout(t);
      options.signal?.removeEventListener('abort', onAbort);
      const durationMs = performance.now() - started;
      const base = { exitCode, signal, timedOut, durationMs, started: spawnError === undefined, pid: child.pid };
      const what = `cleaner "${options.command.join(' ')}" on "${options.deviceName ?? options.device}"`;
      if (spawnError) {
        resolve({ ...base, ok: false, reason: `${what} could not start: ${spawnError.message}` });
      } else if (timedOut) {
        resolve({ ...base, ok: false, reason: `${what} timed out after ${options.timeoutMs} ms and was killed` });
      } else if (aborted) {
        resolve({ ...base, ok: false, reason: `${what} was stopped` });
      } else if (exitCode !== 0) {
        resolve({ ...base, ok: false, reason: `${what} ${exitCode === null ? `was killed by ${signal}` : `exited with code ${exitCode}`}` });
      } else {
        resolve({ ...base, ok: true });
      }
    });
  });
}
