/**
 * What a pool of directory volumes (btrfs, XFS and ext4 project quotas) draws on: the
 * whole filesystem its directory is on, named as the volume record names a filesystem
 * volume (volume/identity.ts), with its root: every directory of it is the pool's.
 */
import * as fs from 'node:fs';
import { MountEntry, readMountTable } from '../discovery/mount-table';
import { mountIdentity, openDirectory } from '../volume';

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
