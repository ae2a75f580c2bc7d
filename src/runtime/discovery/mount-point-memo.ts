/**
 * What earlier passes found at mount-point entries. A mount point's entry is the
 * root of the mount the table lists at its path: while that same mount (its ID,
 * device, root and disk sequence: volume/identity.ts mountInstanceKey) is still the topmost there, the
 * entry is the same directory of the same filesystem, so a pass takes the earlier
 * finding instead of an lstat and a statfs per volume (thousands per pass on a big
 * node, most of an idle agent's CPU). The cleaner never relies on this: it reads
 * the identity afresh through its own handle.
 *
 * Only the capacity can change under a live mount (a filesystem grown in place),
 * and it matters only when a PV is made. So the owner keeps here only volumes that
 * have their PV (`retain`), and one about to be offered is always measured afresh.
 */
import type { DiscoveredVolume } from './directory-discovery';
import type { MountEntry } from './mount-table';
import { mountInstanceKey } from '../volume/identity';

/** The class settings an entry's finding depends on, beside the entry itself. */
export interface MemoKey {
  readonly className: string;
  readonly mountDir: string;
  readonly hostDir: string;
  readonly volumeMode: string;
  readonly entryName: string;
}

export class MountPointMemo {
  private readonly findings = new Map<string, { readonly mount: string; readonly volume: DiscoveredVolume }>();

  /** The earlier finding for this entry, if the mount at its path is still the one it was made on. */
  recall(key: MemoKey, mount: MountEntry): DiscoveredVolume | undefined {
    const found = this.findings.get(keyOf(key));
    return found?.mount === mountInstanceKey(mount) ? found.volume : undefined;
  }

  remember(key: MemoKey, mount: MountEntry, volume: DiscoveredVolume): void {
    this.findings.set(keyOf(key), { mount: mountInstanceKey(mount), volume });
  }

  /** Forgets the finding for this entry (it is no longer that mount). */
  forget(key: MemoKey): void {
    this.findings.delete(keyOf(key));
  }

  /** Forgets every finding `keep` refuses (the owner's rule: volumes that have their PV). */
  retain(keep: (volume: DiscoveredVolume) => boolean): void {
    for (const [key, { volume }] of this.findings) if (!keep(volume)) this.findings.delete(key);
  }
}

function keyOf(key: MemoKey): string {
  return [key.className, key.mountDir, key.hostDir, key.volumeMode, key.entryName].join('\0');
}
