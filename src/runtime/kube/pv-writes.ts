import type { V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { isAlreadyExists, isConflict, isNotFound, ObjectConflictError } from './errors';
import { PROVISIONED_BY_ANNOTATION } from '../well-known';

/** Decides whether an existing PV is the very volume we were about to create. */
export type SameVolumePredicate = (existing: V1PersistentVolume, wanted: V1PersistentVolume) => boolean;

/** Same provisioned-by annotation and same `spec.local.path`: the volume a lost create response already made. */
export const sameProvisionerAndPath: SameVolumePredicate = (existing, wanted) =>
  existing.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] === wanted.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION]
  && existing.spec?.local?.path !== undefined
  && existing.spec?.local?.path === wanted.spec?.local?.path;

export interface EnsureResult {
  readonly pv: V1PersistentVolume;
  /** False when an identical PV was there already (e.g. our own create whose answer was lost). */
  readonly created: boolean;
}

/**
 * Creates the PV. AlreadyExists counts as success only when the existing PV is ours for
 * the same path; any other PV under that name is an ObjectConflictError naming both.
 */
export async function ensurePersistentVolume(api: KubeApi, pv: V1PersistentVolume, isSame: SameVolumePredicate = sameProvisionerAndPath):
Promise<EnsureResult> {
  const name = pv.metadata?.name;
  // Two rounds: the existing PV may vanish between our create and our read.
  for (let round = 0; round < 2; round++) {
    try {
      return { pv: await api.createPersistentVolume(pv), created: true };
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const existing = await api.getPersistentVolume(name!);
    if (!existing) continue;
    if (isSame(existing, pv)) return { pv: existing, created: false };
    throw new ObjectConflictError(`PersistentVolume "${name}" already exists for ${describe(existing)}; `
      + `not creating it for ${describe(pv)}`);
  }
  throw new ObjectConflictError(`PersistentVolume "${name}" kept reappearing and disappearing while being created for ${describe(pv)}`);
}

function describe(pv: V1PersistentVolume): string {
  const path = pv.spec?.local?.path ?? pv.spec?.hostPath?.path;
  const by = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION];
  return `path "${path ?? '(none)'}" (provisioned by "${by ?? '(unknown)'}")`;
}

/** What became of a UID-guarded delete. */
export type DeleteOutcome =
  /** Deleted, or deletion started (finalizers may hold it a while). */
  | 'deleted'
  /** No PV of that name: someone else deleted it, or our earlier attempt did. */
  | 'not-found'
  /** A PV of that name exists with another UID: recreated meanwhile, left alone. */
  | 'replaced';

/** Deletes the PV only if it is still the object with `uid`, so a PV recreated under the same name survives. */
export async function deletePersistentVolumeIfUnchanged(api: KubeApi, name: string, uid: string): Promise<DeleteOutcome> {
  try {
    await api.deletePersistentVolume(name, uid);
    return 'deleted';
  } catch (err) {
    if (isNotFound(err)) return 'not-found';
    if (isConflict(err)) return 'replaced';
    throw err;
  }
}
