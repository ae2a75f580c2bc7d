/**
 * Commands the node runs as its own (LVM, losetup, dmsetup): in PID 1's mount and IPC
 * namespaces (the agent shares the host's PID namespace), so that they take the node's
 * configuration and locks (two LVM commands that change a volume group's metadata at
 * once must share them, or the metadata is lost) and its udev makes the /dev links
 * kubelet uses. The image has none of them. When the namespaces are this process's own
 * (the agent run on the host), they run here.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { run } from './command';

/** Long: an LVM command cut short leaves its work half done (a volume made, not activated), and a busy node's udev can be slow. */
const HOST_COMMAND_TIMEOUT_MS = 10 * 60_000;

function onHost(): boolean {
  return fs.readlinkSync('/proc/1/ns/mnt') === fs.readlinkSync('/proc/self/ns/mnt');
}

/** The argv that runs `command` as the node runs it. */
function hostArgv(command: string, args: readonly string[]): [string, string[]] {
  return onHost() ? [command, [...args]] : ['nsenter', ['--target', '1', '--mount', '--ipc', '--', command, ...args]];
}

/** Runs `command` on the node; rejects with its own words, or saying what the agent lacks when the node has no such command. */
export async function runOnHost(command: string, args: readonly string[]): Promise<string> {
  const [file, argv] = hostArgv(command, args);
  try {
    return await run(file, argv, { timeoutMs: HOST_COMMAND_TIMEOUT_MS });
  } catch (e) {
    if (onHost() && /ENOENT/.test((e as Error).message)) {
      throw new Error(`${command} is not on the node: this pool runs the node's own ${command} in its namespaces, which needs the host's PID namespace `
        + `(hostPid) and ${command} on the node`);
    }
    throw e;
  }
}

/** LVM on the node. */
export function lvm(args: readonly string[]): Promise<string> {
  return runOnHost('lvm', args);
}

/**
 * A long-lived command on the node (one that waits for something), started now: its
 * exit code (null when killed) when it ends, and a way to kill it.
 */
export function startOnHost(command: string, args: readonly string[]): { readonly exited: Promise<number | null>; kill(): void } {
  const [file, argv] = hostArgv(command, args);
  const child = spawn(file, argv, { stdio: 'ignore', env: { ...process.env, LC_ALL: 'C' } });
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('exit', (code) => resolve(code));
  });
  return { exited, kill: () => child.kill('SIGKILL') };
}

/** A path on the node's root filesystem, as this process reaches it (`/proc/1/root`, the host's root while the PID namespace is shared). */
export function hostPath(path: string): string {
  return onHost() ? path : `/proc/1/root${path}`;
}
