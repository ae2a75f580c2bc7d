/**
 * What a directory-dialect PV takes from its StorageClass object: the reclaim
 * policy (nil means Delete; only Retain and Delete make sense for a local
 * volume) and the mount options.
 */
import type { V1StorageClass } from '@kubernetes/client-node';
import { RECLAIM_POLICIES, type ReclaimPolicy } from '../../config';

export interface StorageClassFields {
  readonly reclaimPolicy: ReclaimPolicy;
  readonly mountOptions: readonly string[];
}

export type StorageClassFieldsResult =
  | ({ readonly ok: true } & StorageClassFields)
  | { readonly ok: false; readonly message: string };

/** Reads the fields, or says why this class cannot be provisioned (like upstream, which skips the class). */
export function storageClassFields(className: string, storageClass: V1StorageClass | undefined): StorageClassFieldsResult {
  if (!storageClass) {
    return { ok: false, message: `StorageClass "${className}" does not exist; create it (provisioner kubernetes.io/no-provisioner)` };
  }
  const policy = storageClass.reclaimPolicy ?? 'Delete';
  if (!(RECLAIM_POLICIES as readonly string[]).includes(policy)) {
    return {
      ok: false,
      message: `StorageClass "${className}" has reclaimPolicy "${policy}"; local volumes support ${RECLAIM_POLICIES.join(' and ')}`,
    };
  }
  return { ok: true, reclaimPolicy: policy as ReclaimPolicy, mountOptions: [...(storageClass.mountOptions ?? [])] };
}
