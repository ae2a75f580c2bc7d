/**
 * What to do with a PV when it may have been released: the deleter's decision,
 * as a pure function of the PV, who we are and what is configured.
 *
 * A volume is wiped only when it is provably ours, Released, not being deleted,
 * its reclaim policy says Delete, and its path lies under a configured directory.
 * Everything else is kept, with a reason.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { containerPathFor } from './path-safety';
import type { ClassConfig, DeviceSpecConfig, VolumeMode } from '../../config';
import { DEVICE_DIALECT_NODE_LABELS, NODE_LABEL, PROVISIONED_BY_ANNOTATION } from '../well-known';


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

/** How a volume is to be cleaned. */
export type CleanMethod =
  /** Directory dialect: a directory is emptied, a block device gets the class's command. */
  | { readonly kind: 'class'; readonly className: string; readonly blockCleanerCommand: readonly string[] }
  /** Device dialect: the wipe ranges are zeroed. */
  | { readonly kind: 'device-wipe' };

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
}

export type ReleaseDecision =
  | { readonly action: 'clean'; readonly reason: string; readonly target: CleanTarget }
  /** Reclaim policy Retain: nothing to do. */
  | { readonly action: 'retain'; readonly reason: string }
  /** Recycle or an unknown policy: record a Warning Event, touch nothing. */
  | { readonly action: 'warn'; readonly reason: string }
  /** Not provably ours: never touched, no Event. */
  | { readonly action: 'not-ours'; readonly reason: string }
  /** Not Released, or already being deleted. */
  | { readonly action: 'skip'; readonly reason: string };

/** Decides what to do with a PV that may have been released. */
export function decideRelease(pv: V1PersistentVolume, me: NodeIdentity, configured: ConfiguredVolumes): ReleaseDecision {
  const name = pv.metadata?.name ?? '<unnamed>';
  const phase = pv.status?.phase;
  if (phase !== 'Released') return { action: 'skip', reason: `PV "${name}" is ${phase ?? 'without a phase'}, not Released` };
  if (pv.metadata?.deletionTimestamp) return { action: 'skip', reason: `PV "${name}" is already being deleted` };

  const located = configured.dialect === 'directory'
    ? locateDirectoryVolume(pv, me, configured.storageClassMap)
    : locateDeviceVolume(pv, me, configured.spec);
  if (!located.ok) return { action: 'not-ours', reason: `PV "${name}": ${located.reason}` };

  const policy = effectiveReclaimPolicy(pv, configured);
  switch (policy) {
    case 'Delete':
      return { action: 'clean', reason: `PV "${name}" is Released with reclaim policy Delete`, target: located.target };
    case 'Retain':
      return { action: 'retain', reason: `PV "${name}" has reclaim policy Retain; its data is kept` };
    case 'Recycle':
      return { action: 'warn', reason: `PV "${name}" has reclaim policy Recycle, which local volumes do not support; its data is kept` };
    default:
      return { action: 'warn', reason: `PV "${name}" has unknown reclaim policy "${policy ?? ''}"; its data is kept` };
  }
}

export type Recheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/**
 * The check right before cleaning: the PV re-read from the API server (undefined
 * when it is gone) must still be the same object (UID), Released, ours, and at
 * the same path. Anything else stops the cleanup.
 */
export function recheckBeforeCleaning(
  fresh: V1PersistentVolume | undefined,
  target: CleanTarget,
  me: NodeIdentity,
  configured: ConfiguredVolumes,
): Recheck {
  if (!fresh) return { ok: false, reason: `PV "${target.pvName}" no longer exists` };
  if (fresh.metadata?.uid !== target.pvUid) {
    return { ok: false, reason: `PV "${target.pvName}" was replaced (UID ${fresh.metadata?.uid ?? 'none'}, expected ${target.pvUid})` };
  }
  const decision = decideRelease(fresh, me, configured);
  if (decision.action !== 'clean') return { ok: false, reason: decision.reason };
  if (decision.target.path !== target.path || decision.target.hostPath !== target.hostPath) {
    return { ok: false, reason: `PV "${target.pvName}" now points at "${decision.target.hostPath}", not "${target.hostPath}"` };
  }
  return { ok: true };
}

type Located = { readonly ok: true; readonly target: CleanTarget } | { readonly ok: false; readonly reason: string };

/** A node label naming another node disproves ownership whatever else the PV says. */
function otherNodeLabel(pv: V1PersistentVolume, nodeName: string): string | undefined {
  const labels = pv.metadata?.labels ?? {};
  for (const key of [NODE_LABEL, ...DEVICE_DIALECT_NODE_LABELS]) {
    const value = labels[key];
    if (value !== undefined && value !== nodeName) return `label ${key}=${value} names another node`;
  }
  return undefined;
}

function baseTarget(pv: V1PersistentVolume): Omit<CleanTarget, 'path' | 'classDir' | 'method' | 'hostDir'> {
  return {
    pvName: pv.metadata?.name ?? '',
    pvUid: pv.metadata?.uid ?? '',
    storageClassName: pv.spec?.storageClassName ?? '',
    volumeMode: pv.spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem',
    hostPath: pv.spec?.local?.path ?? '',
  };
}

function locateDirectoryVolume(
  pv: V1PersistentVolume,
  me: NodeIdentity,
  storageClassMap: Readonly<Record<string, ClassConfig>>,
): Located {
  const by = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION];
  if (by !== me.provisionerName) return { ok: false, reason: `provisioned by "${by ?? 'nobody'}", not "${me.provisionerName}"` };
  const conflict = otherNodeLabel(pv, me.nodeName);
  if (conflict) return { ok: false, reason: conflict };
  if (!pv.metadata?.uid) return { ok: false, reason: 'it has no UID' };
  const hostPath = pv.spec?.local?.path;
  if (!hostPath) return { ok: false, reason: 'it is not a local volume' };
  const className = pv.spec?.storageClassName ?? '';
  const cls = Object.prototype.hasOwnProperty.call(storageClassMap, className) ? storageClassMap[className] : undefined;
  if (!cls) return { ok: false, reason: `StorageClass "${className}" is not configured on this node` };
  const mapped = containerPathFor(hostPath, cls.hostDir, cls.mountDir, { directChildOnly: true });
  if (!mapped.ok) return { ok: false, reason: mapped.reason };
  return {
    ok: true,
    target: {
      ...baseTarget(pv),
      path: mapped.containerPath,
      classDir: cls.mountDir,
      hostDir: cls.hostDir,
      method: { kind: 'class', className, blockCleanerCommand: cls.blockCleanerCommand },
    },
  };
}

function locateDeviceVolume(pv: V1PersistentVolume, me: NodeIdentity, spec: DeviceSpecConfig): Located {
  const by = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION];
  const conflict = otherNodeLabel(pv, me.nodeName);
  if (conflict) return { ok: false, reason: conflict };
  if (by !== undefined && by !== me.provisionerName) {
    return { ok: false, reason: `provisioned by "${by}", not "${me.provisionerName}"` };
  }
  if (by === undefined) {
    // The device-selecting provisioner writes no provisioned-by; its PVs are known by its node label.
    const labels = pv.metadata?.labels ?? {};
    const labelled = [NODE_LABEL, ...DEVICE_DIALECT_NODE_LABELS].some((k) => labels[k] === me.nodeName);
    if (!labelled) return { ok: false, reason: `neither provisioned by "${me.provisionerName}" nor labelled for node "${me.nodeName}"` };
  }
  if (!pv.metadata?.uid) return { ok: false, reason: 'it has no UID' };
  const devicePath = pv.spec?.local?.path;
  if (!devicePath) return { ok: false, reason: 'it is not a local volume' };
  // deviceDir is mounted at the same path in the container, and walked recursively.
  const mapped = containerPathFor(devicePath, spec.deviceDir, spec.deviceDir, { directChildOnly: false });
  if (!mapped.ok) return { ok: false, reason: mapped.reason };
  return {
    ok: true,
    target: { ...baseTarget(pv), path: mapped.containerPath, classDir: spec.deviceDir, method: { kind: 'device-wipe' } },
  };
}

/**
 * The reclaim policy that applies. The PV's own, except for PVs the
 * device-selecting provisioner made before us: it wrote Retain on every PV and
 * wiped them regardless, so its users rely on a wipe; for those the node's spec
 * (`reclaimPolicy`, default Delete) decides. An explicit Retain there is respected.
 */
function effectiveReclaimPolicy(pv: V1PersistentVolume, configured: ConfiguredVolumes): string | undefined {
  const own = pv.spec?.persistentVolumeReclaimPolicy;
  if (configured.dialect !== 'device') return own;
  const madeByUpstream = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] === undefined;
  if (madeByUpstream && own === 'Retain') return configured.spec.reclaimPolicy;
  return own;
}
