/**
 * The device dialect writes the spec a PV was made with onto the PV, so a later
 * spec change can be told apart from the PVs made before it.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { DeviceSpecConfig } from '../../config';
import { DEVICE_SPEC_ANNOTATION_PREFIX } from '../well-known';

const SPEC_KEYS = ['storageClassName', 'volumeMode', 'fsType', 'deviceDir', 'deviceNameFilter'] as const;

/** The keys upstream records for a spec: fsType only with Filesystem. */
function recordedKeys(spec: DeviceSpecConfig): ReadonlyArray<(typeof SPEC_KEYS)[number]> {
  return spec.volumeMode === 'Filesystem' ? SPEC_KEYS : SPEC_KEYS.filter((key) => key !== 'fsType');
}

/** `local-pv-provisioner.cybozu.io/<key>` for each spec key upstream records. */
export function deviceSpecAnnotations(spec: DeviceSpecConfig): Record<string, string> {
  return Object.fromEntries(recordedKeys(spec).map((key) => [`${DEVICE_SPEC_ANNOTATION_PREFIX}${key}`, String(spec[key])]));
}

/** The spec keys whose annotation on `pv` differs from `spec` (`[]` when the PV follows it), compared as upstream compares them. */
export function deviceSpecDifferences(pv: V1PersistentVolume, spec: DeviceSpecConfig): string[] {
  const annotations = pv.metadata?.annotations ?? {};
  return recordedKeys(spec).filter((key) => annotations[`${DEVICE_SPEC_ANNOTATION_PREFIX}${key}`] !== String(spec[key]));
}
