import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConfigMapData } from './model';

/**
 * Reads a ConfigMap mounted as a volume. Kubelet lays it out as
 * `key -> ..data/key` symlinks, `..data -> ..2024_01_01_00_00_00.123` and the
 * timestamped directory; only the visible names are keys, so every dot entry is
 * skipped and the key links are followed.
 */
export function readConfigMapDirectory(dir: string): ConfigMapData {
  const data: ConfigMapData = {};
  for (const name of fs.readdirSync(dir).sort()) {
    if (name.startsWith('.')) continue;
    const file = path.join(dir, name);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch (e) {
      // During kubelet's atomic update a removed key's link dangles for a moment; it is gone, not broken.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    if (stat.isFile()) data[name] = fs.readFileSync(file, 'utf8');
  }
  return data;
}

/** The data of a ConfigMap API object (a missing `data` is an empty ConfigMap). */
export function configMapData(obj: { data?: Record<string, string> }): ConfigMapData {
  return Object.fromEntries(Object.entries(obj.data ?? {}).filter(([, v]) => typeof v === 'string'));
}
