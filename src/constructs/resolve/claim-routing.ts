/** The claim routing (claim-routing.ts): on unless `claimRouting: false`, where a pool class is configured, named after the instance. */
import { LocalVolumeProvisionerProps } from '../props';

export interface ResolvedClaimRouting {
  /** Name of the MutatingAdmissionPolicy and of its binding (the agents' `--claim-routing`). */
  readonly name: string;
  /** The pool classes whose claims it labels. */
  readonly poolClasses: string[];
}

export function resolveClaimRouting(
  props: LocalVolumeProvisionerProps, name: string, poolClasses: readonly string[],
): ResolvedClaimRouting | undefined {
  if (props.claimRouting === false || poolClasses.length === 0) return undefined;
  return { name: `${name}-claim-routing`, poolClasses: [...new Set(poolClasses)].sort() };
}
