/**
 * How this agent may hold the PVs it manages (cleanup/release-decision.ts):
 * with our cleanup finalizer when it may patch PVs, else as the Go provisioner
 * does. Asked once at start with a SelfSubjectAccessReview, which every
 * authenticated user may send; when the answer cannot be had, the agent takes
 * the mode that never leaves a PV it cannot let go.
 */
import { ReclaimMode } from '../cleanup';
import { KubeApi } from '../kube/api-client';
import { Logger } from '../observability';

/** The RBAC rule the finalizer protocol (and PV adoption) needs, as a user adds it to the agent's ClusterRole. */
export const PATCH_PV_RULE = '{apiGroups: [""], resources: ["persistentvolumes"], verbs: ["patch"]}';

/** What every dialect does without patch on PVs. */
const LEGACY_CLEANUP = 'Released volumes are cleaned as the Go provisioner cleans them, then deleted with preconditions, '
  + 'and a PV deleted while the agent is down, or rebound while its volume is cleaned, is not protected by a finalizer';

/** What a dialect loses beyond the finalizer without patch on PVs, and what the rule would give it. */
export interface WithoutPatch {
  /** What it does instead. */
  readonly instead: string;
  /** What adding the rule brings, after "the cleanup finalizer". */
  readonly gains: string;
}

/**
 * The one warning (a PermissionMissing Event and a log line) of an agent that may not
 * patch PVs: why, what it does instead, and the rule to add.
 */
export function withoutPatchWarning(why: string, also?: WithoutPatch): string {
  return `${why}: ${LEGACY_CLEANUP}${also ? `; ${also.instead}` : ''}. `
    + `Add ${PATCH_PV_RULE} to the agent's ClusterRole and restart it for the cleanup finalizer${also ? ` and ${also.gains}` : ''}`;
}

/**
 * Asks whether this agent may patch PVs; `legacy` (with the warning, logged here)
 * when it may not or when that cannot be told.
 */
export async function reclaimModeOf(api: KubeApi, logger: Logger, also?: WithoutPatch): Promise<{ mode: ReclaimMode; warning?: string }> {
  let allowed: boolean;
  try {
    allowed = await api.canI('patch', 'persistentvolumes');
  } catch (err) {
    const warning = withoutPatchWarning(`cannot tell whether this agent may patch PersistentVolumes (${(err as Error).message})`, also);
    logger.warn(warning);
    return { mode: 'legacy', warning };
  }
  if (allowed) return { mode: 'finalizer' };
  const warning = withoutPatchWarning('this agent may not patch PersistentVolumes (the Go provisioner\'s RBAC)', also);
  logger.warn(warning);
  return { mode: 'legacy', warning };
}
