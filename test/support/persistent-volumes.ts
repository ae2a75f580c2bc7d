/** The checks on PVs the fixtures wait on, shared by the controller, device and end-to-end fixtures. */
import { V1PersistentVolume } from '@kubernetes/client-node';

export interface PvState {
  /** The phase the PV must be in. @default any */
  readonly phase?: string;
  /** A UID the PV must not have (it was deleted and made anew). @default any */
  readonly notUid?: string;
}

/** True when the PV exists and is in the state asked for. */
export function pvIs(pv: V1PersistentVolume | undefined, state: PvState): pv is V1PersistentVolume {
  return pv !== undefined && (state.notUid === undefined || pv.metadata?.uid !== state.notUid)
    && (state.phase === undefined || pv.status?.phase === state.phase);
}

/** "PV x is cached as Phase with a UID other than y", for what a wait awaited. */
export function cachedPvText(name: string, state: PvState): string {
  return `PV ${name} is cached${state.phase ? ` as ${state.phase}` : ''}${state.notUid ? ` with a UID other than ${state.notUid}` : ''}`;
}

/** True when the PV is gone, or (given `uid`) replaced by one with another UID. */
export function pvGone(pv: V1PersistentVolume | undefined, uid?: string): boolean {
  return pv === undefined || (uid !== undefined && pv.metadata?.uid !== uid);
}
