/**
 * What the agent, its driver's snapshotter, does with a VolumeSnapshotContent, decided from
 * the content alone, as the CSI snapshotter sidecar decides (external-snapshotter v8,
 * pkg/sidecar-controller): snapshotter.ts acts.
 */
import { POOL_PROVISIONER } from '../../config';
import { BEING_DELETED_ANNOTATION, CONTENT_FINALIZER, type VolumeSnapshotContent } from '../kube/snapshot-objects';

export type ContentAction =
  /** Take its snapshot (again, until it is ready: a take cut short is finished). */
  | 'take'
  /** Its snapshot goes (policy Delete), then the content's finalizer. */
  | 'delete'
  /** Policy Retain: the snapshot stays, the content's finalizer goes. */
  | 'let-go'
  | 'none';

/** Whether the content is one the agent handles: of its driver, taken of a volume (not one imported by its handle). */
export function isOurContent(content: VolumeSnapshotContent): boolean {
  return content.spec?.driver === POOL_PROVISIONER && content.spec.source?.volumeHandle !== undefined;
}

/**
 * A content being deleted is acted on once the snapshot controller marked it for deletion
 * (being-deleted, set before it deletes a content for its VolumeSnapshot) or it has no
 * VolumeSnapshot, and while its finalizer holds it; one not being deleted is taken until
 * ready.
 */
export function decideContent(content: VolumeSnapshotContent): ContentAction {
  const { metadata, spec, status } = content;
  if (metadata?.deletionTimestamp) {
    if (!metadata.finalizers?.includes(CONTENT_FINALIZER)) return 'none';
    const marked = metadata.annotations?.[BEING_DELETED_ANNOTATION] !== undefined || !spec?.volumeSnapshotRef?.uid;
    if (!marked) return 'none';
    return spec?.deletionPolicy === 'Delete' ? 'delete' : 'let-go';
  }
  return status?.readyToUse ? 'none' : 'take';
}
