/**
 * Whether a filesystem volume holds anything anyone wrote: what a fresh `mkfs`
 * leaves (an empty `lost+found`) is nothing. Read through a handle, never by a
 * name below the root; the root's metadata is captured through the same handle,
 * for each clean to give back (an administrator's mode, owner or ACL on it).
 */
import * as fs from 'node:fs';
import { DirectoryHandle, handlePath, openDirectory } from './directory-handle';
import { captureRootMetadata, RootMetadata } from './root-metadata';

/** A never-seen filesystem volume: what its root holds, or its root's metadata when it holds nothing. */
export type FilesystemFirstSight =
  | { readonly holdings: string }
  | { readonly holdings: undefined; readonly rootMetadata: RootMetadata }
  /** It holds nothing, but its root's metadata could not be read (why); cleans then leave the root as they find it. */
  | { readonly holdings: undefined; readonly rootMetadataProblem: string };

export async function filesystemFirstSight(dir: string): Promise<FilesystemFirstSight> {
  const root = openDirectory(dir);
  try {
    const holdings = holdingsOf(root);
    if (holdings !== undefined) return { holdings };
    try {
      return { holdings, rootMetadata: await captureRootMetadata(root) };
    } catch (e) {
      return { holdings, rootMetadataProblem: (e as Error).message };
    }
  } finally {
    fs.closeSync(root.fd);
  }
}

/** What the volume's root holds, in a few words, or undefined when it holds nothing. */
function holdingsOf(root: DirectoryHandle): string | undefined {
  const names = fs.readdirSync(handlePath(root.fd), { encoding: 'buffer' }).map((n) => n.toString('utf8'));
  const others = names.filter((n) => n !== 'lost+found');
  if (others.length > 0) return `${others.length} entr${others.length === 1 ? 'y' : 'ies'}, e.g. ${JSON.stringify(others[0])}`;
  if (names.length === 0) return undefined;
  let lostAndFound;
  try {
    lostAndFound = openDirectory('lost+found', root.fd);
  } catch {
    return '"lost+found" that is no directory';
  }
  try {
    const inside = fs.readdirSync(handlePath(lostAndFound.fd));
    return inside.length === 0 ? undefined : `${inside.length} entr${inside.length === 1 ? 'y' : 'ies'} in "lost+found"`;
  } finally {
    fs.closeSync(lostAndFound.fd);
  }
}
