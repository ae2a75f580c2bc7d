/**
 * The real bin as a child process, run from the TypeScript sources through
 * ts-node (transpile only), for the bin tests next to this file: its log lines
 * (pino JSON), and signals.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';

const REPO = path.resolve(__dirname, '../../..');
const MAIN = path.join(REPO, 'src/runtime/cli/main.ts');

export class Bin {
  /** `local-volume-provisioner <args...>` with `env` added to this process's environment. */
  static start(args: string[], env: Record<string, string>): Bin {
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', MAIN, ...args], {
      cwd: REPO,
      env: { ...process.env, TS_NODE_PROJECT: path.join(REPO, 'test/tsconfig.json'), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new Bin(child);
  }

  readonly lines: string[] = [];
  private readonly exited: Promise<number | null>;

  private constructor(readonly child: ChildProcess) {
    let partial = '';
    const collect = (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop()!;
      this.lines.push(...parts);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Log records (JSON lines) whose `msg` is `message`. */
  logged(message: string): Record<string, unknown>[] {
    return this.lines.map(parseJson).filter((r): r is Record<string, unknown> => r?.msg === message);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(signal: NodeJS.Signals): Promise<number | null> {
    this.child.kill(signal);
    return this.exited;
  }

  /** The log so far, for failure messages. */
  log(): string {
    return this.lines.join('\n');
  }
}

function parseJson(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
