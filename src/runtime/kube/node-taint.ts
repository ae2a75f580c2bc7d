import { KubeApi } from './api-client';
import { isConflict } from './errors';

export type TaintRemoval =
  /** The taint was on the Node and is gone now. */
  | 'removed'
  /** The Node has no taint with that key. */
  | 'absent'
  | 'node-not-found';

/**
 * Removes every taint with `key` from the Node (upstream's removeNodeNotReadyTaint, with
 * the condition the right way round). A concurrent change to the Node (409 on a stale
 * resourceVersion) is met by reading it again and retrying.
 */
export async function removeNodeTaint(api: KubeApi, nodeName: string, key: string, maxConflicts = 5): Promise<TaintRemoval> {
  for (let conflicts = 0; ; conflicts++) {
    const node = await api.getNode(nodeName);
    if (!node) return 'node-not-found';
    const taints = node.spec?.taints ?? [];
    const kept = taints.filter((t) => t.key !== key);
    if (kept.length === taints.length) return 'absent';
    try {
      await api.replaceNode({ ...node, spec: { ...node.spec, taints: kept } });
      return 'removed';
    } catch (err) {
      if (!isConflict(err) || conflicts >= maxConflicts) throw err;
    }
  }
}
