/**
 * The real bin as a child process, for the tests (and the benchmark) that run it
 * whole: by default bundled from the TypeScript sources as the image bundles it (one
 * file, esbuild), in this process's mount namespace, so it sees the mounts and loop
 * devices the test made. Its log lines (JSON) are collected as they come.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildSync } from 'esbuild';
import { CollectedProcess } from './collected-process';
import { makeTempDir } from './privileged';

export const REPO = path.resolve(__dirname, '../..');

let bundle: string | undefined;

/**
 * The bin bundled as image/Dockerfile bundles it, made once per change of the sources (and
 * shared by the test workers): a start costs no TypeScript compilation (ts-node took some 0.6 s
 * of CPU a start, and the suites start the bin hundreds of times). It lies three levels under
 * the repository, as the image's lies under /app, so it finds package.json where the image's does.
 */
export function bundledBin(): string {
  if (bundle !== undefined) return bundle;
  const hash = crypto.createHash('sha256');
  const sources = (fs.readdirSync(path.join(REPO, 'src'), { recursive: true, encoding: 'utf8' }) as string[]).filter((f) => f.endsWith('.ts')).sort();
  for (const file of [...sources.map((f) => path.join('src', f)), 'package-lock.json']) hash.update(file).update(fs.readFileSync(path.join(REPO, file)));
  const out = path.join(REPO, '.cache', 'agent-bundle', hash.digest('hex').slice(0, 16), 'main.js');
  if (!fs.existsSync(out)) {
    // Written aside and renamed: workers that bundle at once never run a half-written file.
    const aside = `${out}.${process.pid}`;
    // image/Dockerfile's esbuild command.
    const options = { bundle: true, platform: 'node', target: 'node24', format: 'cjs', keepNames: true, logLevel: 'warning' } as const;
    buildSync({ ...options, entryPoints: [path.join(REPO, 'src/runtime/cli/main.ts')], outfile: aside });
    fs.renameSync(aside, out);
  }
  bundle = out;
  return out;
}

/** How long to wait for the listen address and for readiness. */
const STARTUP_TIMEOUT_MS = 30_000;
/** How long stop() waits after SIGTERM before it sends SIGKILL. */
const STOP_GRACE_MS = 10_000;

export interface AgentProcessOptions {
  /**
   * node's arguments that run the bin (e.g. a compiled main.js).
   * @default the bundled bin (bundledBin())
   */
  readonly entry?: string[];
  /**
   * Start from an environment with only PATH (plus `env`),
   * as a container does, instead of this process's whole environment.
   * @default false
   */
  readonly containerEnv?: boolean;
}

/**
 * Each test's own state directory: the agents one test starts (a restart, a second agent) share it; no other test sees it.
 * Outside jest (the bench), each agent gets a new one.
 */
const stateDirs = new Map<string, string>();

function stateDirOfThisTest(): string {
  if (typeof expect === 'undefined') return makeTempDir('lvp-state-');
  const test = expect.getState().currentTestName ?? '';
  let dir = stateDirs.get(test);
  if (dir === undefined) {
    dir = makeTempDir('lvp-state-');
    stateDirs.set(test, dir);
  }
  return dir;
}

export class AgentProcess extends CollectedProcess {
  /** `local-volume-provisioner <args...>` with `env` added to its environment, and the test's own volume record (LVP_STATE_DIR). */
  static start(args: string[], env: Record<string, string>, options: AgentProcessOptions = {}): AgentProcess {
    const base = options.containerEnv ? { PATH: process.env.PATH } : process.env;
    const child = spawn(process.execPath, [...(options.entry ?? [bundledBin()]), ...args], {
      cwd: REPO,
      env: { ...base, LVP_STATE_DIR: stateDirOfThisTest(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new AgentProcess(args, child);
  }

  private constructor(readonly args: string[], child: ChildProcess) {
    super(child);
  }

  /** Log records (JSON lines) whose `msg` is `message`. */
  logged(message: string): Record<string, unknown>[] {
    return this.lines.map(parseJson).filter((r): r is Record<string, unknown> => r?.msg === message);
  }

  /** Log lines at level error or fatal (the logger writes level names, not pino's numbers). */
  errors(): string[] {
    return this.lines.filter((l) => ['error', 'fatal'].includes(String(parseJson(l)?.level)));
  }

  /** The HTTP address from the log line that announces it. */
  async address(): Promise<string> {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    for (;;) {
      for (const line of this.lines) {
        const listen = parseJson(line)?.listen;
        if (typeof listen === 'string') return `http://${listen}`;
      }
      if (Date.now() > deadline || !this.running) throw new Error(`the bin logged no listen address (log so far:\n${this.log()})`);
      await sleep(20);
    }
  }

  /** GETs a path of its HTTP server. */
  async get(urlPath: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`${await this.address()}${urlPath}`);
    return { status: res.status, body: await res.text() };
  }

  /** Waits until /readyz answers 200. */
  async waitReady(): Promise<void> {
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while ((await this.get('/readyz').catch(() => ({ status: 0 }))).status !== 200) {
      if (Date.now() > deadline) throw new Error(`/readyz never answered 200 (log so far:\n${this.log()})`);
      await sleep(20);
    }
  }

  /** Sends `signal`; resolves to the exit code. */
  kill(signal: NodeJS.Signals): Promise<number | null> {
    this.child.kill(signal);
    return this.exited();
  }

  /** SIGTERM, then SIGKILL if it is still running after a grace period; resolves to the exit code. */
  async stop(): Promise<number | null> {
    if (this.running) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_GRACE_MS);
    const code = await this.exited();
    clearTimeout(timer);
    return code;
  }
}

/** A log line as a record, or undefined when it is not JSON. */
export function parseJson(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
