/**
 * Which discovered volumes get a new PV this pass, and why the others do not,
 * as a pure function of what was discovered, the PVs this node already has
 * (from the cache) and the cleanups still running. Shared by both dialects.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { VolumeMode } from '../../config';
import { directoryPVName, type NamedDevice } from '../pv';
import type { DiscoveredDevice } from './device-discovery';
import type { DiscoveredVolume } from './directory-discovery';
import { normalisePath } from './mount-table';
import { VOLUME_IDENTITY_ANNOTATION } from '../well-known';

/** A volume that could get a PV. */
export interface PlanCandidate {
  readonly pvName: string;
  /** `spec.local.path` it would get. */
  readonly localPath: string;
  readonly volumeMode: VolumeMode;
  /** What the volume really is (volume/identity.ts). */
  readonly identity: string;
}

export type SkipCode =
  /** Its PV exists: the steady state, nothing to report unless `warning` is set. */
  | 'pv-exists'
  /** Its PV is being cleaned; it is offered again once the cleanup ends. */
  | 'cleanup-running'
  /** Another PV already has this `spec.local.path` (e.g. the class was renamed): offering it again would share one disk. */
  | 'path-in-use'
  /** Another PV, or another candidate of this pass, is already this very disk or filesystem under another path (a second link, a second mount, a moved name). */
  | 'same-volume'
  /** Another candidate of this pass has the same path or name (two classes over one directory). */
  | 'duplicate-in-pass';

export interface PlannedSkip<C extends PlanCandidate> {
  readonly candidate: C;
  readonly code: SkipCode;
  readonly message: string;
  /** Something a user should hear about (a Warning Event), beyond the skip itself. */
  readonly warning?: string;
}

export interface ProvisioningPlan<C extends PlanCandidate> {
  readonly create: readonly C[];
  readonly skip: ReadonlyArray<PlannedSkip<C>>;
}

/** Cleanups in progress, by PV name and by volume path (either may be known). */
export interface RunningCleanups {
  readonly pvNames: ReadonlySet<string>;
  readonly paths: ReadonlySet<string>;
}

export const NO_RUNNING_CLEANUPS: RunningCleanups = { pvNames: new Set(), paths: new Set() };

/**
 * Decides for each candidate, in order: skip if a PV of that name exists, if its
 * cleanup is running, if any PV already has the same path (the duplicate-path
 * guard) or is already the same disk or filesystem (by identity: the PV's recorded
 * one, or `identityOf` for PVs made before identities), or if an earlier candidate
 * of this pass took the path, the name or the disk; else create. One disk never
 * gets two PVs, whatever names, links or classes lead to it.
 */
export function planProvisioning<C extends PlanCandidate>(
  candidates: readonly C[],
  existingPVs: readonly V1PersistentVolume[],
  running: RunningCleanups = NO_RUNNING_CLEANUPS,
  identityOf: (pv: V1PersistentVolume) => string | undefined = recordedIdentity,
): ProvisioningPlan<C> {
  const byName = new Map<string, V1PersistentVolume>();
  const byPath = new Map<string, V1PersistentVolume>();
  const byIdentity = new Map<string, V1PersistentVolume>();
  for (const pv of existingPVs) {
    const name = pv.metadata?.name;
    if (name) byName.set(name, pv);
    const local = pv.spec?.local?.path;
    if (local) byPath.set(normalisePath(local), pv);
    const identity = identityOf(pv);
    if (identity !== undefined) byIdentity.set(identity, pv);
  }
  const runningPaths = new Set([...running.paths].map(normalisePath));
  const takenPaths = new Map<string, string>();
  const takenNames = new Set<string>();
  const takenIdentities = new Map<string, C>();

  const create: C[] = [];
  const skip: Array<PlannedSkip<C>> = [];
  for (const candidate of candidates) {
    const localPath = normalisePath(candidate.localPath);
    const existing = byName.get(candidate.pvName);
    if (existing) {
      const existingPath = existing.spec?.local?.path;
      const moved = existingPath !== undefined && normalisePath(existingPath) !== localPath;
      const warning =
        `PV "${candidate.pvName}" exists with path "${existingPath}", not "${candidate.localPath}"; ` +
        `the volume at "${candidate.localPath}" is not offered while that PV exists`;
      skip.push({ candidate, code: 'pv-exists', message: `PV "${candidate.pvName}" already exists`, ...(moved ? { warning } : {}) });
      continue;
    }
    if (running.pvNames.has(candidate.pvName) || runningPaths.has(localPath)) {
      skip.push({ candidate, code: 'cleanup-running', message: `the cleanup of PV "${candidate.pvName}" at "${candidate.localPath}" is still running` });
      continue;
    }
    const sharing = byPath.get(localPath);
    if (sharing) {
      const message = `path "${candidate.localPath}" is already used by PV "${sharing.metadata?.name}"`;
      skip.push({ candidate, code: 'path-in-use', message, warning: `${message}; not creating PV "${candidate.pvName}" for it` });
      continue;
    }
    const sameVolume = byIdentity.get(candidate.identity);
    if (sameVolume) {
      const message = `"${candidate.localPath}" is the same disk or filesystem (${candidate.identity}) as PV "${sameVolume.metadata?.name}" at "${sameVolume.spec?.local?.path}"`;
      skip.push({ candidate, code: 'same-volume', message, warning: `${message}; it is neither cleaned nor offered again` });
      continue;
    }
    const earlier = takenPaths.get(localPath);
    const twin = takenIdentities.get(candidate.identity);
    if (earlier === undefined && twin) {
      const message = `"${candidate.localPath}" is the same disk or filesystem (${candidate.identity}) as "${twin.localPath}", which is offered instead`;
      skip.push({ candidate, code: 'same-volume', message, warning: message });
      continue;
    }
    if (earlier !== undefined || takenNames.has(candidate.pvName)) {
      const message = earlier !== undefined
        ? `path "${candidate.localPath}" is also found as PV "${earlier}" in this pass`
        : `PV name "${candidate.pvName}" is also given to another volume in this pass`;
      skip.push({ candidate, code: 'duplicate-in-pass', message, warning: message });
      continue;
    }
    takenPaths.set(localPath, candidate.pvName);
    takenNames.add(candidate.pvName);
    takenIdentities.set(candidate.identity, candidate);
    create.push(candidate);
  }
  return { create, skip };
}

/** The identity recorded on a PV when it was made, if any. */
export function recordedIdentity(pv: V1PersistentVolume): string | undefined {
  return pv.metadata?.annotations?.[VOLUME_IDENTITY_ANNOTATION];
}

/** Candidates already made, by volume: the mount-point memo hands out the same volumes pass after pass, so their name is hashed once. */
const directoryCandidatesMade = new WeakMap<DiscoveredVolume, { readonly nodeName: string; readonly candidate: DiscoveredVolume & PlanCandidate }>();

/** Directory-dialect volumes as plan candidates (PV names as the Go provisioner computes them). */
export function directoryCandidates(
  volumes: readonly DiscoveredVolume[],
  nodeName: string,
): Array<DiscoveredVolume & PlanCandidate> {
  return volumes.map((v) => {
    const made = directoryCandidatesMade.get(v);
    if (made?.nodeName === nodeName) return made.candidate;
    const candidate = { ...v, pvName: directoryPVName(v.entryName, nodeName, v.className), localPath: v.hostPath };
    directoryCandidatesMade.set(v, { nodeName, candidate });
    return candidate;
  });
}

/** Named devices as plan candidates; `spec.local.path` is the device path as walked. */
export function deviceCandidates(
  named: ReadonlyArray<NamedDevice<DiscoveredDevice>>,
  volumeMode: VolumeMode,
): Array<NamedDevice<DiscoveredDevice> & PlanCandidate> {
  return named.map((n) => ({ ...n, pvName: n.name, localPath: n.device.path, volumeMode, identity: n.device.identity }));
}
