/**
 * The block cleaner: runs a class's `blockCleanerCommand` on one device, as
 * upstream does (env `LOCAL_PV_BLKDEVICE=<device>`), with what upstream lacks:
 * - it first refuses a device in use (exclusive open, see exclusive-open.ts);
 * - idle I/O priority (`ionice -c3`) so a wipe does not starve the node's
 *   workloads;
 * - its output is passed on line by line as it comes;
 * - a timeout after which the whole process group is killed (a cleaner script
 *   runs `shred`/`dd` as children; killing only the shell would leave them
 *   writing), and the group is also killed when the command exits, so nothing
 *   it started in the background outlives it.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { checkDeviceNotInUse } from './exclusive-open';

export type OutputStream = 'stdout' | 'stderr';

export interface BlockCleanerOptions {
  /** argv; `argv[0]` is looked up on PATH. */
  readonly command: readonly string[];
  /** The device as the command should see it (`LOCAL_PV_BLKDEVICE`). */
  readonly device: string;
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
  /** False when the command never ran (device in use, or it could not start). */
  readonly started: boolean;
  /** The command's pid, which is also its process group id. */
  readonly pid?: number;
  readonly durationMs: number;
}

/** Grace between SIGTERM and SIGKILL when stopping a command. */
const KILL_GRACE_MS = 2000;

let ionicePath: string | null | undefined;
/** Where `ionice` is on PATH, looked up once. */
function findIonice(): string | null {
  if (ionicePath === undefined) {
    ionicePath = null;
    for (const dir of (process.env.PATH ?? '').split(':')) {
      const candidate = path.join(dir || '.', 'ionice');
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        ionicePath = candidate;
        break;
      } catch {
        // not here
      }
    }
  }
  return ionicePath;
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
  // The claim is released before the command runs: the shipped cleaners (mkfs,
  // wipefs, blkdiscard) open the device O_EXCL themselves and would fail on our
  // claim. The window is harmless: the PV is Released, so Kubernetes mounts it
  // nowhere until we delete it and a new PV is made, and an administrator who
  // mounts it in between is caught by those tools' own exclusive opens.
  const inUse = checkDeviceNotInUse(options.device);
  if (!inUse.ok) return notRun(inUse.reason);

  const ionice = options.lowIoPriority === false ? null : findIonice();
  const argv = ionice ? [ionice, '-c3', ...options.command] : [...options.command];

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
    const stop = (): void => {
      if (child.pid === undefined) return;
      killGroup(child.pid, 'SIGTERM');
      timers.push(setTimeout(() => killGroup(child.pid!, 'SIGKILL'), KILL_GRACE_MS));
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
      const what = `cleaner "${options.command.join(' ')}" on "${options.device}"`;
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
