/**
 * The mounts the node service makes for kubelet, with the node's own mount(8): a
 * volume's directory bound onto a pod's target, a device's filesystem mounted there, a
 * Block volume's device bound onto a file. They are made in the agent's mount namespace,
 * under kubelet's directory, which the DaemonSet mounts from the host with bidirectional
 * propagation: kubelet, and the pod's container, see them at the same path.
 */
import * as fs from 'node:fs';
import { MountEntry, readMountTable } from '../discovery/mount-table';
import { run } from '../pool/command';

/** The mount at `target` (the last mounted there, the one seen through it), if any. */
export async function mountAt(target: string): Promise<MountEntry | undefined> {
  return (await readMountTable()).mountPoints.get(target);
}

/** Whether `a` and `b` are the same file (a target and the directory or device it was bound to). */
export function sameFile(a: string, b: string): boolean {
  const sa = fs.statSync(a, { bigint: true, throwIfNoEntry: false });
  const sb = fs.statSync(b, { bigint: true, throwIfNoEntry: false });
  return sa !== undefined && sb !== undefined && sa.dev === sb.dev && sa.ino === sb.ino && sa.rdev === sb.rdev;
}

/** Binds `source` (a directory, or a device onto a file) at `target`, read-only if asked. */
export async function bind(source: string, target: string, readOnly: boolean): Promise<void> {
  await run('mount', ['--bind', source, target]);
  if (readOnly) await run('mount', ['-o', 'remount,bind,ro', target]);
}

/** Mounts the filesystem on `device` at `target`. */
export async function mountFilesystem(device: string, target: string, fsType: string, options: readonly string[]): Promise<void> {
  await run('mount', ['-t', fsType, ...(options.length > 0 ? ['-o', options.join(',')] : []), device, target]);
}

/** Unmounts whatever is mounted at `target` (the last mount there). */
export async function unmount(target: string): Promise<void> {
  await run('umount', [target]);
}
