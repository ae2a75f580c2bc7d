/**
 * Whether a filesystem volume holds anything anyone wrote: what a fresh `mkfs`
 * leaves (an empty `lost+found`) is nothing. Read through a handle, never by a
 * name below the root.
 */
import * as fs from 'node:fs';
import { handlePath, openDirectory } from './directory-handle';

/** What the volume's root holds, in a few words, or undefined when it holds nothing. */
export function filesystemHoldings(dir: string): string | undefined {
  const root = openDirectory(dir);
  try {
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
  } finally {
    fs.closeSync(root.fd);
  }
}
