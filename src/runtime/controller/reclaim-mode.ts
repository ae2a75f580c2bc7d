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

/** The RBAC rule the finalizer protocol needs, as a user adds it to the agent's ClusterRole. */
export const FINALIZER_RULE = '{apiGroups: [""], resources: ["persistentvolumes"], verbs: ["patch"]}';

export async function reclaimModeOf(api: KubeApi, logger: Logger): Promise<{ mode: ReclaimMode; warning?: string }> {
  let allowed: boolean;
  try {
    allowed = await api.canI('patch', 'persistentvolumes');
  } catch (err) {
    const warning = `cannot tell whether this agent may patch PersistentVolumes (${(err as Error).message}); `
      + `Released volumes are cleaned as the Go provisioner cleans them, without a finalizer to hold their PVs. Grant ${FINALIZER_RULE} and restart`;
    logger.warn(warning);
    return { mode: 'legacy', warning };
  }
  if (allowed) return { mode: 'finalizer' };
  const warning = 'this agent may not patch PersistentVolumes (the Go provisioner\'s RBAC): Released volumes are cleaned as it cleans them, '
    + 'and a PV deleted while the agent is down, or rebound while its volume is cleaned, is not protected. '
    + `Add ${FINALIZER_RULE} to the agent's ClusterRole and restart it for the cleanup finalizer`;
  logger.warn(warning);
  return { mode: 'legacy', warning };
}
