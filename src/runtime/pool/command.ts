/** The storage tools a pool backend runs (btrfs, xfs_quota, chattr, ...), each started by one of the agent's command shells. */
import { commandShells } from './command-shell';

/**
 * Runs `command`; rejects with its own words on failure, and also when it wrote an
 * error and still exited 0 (xfs_quota does: its errors are only on stderr).
 */
export async function run(command: string, args: readonly string[],
  options: { timeoutMs?: number; stderrIsFailure?: boolean } = {}): Promise<string> {
  const failed = (why: string) => new Error(`${command} ${args.join(' ')} failed: ${why}`);
  let result;
  try {
    result = await commandShells.run([command, ...args], options.timeoutMs ?? 60_000);
  } catch (e) {
    throw failed((e as Error).message);
  }
  const { stdout, stderr, code } = result;
  // As a spawn says it: callers tell a missing tool by it.
  if (code === 'ENOENT') throw failed(`spawn ${command} ENOENT`);
  if (code !== '0' || (options.stderrIsFailure && stderr.trim() !== '')) throw failed(stderr.trim() || `exit code ${code}`);
  return stdout;
}

/** `/proc/<this process>/fd/<fd>/.`: the directory an open handle holds, for a tool run as a child (its /proc/self is its own). */
export function childHandlePath(fd: number): string {
  return `/proc/${process.pid}/fd/${fd}/.`;
}
