/**
 * What a pool of directory volumes (btrfs, XFS and ext4 project quotas) draws on: the
 * whole filesystem its directory is on, named as the volume record names a filesystem
 * volume (volume/identity.ts), with its root: every directory of it is the pool's.
 */
import * as fs from 'node:fs';
import { readMountTable } from '../discovery/mount-table';
import { mountIdentity, openDirectory } from '../volume';

export async function filesystemOf(dir: string): Promise<string> {
  const handle = openDirectory(dir);
  try {
    const mount = (await readMountTable()).entries.find((e) => e.mountId === handle.mountId);
    if (!mount) throw new Error(`the mount ${dir} is on is not in the mount table`);
    return await mountIdentity({ ...mount, root: '/' });
  } finally {
    fs.closeSync(handle.fd);
  }
}
