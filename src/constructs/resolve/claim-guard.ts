/** The claim guard (claim-guard.ts): on unless `claimGuard: false`, named after the instance, over its classes. */
import { LocalVolumeProvisionerProps } from '../props';
import { ResolvedStorageClass } from './storage-class';

export interface ResolvedClaimGuard {
  /** Name of the ValidatingAdmissionPolicy and of its binding (the agents' `--claim-guard`). */
  readonly name: string;
  /** The classes whose PVs it guards before an agent has labelled them (PVs of a replaced provisioner). */
  readonly storageClassNames: string[];
  /**
   * The host directories every PV of ours has its `spec.local.path` in (class directories,
   * pools, device directories), normalized (the props are refused otherwise): a PV's volume
   * source cannot be changed, so a PV is known as ours by it whatever is done to its labels,
   * finalizers and class.
   */
  readonly volumeDirectories: string[];
  /**
   * The users (`system:serviceaccount:<namespace>:<name>`) the agents of both dialects run as:
   * the only ones who may create a PV on a volume of ours.
   */
  readonly agentUsers: string[];
}

export function resolveClaimGuard(
  props: LocalVolumeProvisionerProps, name: string, classes: readonly ResolvedStorageClass[], volumeDirectories: readonly string[],
  agentUsers: readonly string[],
): ResolvedClaimGuard | undefined {
  if (props.claimGuard === false) return undefined;
  return {
    name: `${name}-claim-guard`,
    storageClassNames: [...new Set(classes.map((c) => c.name))].sort(),
    volumeDirectories: [...new Set(volumeDirectories.map((d) => d.replace(/\/+$/, '')))].sort(),
    agentUsers: [...new Set(agentUsers)].sort(),
  };
}
