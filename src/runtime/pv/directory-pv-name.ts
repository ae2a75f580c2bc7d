/**
 * The Go static provisioner's PV name: `local-pv-` + the lower-case hex (not
 * zero-padded) of FNV-1a over entry name + node name + StorageClass name.
 * Identical names are what make its existing PVs ours on upgrade.
 */
import { fnv1a32 } from './fnv1a';

export function directoryPVName(entryName: string, nodeName: string, storageClassName: string): string {
  return `local-pv-${fnv1a32(entryName + nodeName + storageClassName).toString(16)}`;
}
