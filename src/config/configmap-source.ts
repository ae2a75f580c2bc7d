import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigMapData } from './model';

/**
 * Reads a ConfigMap mounted as a volume. Kubelet lays it out as
 * `key -> ..data/key` links, `..data -> ..2024_01_01_00_00_00.123` and the
 * timestamped directory holding the files, and updates it by writing a new
 * timestamped directory and swapping `..data` in one rename. Reading every key
 * from the directory `..data` points at (resolved once) gives one consistent
 * generation even while an update is under way; a directory without `..data`
 * (written by hand, a bind mount) is read as it is. Dot entries are never keys.
 */
export function readConfigMapDirectory(dir: string): ConfigMapData {
  const generation = currentGeneration(dir);
  const data: ConfigMapData = {};
  for (const name of fs.readdirSync(generation).sort()) {
    if (name.startsWith('.')) continue;
    const file = path.join(generation, name);
    // A dangling link names nothing to read; it is not a key.
    const stat = fs.statSync(file, { throwIfNoEntry: false });
    if (stat?.isFile()) data[name] = fs.readFileSync(file, 'utf8');
  }
  return data;
}

function currentGeneration(dir: string): string {
  try {
    return fs.realpathSync(path.join(dir, '..data'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return dir;
    throw e;
  }
}

/** The data of a ConfigMap API object (a missing `data` is an empty ConfigMap). */
export function configMapData(obj: { data?: Record<string, string> }): ConfigMapData {
  return Object.fromEntries(Object.entries(obj.data ?? {}).filter(([, v]) => typeof v === 'string'));
}
