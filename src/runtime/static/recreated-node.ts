/**
 * A Node deleted and registered again under the same name gets a new UID, and with
 * it (unless useNodeNameOnly) a new provisioner name. The PVs made for the earlier
 * Node still describe this host's volumes: left with the old name in
 * `pv.kubernetes.io/provisioned-by` they would never be recycled (not provably ours),
 * while discovery, seeing their paths taken, would never replace them. So at start
 * the agent writes its current name on them: no PV orphaned, none duplicated.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from '../kube/api-client';
import { isNotFound } from '../kube/errors';
import { KubeLogger } from '../kube/logger';
import { nodeNamesOfPV } from '../node-cleanup/decisions';
import { nodeHostname, NodeInfo } from '../pv';
import { NODE_LABEL, PROVISIONED_BY_ANNOTATION } from '../well-known';

const UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True when `pv` is a local volume of this host provisioned for an earlier Node of
 * the same name: its provisioned-by is `local-volume-provisioner-<node>-<other UID>`,
 * its hostname affinity names this node's hostname, and it carries no other node's label.
 * The UID shape keeps `worker-1`'s PVs from looking like `worker`'s.
 */
export function isOfEarlierNodeIncarnation(pv: V1PersistentVolume, node: NodeInfo, currentProvisionerName: string): boolean {
  const by = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION];
  const prefix = `local-volume-provisioner-${node.name}-`;
  if (!pv.spec?.local || by === undefined || by === currentProvisionerName) return false;
  if (!by.startsWith(prefix) || !UID.test(by.slice(prefix.length))) return false;
  const label = pv.metadata?.labels?.[NODE_LABEL];
  if (label !== undefined && label !== node.name) return false;
  return nodeNamesOfPV(pv)?.includes(nodeHostname(node)) ?? false;
}

/** Writes the current provisioner name on this node's PVs of an earlier Node incarnation; returns their names. */
export async function claimVolumesOfEarlierNode(
  api: KubeApi,
  pvs: readonly V1PersistentVolume[],
  node: NodeInfo,
  currentProvisionerName: string,
  logger: KubeLogger,
): Promise<string[]> {
  const claimed: string[] = [];
  for (const pv of pvs) {
    if (!isOfEarlierNodeIncarnation(pv, node, currentProvisionerName)) continue;
    const name = pv.metadata!.name!;
    try {
      await api.patchPersistentVolumeAnnotations(name, { [PROVISIONED_BY_ANNOTATION]: currentProvisionerName });
      claimed.push(name);
      logger.info({ pv: name, from: pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION], to: currentProvisionerName },
        'PV of an earlier Node with this name is now provisioned by this agent');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return claimed;
}
