/**
 * A discovery directory's stamp: its inode and its modification and change times.
 * Making, removing, renaming or replacing an entry (a symlink retargeted by rename
 * too) changes them, so one stat tells an idle pass that no entry of the directory
 * changed since the last. What an entry leads to outside the directory (a symlink's
 * target, a mount on it) is not in the stamp: the mount table and the caller's own
 * rules answer for those.
 *
 * Times tick coarsely (a clock tick of a few ms; whole seconds, or two on FAT): a
 * second change within the tick of the first leaves them as they were. So a
 * directory changed less than two seconds ago has no stamp yet, as git distrusts a
 * racily clean file.
 */
import * as fs from 'node:fs';

/** How recent a change must be for the stamp not to be trusted: the coarsest tick of common filesystems. */
export const RACY_WINDOW_MS = 2000;

/** The stamp of `dir` (followed through symlinks), or undefined when it cannot be read or changed within RACY_WINDOW_MS. */
export function directoryStamp(dir: string, nowMs: number = Date.now()): string | undefined {
  let st: fs.BigIntStats;
  try {
    st = fs.statSync(dir, { bigint: true });
  } catch {
    return undefined;
  }
  const changedNs = st.ctimeNs > st.mtimeNs ? st.ctimeNs : st.mtimeNs;
  if (BigInt(Math.floor(nowMs - RACY_WINDOW_MS)) * 1_000_000n < changedNs) return undefined;
  return `${st.dev}:${st.ino}:${st.mtimeNs}:${st.ctimeNs}`;
}
