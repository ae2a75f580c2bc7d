/**
 * The agent as its own driver's snapshotter, in the CSI snapshotter sidecar's place: for
 * each VolumeSnapshotContent of the driver whose volume is on this node (the snapshot
 * controller labels each with its volume's node when run with
 * `--enable-distributed-snapshotting`: each agent watches its own), the snapshot is taken
 * in the volume's pool and the content's status says so, as the sidecar writes it; a
 * content deleted under policy Delete has its snapshot deleted before its finalizer goes.
 * Run by the pass loop under the pools' locks, after the pool controller's pass: every
 * step is repeatable, and the node record's snapshot lines (pool-record.ts) are written
 * before the pool is touched, so a snapshot is never lost track of, whatever is killed
 * when: one whose content went while no agent ran is found by its line.
 */
import type { V1ObjectReference } from '@kubernetes/client-node';
import { decideContent, isOurContent } from './content-decisions';
import { parseSnapshotHandle, snapshotHandle } from './snapshot-handle';
import type { KubeApi } from '../kube/api-client';
import { isConflict, isNotFound } from '../kube/errors';
import type { EventRecorder } from '../kube/event-recorder';
import { CONTENT_FINALIZER, type VolumeSnapshotContent, type VolumeSnapshotContentStatus } from '../kube/snapshot-objects';
import { EventReasons, type Logger } from '../observability';
import type { PoolController } from '../pool/pool-controller';
import { poolVolumeHostPath } from '../pool/pool-decisions';
import type { PoolRecord, RecordedSnapshot } from '../pool/pool-record';
import { formatBinaryQuantity } from '../volume';

export interface SnapshotterDeps {
  readonly api: KubeApi;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly nodeName: string;
  /** This node's contents (labelled for it), as last listed and watched. */
  readonly contents: () => readonly VolumeSnapshotContent[];
  /** Whether `contents` is the server's (listed, watched): only then is a content's absence asked about. */
  readonly contentsKnown: () => boolean;
  readonly record: PoolRecord;
  readonly pools: Pick<PoolController, 'withPool'>;
  /** The size of the PV of a volume (by identity): what a volume restored from its snapshot must hold. */
  readonly volumeSize: (volumeId: string) => number | undefined;
  readonly now?: () => Date;
}

export class Snapshotter {
  constructor(private readonly deps: SnapshotterDeps) {}

  async pass(): Promise<void> {
    const contents = this.deps.contents().filter(isOurContent);
    for (const content of contents) {
      try {
        await this.sync(content);
      } catch (err) {
        if (isConflict(err)) continue; // changed meanwhile: the watch brings it back
        await this.fail(content, (err as Error).message);
      }
    }
    if (this.deps.contentsKnown()) await this.removeOrphans(new Set(contents.map((c) => c.metadata?.name ?? '')));
  }

  private async sync(content: VolumeSnapshotContent): Promise<void> {
    switch (decideContent(content)) {
      case 'take': return this.take(content);
      case 'delete': return this.remove(content);
      case 'let-go': return this.letGo(content);
      case 'none': return undefined;
    }
  }

  /** The snapshot taken (or found, taken by a try cut short) in its volume's pool, and the content's status written. */
  private async take(content: VolumeSnapshotContent): Promise<void> {
    const volumeId = content.spec!.source!.volumeHandle!;
    const ref = content.spec?.volumeSnapshotRef;
    if (!ref?.uid) return;
    const line = this.deps.record.line(volumeId);
    if (!line?.pvName) throw new Error(`volume ${volumeId} is not a pool volume of node "${this.deps.nodeName}" (its node record has no line of it)`);
    const name = `snapshot-${ref.uid}`;
    const taken = await this.deps.pools.withPool(line.storageClass, async ({ backend, pool }) => {
      const refused = backend.snapshotsRefused();
      if (refused) throw new Error(refused);
      const taking = {
        className: line.storageClass,
        name,
        hostPath: poolVolumeHostPath(pool, backend.snapshotNameIn(name)),
        content: content.metadata!.name!,
        volumeSnapshot: `${ref.namespace}/${ref.name}`,
        volumeSnapshotUid: ref.uid!,
        deletionPolicy: content.spec?.deletionPolicy ?? 'Delete',
        volumeMode: line.volumeMode,
      };
      await this.deps.record.taking(taking);
      const snapshot = await backend.snapshot({ identity: volumeId, name: line.pvName! }, name);
      await this.deps.record.taken(taking, snapshot.identity);
      return { ...snapshot, hostPath: taking.hostPath };
    });
    if (!taken) throw new Error(`pool class "${line.storageClass}" cannot be used on node "${this.deps.nodeName}" now (said on the Node)`);
    const restoreSize = this.deps.volumeSize(volumeId) ?? taken.sizeBytes;
    await this.deps.api.patchVolumeSnapshotContentStatus(content.metadata!.name!, content.metadata!.resourceVersion!, {
      snapshotHandle: snapshotHandle(this.deps.nodeName, taken.identity),
      creationTime: content.status?.creationTime ?? this.now().getTime() * 1_000_000,
      restoreSize,
      readyToUse: true,
      error: null,
    });
    const message = `took ${name} of ${line.pvName} (${formatBinaryQuantity(restoreSize)}) at ${taken.hostPath} on node "${this.deps.nodeName}"`;
    this.deps.logger.info({ content: content.metadata?.name, volumeId, snapshot: taken.identity }, 'snapshot taken');
    for (const subject of subjectsOf(content)) this.deps.events.normal(subject, EventReasons.SnapshotTaken.reason, message);
  }

  /** Policy Delete: the snapshot deleted (found by its line: only a snapshot this node's record knows is ever deleted), then the finalizer. */
  private async remove(content: VolumeSnapshotContent): Promise<void> {
    const recorded = this.recordedFor(content);
    if (recorded && !await this.deleteSnapshot(recorded)) return;
    await this.removeFinalizer(content);
    if (recorded) {
      this.deps.events.normal(contentReference(content), EventReasons.SnapshotDeleted.reason,
        `deleted ${recorded.name} at ${recorded.hostPath} on node "${this.deps.nodeName}"`);
    }
  }

  /** Policy Retain: the snapshot and its line stay; the content goes. */
  private async letGo(content: VolumeSnapshotContent): Promise<void> {
    await this.removeFinalizer(content);
    const recorded = this.recordedFor(content);
    if (recorded) this.deps.logger.warn({ content: content.metadata?.name, path: recorded.hostPath }, 'content deleted with deletionPolicy Retain: its snapshot stays');
  }

  /**
   * Snapshots whose content is gone (deleted, its finalizer stripped, while no agent could
   * act): asked of the server by name, never decided from the watch's copy alone; deleted
   * under the policy their content had, kept (and said) under Retain.
   */
  private async removeOrphans(listed: ReadonlySet<string>): Promise<void> {
    // A snapshot kept under Retain stays whatever became of its content: no request is made for it, pass after pass.
    for (const recorded of this.deps.record.snapshots().filter((s) => !listed.has(s.content) && s.deletionPolicy === 'Delete')) {
      if (await this.deps.api.getVolumeSnapshotContent(recorded.content)) continue;
      if (await this.deleteSnapshot(recorded)) {
        this.deps.logger.info({ content: recorded.content, path: recorded.hostPath }, 'snapshot of a content gone meanwhile deleted, under its policy Delete');
      }
    }
  }

  /** Deletes a recorded snapshot and its lines; false when its pool cannot be used now (tried again next pass). */
  private async deleteSnapshot(recorded: RecordedSnapshot): Promise<boolean> {
    const done = await this.deps.pools.withPool(recorded.className, async ({ backend }) => {
      const identity = recorded.identity ?? await backend.snapshotAt(recorded.name);
      if (identity) await backend.deleteSnapshot(identity);
      await this.deps.record.snapshotGone(recorded.className, recorded.name, recorded.identity);
      return true;
    });
    return done === true;
  }

  /** The snapshot the record knows for this content: by its handle's identity, else (a take cut short) by the content's name. */
  private recordedFor(content: VolumeSnapshotContent): RecordedSnapshot | undefined {
    const handle = parseSnapshotHandle(content.status?.snapshotHandle ?? '');
    const snapshots = this.deps.record.snapshots();
    return (handle?.node === this.deps.nodeName ? snapshots.find((s) => s.identity === handle.identity) : undefined)
      ?? snapshots.find((s) => s.content === content.metadata?.name);
  }

  private async removeFinalizer(content: VolumeSnapshotContent): Promise<void> {
    const finalizers = content.metadata?.finalizers ?? [];
    if (!finalizers.includes(CONTENT_FINALIZER)) return;
    try {
      await this.deps.api.patchVolumeSnapshotContentFinalizers(content.metadata!.name!, content.metadata!.resourceVersion!,
        finalizers.filter((f) => f !== CONTENT_FINALIZER));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * A snapshot that cannot be taken: the content's status says why, where the snapshot
   * controller copies it to the VolumeSnapshot (`kubectl describe volumesnapshot`), and an
   * Event on both; written once per reason, tried again each pass.
   */
  private async fail(content: VolumeSnapshotContent, message: string): Promise<void> {
    this.deps.logger.warn({ content: content.metadata?.name }, `snapshot not taken: ${message}`);
    if (content.status?.error?.message === message || content.metadata?.deletionTimestamp) return;
    const status: { [K in keyof VolumeSnapshotContentStatus]: VolumeSnapshotContentStatus[K] | null } = {
      readyToUse: false, error: { time: this.now().toISOString(), message },
    };
    try {
      await this.deps.api.patchVolumeSnapshotContentStatus(content.metadata!.name!, content.metadata!.resourceVersion!, status);
    } catch (err) {
      if (!isConflict(err) && !isNotFound(err)) throw err;
      return;
    }
    for (const subject of subjectsOf(content)) this.deps.events.warning(subject, EventReasons.SnapshotFailed.reason, message);
  }

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }
}

function contentReference(content: VolumeSnapshotContent): V1ObjectReference {
  return { apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshotContent', name: content.metadata?.name, uid: content.metadata?.uid };
}

/** The content and its VolumeSnapshot: `kubectl describe` of either shows what happened. */
function subjectsOf(content: VolumeSnapshotContent): V1ObjectReference[] {
  const ref = content.spec?.volumeSnapshotRef;
  return [contentReference(content), ...ref?.uid ? [{ apiVersion: 'snapshot.storage.k8s.io/v1', kind: 'VolumeSnapshot', namespace: ref.namespace, name: ref.name, uid: ref.uid }] : []];
}
