/**
 * The directory dialect's rule for one entry of a discovery directory, as the
 * Go static provisioner applies it, as a pure function of what the entry is:
 * - a directory is a Filesystem volume only if it is exactly a mount point;
 * - a block device, or a symlink to one, is a Block volume, or a Filesystem
 *   volume when the class says so (kubelet formats it with fsType);
 * - a directory in a Block class, and anything else, is rejected.
 */
import type { VolumeMode } from '../../config';
import type { EntryInspection } from '../volume';

export type RejectionCode =
  | 'not-a-mount-point'
  | 'directory-in-block-class'
  | 'unsupported-entry'
  | 'broken-link'
  | 'unreadable-entry'
  | 'size-unknown';

export type EntryDecision =
  | { readonly accept: true; readonly source: 'mount-point' | 'block-device'; readonly volumeMode: VolumeMode }
  | { readonly accept: false; readonly code: RejectionCode; readonly reason: string; readonly hint?: string };

export interface EntryFacts {
  /** The entry's path in the container (mountDir/entry). */
  readonly path: string;
  readonly inspection: EntryInspection;
  /** Whether `path` itself is in the mount table. */
  readonly isMountPoint: boolean;
  readonly className: string;
  readonly classVolumeMode: VolumeMode;
}

export function classifyEntry(facts: EntryFacts): EntryDecision {
  const { path, inspection, className, classVolumeMode } = facts;
  const p = JSON.stringify(path);
  switch (inspection.kind) {
    case 'block-device':
      return { accept: true, source: 'block-device', volumeMode: classVolumeMode };
    case 'directory':
      if (classVolumeMode === 'Block') {
        return {
          accept: false,
          code: 'directory-in-block-class',
          reason: `path ${p} is ${inspection.description}, but class "${className}" has volumeMode Block, which takes only block devices`,
          hint: 'put block devices (or symlinks to them) in a Block class directory, or move the directory to a Filesystem class',
        };
      }
      if (!facts.isMountPoint) {
        return {
          accept: false,
          code: 'not-a-mount-point',
          reason: `path ${p} is not a valid mount point`,
          hint:
            (inspection.linkTarget !== undefined ? `it is ${inspection.description}, and a symlink is never a mount point; ` : '') +
            'mount a filesystem there (or bind-mount the directory onto itself) and mount the discovery directory into the container with mountPropagation HostToContainer',
        };
      }
      return { accept: true, source: 'mount-point', volumeMode: classVolumeMode };
    case 'broken-link':
      return { accept: false, code: 'broken-link', reason: `path ${p} is ${inspection.description}` };
    case 'regular-file':
    case 'other':
      return {
        accept: false,
        code: 'unsupported-entry',
        reason: `path ${p} is ${inspection.description}; only mount points and block devices can be volumes`,
      };
  }
}
