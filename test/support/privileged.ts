/**
 * Fixtures for tests that need root: loop devices, filesystems and mounts.
 *
 * They run only inside the private mount namespace that
 * scripts/in-private-mount-namespace.sh makes for jest, so every mount vanishes
 * with the test run. Loop devices are global, so each one is detached by
 * `cleanupPrivileged()` (call it in afterAll/afterEach) and is backed by a file in
 * a temporary directory, never by a device we did not create.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const isRoot = process.getuid?.() === 0;
const inPrivateNamespace = process.env.LVP_IN_PRIVATE_MOUNT_NS === '1';

/** True where the privileged tests can run. */
export const canRunPrivileged = isRoot && inPrivateNamespace;

/**
 * `describe` for privileged tests: runs them where possible, skips them on a
 * developer's unprivileged machine, and fails in CI, where a skip would hide
 * untested code.
 */
export function describePrivileged(name: string, fn: () => void): void {
  if (canRunPrivileged) {
    describe(name, fn);
  } else if (process.env.CI) {
    describe(name, () => {
      test('runs as root in a private mount namespace', () => {
        throw new Error(
          `privileged tests must run in CI: root=${isRoot}, private mount namespace=${inPrivateNamespace} ` +
            '(run them through `npx projen test`)',
        );
      });
    });
  } else {
    describe.skip(`${name} (needs root; run through npx projen test)`, fn);
  }
}

function run(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const cleanups: Array<() => void> = [];
const tempDirs: string[] = [];

/** A fresh temporary directory, removed by cleanupPrivileged(). */
export function makeTempDir(prefix = 'lvp-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export interface LoopDevice {
  /** e.g. /dev/loop7 */
  readonly device: string;
  /** The sparse backing file. */
  readonly backingFile: string;
  readonly sizeBytes: number;
}

/** The backing file attached to a loop device now, if any. */
function loopBackingFile(device: string): string | undefined {
  try {
    return fs.readFileSync(`/sys/block/${path.basename(device)}/loop/backing_file`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** A sparse file of `sizeBytes` in a new temporary directory. */
function sparseFile(sizeBytes: number): string {
  const backingFile = path.join(makeTempDir('lvp-loop-'), 'disk.img');
  fs.closeSync(fs.openSync(backingFile, 'w'));
  fs.truncateSync(backingFile, sizeBytes);
  return backingFile;
}

/**
 * Detaches `device` while it still holds `backingFile`: a number we let go of may already
 * be another test's loop device, which is never touched.
 */
function detachIfOurs(device: string, backingFile: string): void {
  if (loopBackingFile(device) !== backingFile) return;
  try {
    run('losetup', ['--detach', device]);
  } catch {
    // already detached (a test may detach it to simulate a vanished disk)
  }
}

/** A loop device over a new sparse file of `sizeBytes`; detached by cleanupPrivileged(). */
export function createLoopDevice(sizeBytes: number): LoopDevice {
  const backingFile = sparseFile(sizeBytes);
  const device = run('losetup', ['--find', '--show', backingFile]);
  cleanups.push(() => detachIfOurs(device, backingFile));
  return { device, backingFile, sizeBytes };
}

/**
 * Another disk under `loop`'s number, as a disk replaced under its name: `loop` detached
 * and a new sparse file with an ext4 filesystem attached as the same device. Undefined
 * when another process took the number in between (nothing of ours is attached there).
 */
export function replaceLoopDisk(loop: LoopDevice): LoopDevice | undefined {
  const backingFile = sparseFile(loop.sizeBytes);
  mkfsExt4(backingFile);
  run('losetup', ['--detach', loop.device]);
  try {
    run('losetup', [loop.device, backingFile]);
  } catch {
    return undefined;
  }
  cleanups.push(() => detachIfOurs(loop.device, backingFile));
  return { device: loop.device, backingFile, sizeBytes: loop.sizeBytes };
}

/** Makes an ext4 filesystem on a device or an image file (quietly, without lazy init so it is deterministic). */
export function mkfsExt4(device: string): void {
  run('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0', device]);
}

/**
 * Runs `attempt` again while it was refused because a `losetup` held the device open: another
 * suite making or detaching its loop devices opens ours for a moment. The agent's refusal is
 * right (it is retried later there too); a test of something else waits it out.
 */
export async function pastLoopSetup<T extends { readonly ok: boolean; readonly reason?: string }>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    const result = await attempt();
    if (result.ok || !/held open by process \d+ \(losetup\)/.test(result.reason ?? '') || tries >= 50) return result;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Makes a btrfs filesystem on a device (a pool's, quotas turned on by the agent). */
export function mkfsBtrfs(device: string): void {
  run('mkfs.btrfs', ['-q', '-f', device]);
}

/** Mounts `source` on `target` (a device, or with `bind` a directory). Unmounted by cleanupPrivileged(). */
export function mount(source: string, target: string, options: { bind?: boolean; type?: string } = {}): void {
  fs.mkdirSync(target, { recursive: true });
  const args = options.bind ? ['--bind', source, target] : options.type ? ['-t', options.type, source, target] : [source, target];
  run('mount', args);
  cleanups.push(() => unmount(target));
}

/** Unmounts `target` if it is mounted (lazily, so a busy mount never wedges a test run). */
export function unmount(target: string): void {
  try {
    run('umount', ['-l', target]);
  } catch {
    // not mounted
  }
}

/** A directory that is its own mount point (a bind mount of itself), like a real local volume. */
export function makeMountPoint(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  mount(dir, dir, { bind: true });
}

/** Undoes every fixture made so far, newest first; safe to call more than once. */
export function cleanupPrivileged(): void {
  while (cleanups.length > 0) {
    cleanups.pop()!();
  }
  while (tempDirs.length > 0) {
    fs.rmSync(tempDirs.pop()!, { recursive: true, force: true });
  }
}
