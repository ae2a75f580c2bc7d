/**
 * Tells users which existing PVs this agent took over at start (a Normal
 * VolumeAdopted Event on each), so a migration from the replaced provisioners
 * is visible in `kubectl describe pv`.
 */
import { EventRecorder, persistentVolumeReference } from '../kube/event-recorder';
import { NodePvCache } from '../kube/pv-cache';
import { EventReasons } from '../observability';
import { NODE_LABEL } from '../well-known';

export function reportAdoptedVolumes(events: EventRecorder, cache: NodePvCache, adopted: readonly string[], nodeName: string): void {
  for (const name of adopted) {
    const pv = cache.get(name);
    if (!pv) continue;
    events.normal(persistentVolumeReference(pv), EventReasons.VolumeAdopted.reason,
      `adopted PV for "${pv.spec?.local?.path ?? ''}": added label ${NODE_LABEL}=${nodeName}`);
  }
}
