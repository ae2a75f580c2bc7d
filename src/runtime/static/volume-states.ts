/**
 * The one state each volume of this node is in, for the `volume_state` metric
 * and `plan`: derived from the PV's phase and what this pass saw, never stored.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { VolumeState, VolumeStateEntry } from '../observability';
import type { VolumeRecordEntry } from '../record';
import { parseQuantity } from '../volume';

export interface VolumeFacts {
  /** Its volume is gone (see MissingVolumeTracker). */
  readonly missing: boolean;
  /** Its path holds another disk or filesystem than the one recorded on it. */
  readonly identityMismatch?: boolean;
  /** Its volume is there, but the configuration no longer offers it. */
  readonly notConfigured?: boolean;
  /** A cleanup of it is queued or running. */
  readonly cleaning: boolean;
  /** Its last cleanup was refused for safety, and why. */
  readonly refusal?: 'identity-mismatch' | 'in-use' | 'refused' | 'missing';
}

const REFUSAL_STATES: Record<NonNullable<VolumeFacts['refusal']>, VolumeState> = {
  'identity-mismatch': 'identity-mismatch',
  'in-use': 'in-use',
  'refused': 'error',
  'missing': 'missing',
};

export function volumeStateOf(pv: V1PersistentVolume, facts: VolumeFacts): VolumeState {
  if (facts.cleaning) return 'cleaning';
  if (facts.refusal) return REFUSAL_STATES[facts.refusal];
  if (facts.identityMismatch) return 'identity-mismatch';
  if (facts.missing) return 'missing';
  if (facts.notConfigured) return 'not-configured';
  // Being deleted: held by our finalizer until its volume is clean.
  if (pv.metadata?.deletionTimestamp) return 'cleaning';
  switch (pv.status?.phase) {
    case 'Available':
      return 'available';
    case 'Bound':
      return 'bound';
    case 'Released':
      return 'released';
    default:
      // Pending (a create not yet processed) and Failed are both "not usable now".
      return pv.status?.phase === 'Pending' ? 'available' : 'error';
  }
}

/** A volume without a PV (rejected entry, error device, device holding data, a used volume held dirty). */
export interface VolumeWithoutPV {
  readonly path: string;
  readonly storageClass: string;
  readonly state: Extract<VolumeState, 'error' | 'held-data' | 'held-dirty'>;
}

export function volumeStateEntries(
  pvs: readonly V1PersistentVolume[],
  facts: (pv: V1PersistentVolume) => VolumeFacts,
  withoutPV: readonly VolumeWithoutPV[] = [],
): VolumeStateEntry[] {
  return [
    ...pvs.map((pv) => ({
      persistentVolume: pv.metadata?.name ?? '',
      path: pv.spec?.local?.path ?? '',
      storageClass: pv.spec?.storageClassName ?? '',
      state: volumeStateOf(pv, facts(pv)),
    })),
    ...withoutPV.map((v) => ({ persistentVolume: '', ...v })),
  ];
}

/** Total capacity of these PVs by volume mode (the capacity_bytes gauge, fixed upstream bug). */
export function capacityByMode(pvs: readonly V1PersistentVolume[]): { Filesystem: number; Block: number } {
  const total = { Filesystem: 0, Block: 0 };
  for (const pv of pvs) total[pv.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem'] += parseQuantity(pv.spec?.capacity?.storage) ?? 0;
  return total;
}

/** The deleter's held dirty volumes of this agent's dialect, for the volume_state metric. */
export function heldDirtyVolumes(held: ReadonlyArray<{ readonly entry: Pick<VolumeRecordEntry, 'hostPath' | 'storageClass'> }>): VolumeWithoutPV[] {
  return held.map(({ entry }) => ({ path: entry.hostPath, storageClass: entry.storageClass, state: 'held-dirty' as const }));
}
