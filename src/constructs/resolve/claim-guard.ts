/** The claim guard (claim-guard.ts): on unless `claimGuard: false`, named after the instance, over its classes. */
import { LocalVolumeProvisionerProps } from '../props';
import { ResolvedStorageClass } from './storage-class';

export interface ResolvedClaimGuard {
  /** Name of the ValidatingAdmissionPolicy and of its binding (the agents' `--claim-guard`). */
  readonly name: string;
  /** The classes whose PVs it guards before an agent has labelled them (PVs of a replaced provisioner). */
  readonly storageClassNames: string[];
}

export function resolveClaimGuard(
  props: LocalVolumeProvisionerProps, name: string, classes: readonly ResolvedStorageClass[],
): ResolvedClaimGuard | undefined {
  if (props.claimGuard === false) return undefined;
  return { name: `${name}-claim-guard`, storageClassNames: [...new Set(classes.map((c) => c.name))].sort() };
}
