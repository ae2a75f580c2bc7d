import type { V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { isGone, isNotFound } from './errors';
import { KubeLogger, silentLogger } from './logger';
import { NODE_LABEL, PROVISIONED_BY_ANNOTATION, DEVICE_DIALECT_NODE_LABELS } from '../well-known';

/** Which unlabelled PVs are this node's to adopt. */
export interface AdoptionCriterion {
  /** Narrows the server-side list beyond "has no node label of ours", e.g. upstream's device node label. */
  readonly labelSelector?: string;
  /** Decides for each PV the server returned. */
  readonly matches: (pv: V1PersistentVolume) => boolean;
}

/** PVs that the Go static provisioner of this node created: its name in `pv.kubernetes.io/provisioned-by`. */
export function provisionedBy(provisionerName: string): AdoptionCriterion {
  return { matches: (pv) => pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] === provisionerName };
}

/**
 * PVs that the device-selecting provisioner created on this node, by one of its node
 * labels (`local-pv-provisioner.cybozu.io/node`, or the older `.com` spelling).
 */
export function upstreamDeviceNode(
  nodeName: string,
  label: (typeof DEVICE_DIALECT_NODE_LABELS)[number] = DEVICE_DIALECT_NODE_LABELS[0],
): AdoptionCriterion {
  return { labelSelector: `${label}=${nodeName}`, matches: (pv) => pv.metadata?.labels?.[label] === nodeName };
}

export interface AdoptionOptions {
  readonly nodeName: string;
  readonly criterion: AdoptionCriterion;
  /** PVs per list page; only one page is held at a time. @default 500 */
  readonly pageSize?: number;
  readonly logger?: KubeLogger;
}

export interface AdoptionResult {
  /** PVs the server returned without our node label. */
  readonly examined: number;
  /** Names of the PVs that now carry our node label. */
  readonly adopted: string[];
}

/**
 * The one-time pass at start that puts our node label on PVs created before it existed
 * (by the Go provisioner, or by an older release), so the node-scoped cache sees them
 * and nothing is created twice. Pages through the PVs without the label and keeps none
 * of them: memory does not grow with the other nodes' PVs.
 */
export async function adoptUnlabelledPersistentVolumes(api: KubeApi, options: AdoptionOptions): Promise<AdoptionResult> {
  const logger = options.logger ?? silentLogger;
  const labelSelector = [`!${NODE_LABEL}`, options.criterion.labelSelector].filter(Boolean).join(',');
  const adopted: string[] = [];
  let examined = 0;
  let continueToken: string | undefined;
  let restarts = 0;
  for (;;) {
    let page;
    try {
      page = await api.listPersistentVolumes({ labelSelector, limit: options.pageSize ?? 500, continueToken });
    } catch (err) {
      // The continue token expired while we were patching: start over; adopted PVs no longer match.
      if (!continueToken || !isGone(err) || ++restarts > 3) throw err;
      continueToken = undefined;
      continue;
    }
    examined += page.items.length;
    continueToken = page.metadata?._continue || undefined;
    for (const pv of page.items) {
      if (!options.criterion.matches(pv)) continue;
      const name = pv.metadata!.name!;
      try {
        await api.patchPersistentVolumeLabels(name, { [NODE_LABEL]: options.nodeName });
        adopted.push(name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    if (!continueToken) break;
  }
  if (adopted.length > 0) logger.info({ count: adopted.length, node: options.nodeName }, 'adopted existing PersistentVolumes of this node');
  return { examined, adopted };
}
