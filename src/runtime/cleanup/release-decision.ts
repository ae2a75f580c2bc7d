/**
 * What to do with a PV of this node that may have been released: the deleter's
 * decision, as a pure function of the PV, who we are, what is configured and how
 * we may hold PVs.
 *
 * A volume is wiped only when its PV is provably ours, Released with reclaim
 * policy Delete, its path lies under a configured directory, and (checked by the
 * cleaner on the open volume) the volume is the one recorded on the PV. With the
 * finalizer (`finalizer` mode, the normal one) the order makes every step safe:
 *
 *   Bound ──(pv-stewardship.ts)──> has our finalizer ──Released──> retire (DELETE,
 *   uid+resourceVersion preconditions) ──> being deleted: no claim can bind it
 *   ──clean──> our finalizer removed: the PV goes, discovery offers the volume again.
 *
 * (A Released PV that lacks our finalizer gets it first: `protect`.)
 *
 * A crash anywhere leaves the PV held by our finalizer, and a PV deleted by anyone
 * is cleaned before it goes. Without update permission on PVs (the Go
 * provisioner's RBAC) we cannot hold them: `legacy` mode cleans first and then
 * deletes with preconditions, as upstream does.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { containerPathFor } from './path-safety';
import type { ClassConfig, DeviceSpecConfig, DeviceWipe, VolumeMode } from '../../config';
import type { VolumeRecordEntry } from '../record';

/** What the node's volume record says of a PV's volume: its state, and the identity it was recorded under. */
export type RecordedVolume = Pick<VolumeRecordEntry, 'state' | 'identity'>;
import {
  BOUND_BY_CONTROLLER_ANNOTATION, CLEANUP_FINALIZER, DEVICE_DIALECT_NODE_LABELS, NODE_LABEL, PROVISIONED_BY_ANNOTATION, VOLUME_IDENTITY_ANNOTATION,
} from '../well-known';

/** Who this provisioner is on this node. */
export interface NodeIdentity {
  readonly nodeName: string;
  /** The value we write in `pv.kubernetes.io/provisioned-by`. */
  readonly provisionerName: string;
}

/** What is configured on this node: a directory-dialect class map, or a device spec. */
export type ConfiguredVolumes =
  | { readonly dialect: 'directory'; readonly storageClassMap: Readonly<Record<string, ClassConfig>> }
  | { readonly dialect: 'device'; readonly spec: DeviceSpecConfig };

/** How this agent holds the PVs it manages (see the module comment). */
export type ReclaimMode = 'finalizer' | 'legacy';

/** How a volume is to be cleaned. */
export type CleanMethod =
  /** Directory dialect: a directory is emptied, a block device gets the class's command. */
  | { readonly kind: 'class'; readonly className: string; readonly blockCleanerCommand: readonly string[] }
  /** Device dialect: the device is zeroed, whole or (`upstream-ranges`) upstream's ranges only, as the node's spec says. */
  | { readonly kind: 'device-wipe'; readonly wipe?: DeviceWipe };

/** A Released volume of ours, located for the cleaner. */
export interface CleanTarget {
  readonly pvName: string;
  readonly pvUid: string;
  readonly storageClassName: string;
  readonly volumeMode: VolumeMode;
  /** `spec.local.path`, as written on the PV (host view). */
  readonly hostPath: string;
  /** The same entry as this container sees it: what is cleaned. */
  readonly path: string;
  /** The container-side directory `path` must stay inside (class mountDir or deviceDir). */
  readonly classDir: string;
  /** For Jobs: the class's host directory and mount directory (directory dialect). */
  readonly hostDir?: string;
  readonly method: CleanMethod;
  /** The identity recorded on the PV when it was made; the volume must still have it. Absent on PVs made before identities. */
  readonly identity?: string;
}

export type ReleaseDecision =
  /** Released, to be cleaned, without our finalizer yet: add it before anything else. */
  | { readonly action: 'protect'; readonly reason: string; readonly target: CleanTarget }
  /** Released and held by our finalizer: delete it (preconditions: uid, resourceVersion), so no claim can bind it. */
  | { readonly action: 'retire'; readonly reason: string; readonly target: CleanTarget }
  /** Clean the volume; then remove our finalizer (`finalizer` mode) or delete the PV (`legacy` mode). */
  | { readonly action: 'clean'; readonly reason: string; readonly target: CleanTarget }
  /**
   * Let it go without cleaning: its reclaim policy keeps the data and it is being deleted,
   * it was never bound, or (device dialect) its device cannot be cleaned here but will be
   * wiped before it is offered again. Our finalizer is removed, or the PV deleted.
   */
  | { readonly action: 'let-go'; readonly reason: string }
  /** Ours and to be cleaned, but its volume cannot be located here: keep it, with a Warning. */
  | { readonly action: 'hold'; readonly reason: string }
  /** Reclaim policy Retain: nothing to do. */
  | { readonly action: 'retain'; readonly reason: string }
  /** Recycle (`unsupported`) or an unknown policy: record a Warning Event, touch nothing. */
  | { readonly action: 'warn'; readonly reason: string; readonly policy: 'unsupported' | 'unknown' }
  /** Not provably ours: never touched, no Event. */
  | { readonly action: 'not-ours'; readonly reason: string }
  /** Not Released, or being deleted by someone else's rules. */
  | { readonly action: 'skip'; readonly reason: string }
  /**
   * Offered (Available) although the node's volume record says a tenant used its volume
   * (an administrator cleared its claimRef): deleted with preconditions, so no claim binds
   * it; the record then cleans or holds the volume by its reclaim policy.
   */
  | { readonly action: 'withdraw'; readonly reason: string };

/** Whether the PV is one this agent manages in `dialect`; the reason when it is not. */
export function ownership(pv: V1PersistentVolume, me: NodeIdentity, dialect: ConfiguredVolumes['dialect']): { ok: true } | { ok: false; reason: string } {
  const by = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION];
  const conflict = otherNodeLabel(pv, me.nodeName);
  if (conflict) return { ok: false, reason: conflict };
  if (by === me.provisionerName) return { ok: true };
  // The device-selecting provisioner writes no provisioned-by; its PVs are known by its node label.
  if (dialect === 'device' && by === undefined && DEVICE_DIALECT_NODE_LABELS.some((k) => pv.metadata?.labels?.[k] === me.nodeName)) return { ok: true };
  return { ok: false, reason: `provisioned by "${by ?? 'nobody'}", not "${me.provisionerName}"` };
}

/**
 * True when the PV's fields show no sign of a claim. Fields an administrator can edit:
 * the node's volume record decides where it knows the volume (see `unused`).
 */
export function neverBound(pv: V1PersistentVolume): boolean {
  const phase = pv.status?.phase;
  return (phase === 'Available' || phase === 'Pending' || phase === undefined)
    && pv.spec?.claimRef?.uid === undefined
    && pv.metadata?.annotations?.[BOUND_BY_CONTROLLER_ANNOTATION] === undefined;
}

/**
 * True when nothing a tenant wrote can be on the PV's volume: its line in the node's volume
 * record says so (`offered`: no PV of it was ever seen used), or, for a volume the record
 * does not know (a PV whose volume was never found), the PV's own fields do.
 */
export function unused(pv: V1PersistentVolume, recorded: RecordedVolume | undefined): boolean {
  if (recorded !== undefined) return recorded.state !== 'dirty' && neverBound(pv);
  return neverBound(pv);
}

export function hasCleanupFinalizer(pv: V1PersistentVolume): boolean {
  return pv.metadata?.finalizers?.includes(CLEANUP_FINALIZER) ?? false;
}

/**
 * Decides what to do with a PV that may have been released; `recorded` is its volume's
 * state in the node's volume record (undefined when the record does not know it).
 */
export function decideRelease(pv: V1PersistentVolume, me: NodeIdentity, configured: ConfiguredVolumes, mode: ReclaimMode,
  recorded?: RecordedVolume): ReleaseDecision {
  const name = pv.metadata?.name ?? '<unnamed>';
  const owned = ownership(pv, me, configured.dialect);
  if (!owned.ok) return { action: 'not-ours', reason: `PV "${name}": ${owned.reason}` };
  const deleting = pv.metadata?.deletionTimestamp !== undefined && pv.metadata?.deletionTimestamp !== null;
  const policy = effectiveReclaimPolicy(pv, configured);

  if (deleting) {
    if (!hasCleanupFinalizer(pv)) return { action: 'skip', reason: `PV "${name}" is being deleted and does not carry our finalizer` };
    if (unused(pv, recorded)) return { action: 'let-go', reason: `PV "${name}" is being deleted and was never bound: nothing of anyone is on its volume` };
    if (policy !== 'Delete') {
      return { action: 'let-go', reason: `PV "${name}" is being deleted and its reclaim policy ${policy ?? '(none)'} keeps its data` };
    }
  } else {
    const phase = pv.status?.phase;
    if (recorded?.state === 'dirty' && (phase === 'Available' || phase === 'Pending')) {
      return { action: 'withdraw', reason: `PV "${name}" is ${phase} but its volume was used by a tenant and is not clean yet` };
    }
    if (phase !== 'Released') return { action: 'skip', reason: `PV "${name}" is ${phase ?? 'without a phase'}, not Released` };
    if (policy === 'Retain') return { action: 'retain', reason: `PV "${name}" has reclaim policy Retain; its data is kept` };
    if (policy === 'Recycle') {
      return { action: 'warn', policy: 'unsupported', reason: `PV "${name}" has reclaim policy Recycle, which local volumes do not support; its data is kept` };
    }
    if (policy !== 'Delete') return { action: 'warn', policy: 'unknown', reason: `PV "${name}" has unknown reclaim policy "${policy ?? ''}"; its data is kept` };
  }

  const ref = baseTarget(pv, recorded);
  const located = configured.dialect === 'directory' ? locateDirectoryVolume(ref, configured.storageClassMap) : locateDeviceVolume(ref, configured.spec);
  if (!located.ok) {
    // The device dialect wipes every device (or holds it for its data) before offering it, so its
    // PV may go: the disk, wherever it shows up again, is never offered with old data.
    if (configured.dialect === 'device') return { action: 'let-go', reason: `PV "${name}" cannot be cleaned here (${located.reason}); its device is wiped before it is ever offered again` };
    return { action: 'hold', reason: `PV "${name}" cannot be cleaned here: ${located.reason}` };
  }
  if (deleting || mode === 'legacy') {
    return { action: 'clean', reason: `PV "${name}" is ${deleting ? 'being deleted' : 'Released'} with reclaim policy Delete`, target: located.target };
  }
  return hasCleanupFinalizer(pv)
    ? { action: 'retire', reason: `PV "${name}" is Released with reclaim policy Delete`, target: located.target }
    : { action: 'protect', reason: `PV "${name}" is Released with reclaim policy Delete and has no cleanup finalizer yet`, target: located.target };
}

export type Recheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/**
 * The check right before cleaning: the PV re-read from the API server (undefined
 * when it is gone) must still be the same object (UID), still to be cleaned, and at
 * the same path with the same recorded identity. Anything else stops the cleanup.
 */
export function recheckBeforeCleaning(
  fresh: V1PersistentVolume | undefined,
  target: CleanTarget,
  me: NodeIdentity,
  configured: ConfiguredVolumes,
  mode: ReclaimMode,
  recorded?: RecordedVolume,
): Recheck {
  if (!fresh) return { ok: false, reason: `PV "${target.pvName}" no longer exists` };
  if (fresh.metadata?.uid !== target.pvUid) {
    return { ok: false, reason: `PV "${target.pvName}" was replaced (UID ${fresh.metadata?.uid ?? 'none'}, expected ${target.pvUid})` };
  }
  const decision = decideRelease(fresh, me, configured, mode, recorded);
  if (decision.action !== 'clean') return { ok: false, reason: decision.reason };
  const now = decision.target;
  if (now.path !== target.path || now.hostPath !== target.hostPath || now.identity !== target.identity) {
    return { ok: false, reason: `PV "${target.pvName}" changed: it now points at "${now.hostPath}" (identity ${now.identity ?? 'none'})` };
  }
  return { ok: true };
}

/** The labels that name a PV's node, in either dialect. */
const NODE_LABELS = [NODE_LABEL, ...DEVICE_DIALECT_NODE_LABELS];

/** A node label naming another node disproves ownership whatever else the PV says. */
function otherNodeLabel(pv: V1PersistentVolume, nodeName: string): string | undefined {
  const labels = pv.metadata?.labels;
  if (!labels) return undefined;
  for (const key of NODE_LABELS) {
    const value = labels[key];
    if (value !== undefined && value !== nodeName) return `label ${key}=${value} names another node`;
  }
  return undefined;
}

/**
 * The fields of a target that name the volume, from a PV. A PV made before identities (or by
 * upstream) carries none; the identity the record adopted it under is checked instead.
 */
function baseTarget(pv: V1PersistentVolume, recorded: RecordedVolume | undefined): VolumeRef {
  const identity = pv.metadata?.annotations?.[VOLUME_IDENTITY_ANNOTATION] ?? recorded?.identity;
  return {
    pvName: pv.metadata?.name ?? '',
    pvUid: pv.metadata?.uid ?? '',
    storageClassName: pv.spec?.storageClassName ?? '',
    volumeMode: pv.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem',
    hostPath: pv.spec?.local?.path ?? '',
    ...(identity !== undefined ? { identity } : {}),
  };
}

type VolumeRef = Pick<CleanTarget, 'pvName' | 'pvUid' | 'storageClassName' | 'volumeMode' | 'hostPath' | 'identity'>;

/** The process-table key of a volume cleaned without its PV: its last PV's UID, else its identity. */
export function recordTaskKey(entry: VolumeRecordEntry): string {
  return entry.pvUid ?? `record:${entry.identity}`;
}

/**
 * Locates for the cleaner a dirty volume of the node's volume record whose PV is gone,
 * by its recorded class, path and identity (the cleaner checks the identity on the open
 * volume), or says why it cannot be located here.
 */
export function locateRecordedVolume(entry: VolumeRecordEntry, configured: ConfiguredVolumes): Located {
  const ref: VolumeRef = {
    pvName: entry.pvName ?? '',
    pvUid: recordTaskKey(entry),
    storageClassName: entry.storageClass,
    volumeMode: entry.volumeMode,
    hostPath: entry.hostPath,
    identity: entry.identity,
  };
  return configured.dialect === 'directory' ? locateDirectoryVolume(ref, configured.storageClassMap) : locateDeviceVolume(ref, configured.spec);
}

type Located = { readonly ok: true; readonly target: CleanTarget } | { readonly ok: false; readonly reason: string };

function locateDirectoryVolume(ref: VolumeRef, storageClassMap: Readonly<Record<string, ClassConfig>>): Located {
  if (!ref.pvUid) return { ok: false, reason: 'it has no UID' };
  const hostPath = ref.hostPath;
  if (!hostPath) return { ok: false, reason: 'it is not a local volume' };
  const className = ref.storageClassName;
  const cls = Object.prototype.hasOwnProperty.call(storageClassMap, className) ? storageClassMap[className] : undefined;
  if (!cls) return { ok: false, reason: `StorageClass "${className}" is not configured on this node` };
  const mapped = containerPathFor(hostPath, cls.hostDir, cls.mountDir, { directChildOnly: true });
  if (!mapped.ok) return { ok: false, reason: mapped.reason };
  return {
    ok: true,
    target: {
      ...ref,
      path: mapped.containerPath,
      classDir: cls.mountDir,
      hostDir: cls.hostDir,
      method: { kind: 'class', className, blockCleanerCommand: cls.blockCleanerCommand },
    },
  };
}

function locateDeviceVolume(ref: VolumeRef, spec: DeviceSpecConfig): Located {
  if (!ref.pvUid) return { ok: false, reason: 'it has no UID' };
  const devicePath = ref.hostPath;
  if (!devicePath) return { ok: false, reason: 'it is not a local volume' };
  // deviceDir is mounted at the same path in the container, and walked recursively.
  const mapped = containerPathFor(devicePath, spec.deviceDir, spec.deviceDir, { directChildOnly: false });
  if (!mapped.ok) return { ok: false, reason: mapped.reason };
  return {
    ok: true,
    target: { ...ref, path: mapped.containerPath, classDir: spec.deviceDir, method: { kind: 'device-wipe', wipe: spec.wipe } },
  };
}

/**
 * The reclaim policy that applies. The PV's own, except for PVs the
 * device-selecting provisioner made before us: it wrote Retain on every PV and
 * wiped them regardless, so its users rely on a wipe; for those the node's spec
 * (`reclaimPolicy`, default Delete) decides. An explicit Retain there is respected.
 */
export function effectiveReclaimPolicy(pv: V1PersistentVolume, configured: ConfiguredVolumes): string | undefined {
  const own = pv.spec?.persistentVolumeReclaimPolicy;
  if (configured.dialect !== 'device') return own;
  const madeByUpstream = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] === undefined;
  if (madeByUpstream && own === 'Retain') return configured.spec.reclaimPolicy;
  return own;
}
