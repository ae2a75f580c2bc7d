/**
 * What a user and Kubernetes' PV binder do to the PVs under test, and the checks
 * the fixtures wait on, shared by the controller, device and end-to-end fixtures.
 */
import { V1PersistentVolume } from '@kubernetes/client-node';
import { TestApiServer } from '../apiserver';

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

/** A new claim in `default` bound to the PV, as a user's PVC and the PV binder make it. Returns the claim's name. */
export function bindNewClaim(server: TestApiServer, pvName: string, claimName: string): string {
  const pv = server.get<V1PersistentVolume>('v1', 'PersistentVolume', pvName)!;
  server.create({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: claimName, namespace: 'default' },
    spec: {
      accessModes: pv.spec!.accessModes,
      resources: { requests: { storage: pv.spec!.capacity!.storage } },
      storageClassName: pv.spec!.storageClassName,
      volumeMode: pv.spec!.volumeMode,
    },
  });
  server.bindClaim(pvName, { namespace: 'default', name: claimName });
  return claimName;
}
