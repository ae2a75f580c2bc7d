/**
 * What a pool of directory volumes (btrfs, XFS and ext4 project quotas) draws on: the
 * whole filesystem its directory is on, named as the volume record names a filesystem
 * volume (volume/identity.ts), with its root: every directory of it is the pool's.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { run } from './command';
import { MountEntry, readMountTable } from '../discovery/mount-table';
import { mountIdentity, openDirectory } from '../volume';
import { deviceNumberOf } from '../volume/device-number';

/** The mount the directory is reached through, as this process's mount table has it. */
export async function mountOf(dir: string): Promise<MountEntry> {
  const handle = openDirectory(dir);
  try {
    const mount = (await readMountTable()).entries.find((e) => e.mountId === handle.mountId);
    if (!mount) throw new Error(`the mount ${dir} is on is not in the mount table`);
    return mount;
  } finally {
    fs.closeSync(handle.fd);
  }
}

export async function filesystemOf(dir: string): Promise<string> {
  return mountIdentity({ ...await mountOf(dir), root: '/' });
}

/**
 * The block device of the filesystem the directory is on, at the path the mount table
 * names (where xfs_quota looks for it). A disk the node got after the agent's container
 * started has no node in the container's own /dev: it is made there, with the numbers the
 * mount table gives; one there with other numbers is refused.
 */
export async function deviceOf(dir: string): Promise<string> {
  const mount = await mountOf(dir);
  if (!mount.source.startsWith('/dev/') || mount.major === 0) throw new Error(`the filesystem of ${dir} (${mount.fsType} from ${mount.source}) has no block device`);
  const st = fs.statSync(mount.source, { throwIfNoEntry: false, bigint: true });
  if (!st) {
    fs.mkdirSync(path.dirname(mount.source), { recursive: true });
    await run('mknod', ['--mode=0600', mount.source, 'b', String(mount.major), String(mount.minor)]);
    return mount.source;
  }
  const { major, minor } = deviceNumberOf(st.rdev);
  if (!st.isBlockDevice() || major !== mount.major || minor !== mount.minor) {
    throw new Error(`${mount.source}, where the mount table says the filesystem of ${dir} is, is not its device ${mount.major}:${mount.minor} here`);
  }
  return mount.source;
}
