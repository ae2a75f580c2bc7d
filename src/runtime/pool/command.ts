/** The storage tools a pool backend runs (btrfs, xfs_quota, chattr, ...), each a child process. */
import { execFile } from 'node:child_process';

/**
 * Runs `command`; rejects with its own words on failure, and also when it wrote an
 * error and still exited 0 (xfs_quota does: its errors are only on stderr).
 */
export function run(command: string, args: readonly string[], options: { timeoutMs?: number; stderrIsFailure?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, {
      timeout: options.timeoutMs ?? 60_000,
      encoding: 'utf8',
      env: { ...process.env, LC_ALL: 'C' },
      maxBuffer: 64 * 1024 * 1024,
    }, (error, stdout, stderr) => {
      if (error || (options.stderrIsFailure && stderr.trim() !== '')) {
        reject(new Error(`${command} ${args.join(' ')} failed: ${stderr.trim() || error?.message}`));
      } else {
        resolve(stdout);
      }
    });
  });
}

/** `/proc/<this process>/fd/<fd>/.`: the directory an open handle holds, for a tool run as a child (its /proc/self is its own). */
export function childHandlePath(fd: number): string {
  return `/proc/${process.pid}/fd/${fd}/.`;
}
