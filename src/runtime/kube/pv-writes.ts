import type { V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { isAlreadyExists, isConflict, isNotFound, ObjectConflictError } from './errors';
import { CLEANUP_FINALIZER, PROVISIONED_BY_ANNOTATION } from '../well-known';

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

/** What became of a guarded delete. */
export type DeleteOutcome =
  /** Deleted, or deletion started (finalizers may hold it a while). */
  | 'deleted'
  /** No PV of that name: someone else deleted it, or our earlier attempt did. */
  | 'not-found'
  /** A PV of that name exists with another UID, or changed since it was read: left alone. */
  | 'changed';

/**
 * Deletes the PV only if it is still the object `uid` and, when given, still at
 * `resourceVersion`: a PV recreated under the same name survives, and so does one
 * that changed since the decision (e.g. a claim bound it meanwhile).
 */
export async function deletePersistentVolumeIfUnchanged(api: KubeApi, name: string, uid: string, resourceVersion?: string): Promise<DeleteOutcome> {
  try {
    await api.deletePersistentVolume(name, uid, resourceVersion);
    return 'deleted';
  } catch (err) {
    if (isNotFound(err)) return 'not-found';
    if (isConflict(err)) return 'changed';
    throw err;
  }
}

/** What became of a finalizer change. */
export type FinalizerOutcome = 'done' | 'not-found' | 'changed';

/**
 * Adds our cleanup finalizer (and `annotations`) to the PV as it was read: a PV that
 * changed since is left for the next decision. Gives the PV as patched when it was.
 */
export async function addCleanupFinalizer(api: KubeApi, pv: V1PersistentVolume, annotations: Record<string, string> = {}): Promise<V1PersistentVolume | 'not-found' | 'changed'> {
  const finalizers = [...(pv.metadata?.finalizers ?? []).filter((f) => f !== CLEANUP_FINALIZER), CLEANUP_FINALIZER];
  let patched: V1PersistentVolume | undefined;
  const outcome = await guardedPatch(async () => {
    patched = await api.patchPersistentVolumeMetadata(pv.metadata!.name!, pv.metadata!.resourceVersion!, {
      finalizers,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    });
  });
  return outcome === 'done' ? patched! : outcome;
}

/** Sets annotations on the PV as it was read (e.g. a volume identity recorded late). */
export async function annotatePersistentVolume(api: KubeApi, pv: V1PersistentVolume, annotations: Record<string, string>): Promise<FinalizerOutcome> {
  return guardedPatch(() => api.patchPersistentVolumeMetadata(pv.metadata!.name!, pv.metadata!.resourceVersion!, { annotations }));
}

/**
 * Removes our cleanup finalizer from the PV `uid`, which its caller has finished
 * with. Other writers may change a PV being deleted (the protection controller drops
 * its finalizer, phases move), so on a conflict it reads the PV again and retries
 * while it is still the same object with our finalizer.
 */
export async function removeCleanupFinalizer(api: KubeApi, name: string, uid: string): Promise<FinalizerOutcome> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const pv = await api.getPersistentVolume(name);
    if (!pv || pv.metadata?.uid !== uid) return 'not-found';
    const finalizers = pv.metadata?.finalizers ?? [];
    if (!finalizers.includes(CLEANUP_FINALIZER)) return 'done';
    const outcome = await guardedPatch(() => api.patchPersistentVolumeMetadata(name, pv.metadata!.resourceVersion!, {
      finalizers: finalizers.filter((f) => f !== CLEANUP_FINALIZER),
    }));
    if (outcome !== 'changed') return outcome;
  }
  return 'changed';
}

async function guardedPatch(patch: () => Promise<unknown>): Promise<FinalizerOutcome> {
  try {
    await patch();
    return 'done';
  } catch (err) {
    if (isNotFound(err)) return 'not-found';
    if (isConflict(err)) return 'changed';
    throw err;
  }
}
