/**
 * Lists the candidate devices under a device dialect's deviceDir: every entry
 * that is not a directory, at any depth (device nodes, and symlinks such as
 * /dev/disk/by-path/...). Symlinks are not followed while walking, as Go's
 * filepath.Walk does not, so a link cycle cannot trap us. A subdirectory we
 * cannot list is reported and the walk goes on (upstream gives up entirely).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { codeUnitOrder } from '../code-unit-order';

export interface DeviceWalk {
  /** Paths of non-directory entries, sorted. */
  readonly entries: readonly string[];
  /** Directories that could not be listed, with why. */
  readonly unreadable: ReadonlyArray<{ readonly path: string; readonly reason: string }>;
}

export async function walkDeviceDir(deviceDir: string): Promise<DeviceWalk> {
  const entries: string[] = [];
  const unreadable: Array<{ path: string; reason: string }> = [];
  const visit = async (dir: string): Promise<void> => {
    let dirents: fs.Dirent[];
    try {
      dirents = await fs.promises.readdir(dir, { withFileTypes: true });
    } catch (error) {
      unreadable.push({ path: dir, reason: (error as Error).message });
      return;
    }
    await Promise.all(
      dirents.map(async (dirent) => {
        const child = path.posix.join(dir, dirent.name);
        if (dirent.isDirectory()) {
          await visit(child);
        } else {
          entries.push(child);
        }
      }),
    );
  };
  await visit(deviceDir);
  return { entries: entries.sort(), unreadable: unreadable.sort((a, b) => codeUnitOrder(a.path, b.path)) };
}
