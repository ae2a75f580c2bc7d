/**
 * The snapshot API's objects (snapshot.storage.k8s.io/v1, the CRDs of the upstream
 * snapshot controller), as far as the agent reads and writes them, and the names that
 * controller and its sidecar agree on (external-snapshotter v8: pkg/utils/util.go). The
 * agent takes the sidecar's place for its own driver, so it writes what the sidecar
 * writes, where the sidecar writes it.
 */
import type { KubernetesObject, V1ObjectReference } from '@kubernetes/client-node';

export const SNAPSHOT_API = '/apis/snapshot.storage.k8s.io/v1';

/** The content's finalizer the snapshot controller adds; the one who deletes the snapshot removes it. */
export const CONTENT_FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection';
/** Set by the snapshot controller on a content before it deletes it for its VolumeSnapshot. */
export const BEING_DELETED_ANNOTATION = 'snapshot.storage.kubernetes.io/volumesnapshot-being-deleted';
/**
 * The node a content's source volume is on, set by the snapshot controller run with
 * `--enable-distributed-snapshotting` (from the source PV's node affinity): each node's
 * snapshotter watches only its own node's contents.
 */
export const MANAGED_BY_LABEL = 'snapshot.storage.kubernetes.io/managed-by';

export interface VolumeSnapshotContent extends KubernetesObject {
  readonly spec?: {
    readonly driver?: string;
    readonly deletionPolicy?: 'Delete' | 'Retain';
    readonly source?: { readonly volumeHandle?: string; readonly snapshotHandle?: string };
    readonly sourceVolumeMode?: 'Filesystem' | 'Block';
    readonly volumeSnapshotClassName?: string;
    readonly volumeSnapshotRef?: V1ObjectReference;
  };
  readonly status?: VolumeSnapshotContentStatus;
}

export interface VolumeSnapshotContentStatus {
  readonly snapshotHandle?: string;
  /** Nanoseconds since the epoch. */
  readonly creationTime?: number;
  /** Bytes. */
  readonly restoreSize?: number;
  readonly readyToUse?: boolean;
  readonly error?: { readonly time?: string; readonly message?: string };
}

export interface VolumeSnapshot extends KubernetesObject {
  readonly spec?: { readonly source?: { readonly persistentVolumeClaimName?: string; readonly volumeSnapshotContentName?: string } };
  readonly status?: {
    readonly boundVolumeSnapshotContentName?: string;
    readonly readyToUse?: boolean;
    readonly restoreSize?: string;
    readonly error?: { readonly time?: string; readonly message?: string };
  };
}
