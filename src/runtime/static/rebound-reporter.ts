/**
 * Says loudly that a PV of this node is bound to a claim other than the one whose
 * tenant used its volume, with no clean in between: the new tenant can read the last
 * one's data. That happens only while no agent runs: an administrator cleared the
 * claimRef of a Released PV without the claim guard in force, or made a PV anew from a
 * copy of one; the agent cannot undo it, and never cleans under the new tenant. A Warning on the PV and on the claim, once
 * while it lasts, an error log line, and `volume_rebound 1` for as long as it lasts.
 * The record finds them among the static volumes, the pools by the claim UID in a
 * volume's name.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { EventRecorder, persistentVolumeClaimReference, persistentVolumeReference } from '../kube/event-recorder';
import { EventReasons, Logger, ProvisionerMetrics, ReboundSource } from '../observability';
import type { ReboundVolume } from '../record';

export interface ReboundReporterDeps {
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
}

const claimNow = (pv: V1PersistentVolume) => `${pv.spec?.claimRef?.namespace ?? ''}/${pv.spec?.claimRef?.name ?? ''}`;

export class ReboundReporter {
  /** What each source last reported, by PV UID and the UID of the claim bound now: each is said once while it lasts. */
  private readonly said = new Map<ReboundSource, ReadonlySet<string>>();

  constructor(private readonly deps: ReboundReporterDeps) {}

  /** The rebound volumes `source` finds now (all of them: those it does not give again are over). */
  report(source: ReboundSource, found: readonly ReboundVolume[]): void {
    this.deps.metrics.setReboundVolumes(source, found.map(({ pv }) => ({
      persistentVolume: pv.metadata?.name ?? '',
      storageClass: pv.spec?.storageClassName ?? '',
      claim: claimNow(pv),
    })));
    const before = this.said.get(source) ?? new Set<string>();
    const now = new Set<string>();
    for (const { pv, usedBy } of found) {
      const key = `${pv.metadata?.uid ?? ''}/${pv.spec?.claimRef?.uid ?? ''}`;
      now.add(key);
      if (before.has(key)) continue;
      const name = pv.metadata?.name ?? '';
      const whose = 'earlierPv' in usedBy
        ? `whatever the tenants of its earlier PV ${usedBy.earlierPv} wrote (that PV went while no agent ran, and this one was not made by the agent)`
        : usedBy.uid === ''
          ? 'the data of a tenant whose claim its PV no longer named when the agent saw it used (its claimRef was cleared)'
          : `the data of ${usedBy.claim ? `claim ${usedBy.claim}` : 'the claim'} (uid ${usedBy.uid}), which used it and was never cleaned away`;
      const message = `PV "${name}" (${pv.spec?.local?.path ?? ''}) is bound to claim ${claimNow(pv)} (uid ${pv.spec?.claimRef?.uid ?? ''}) but its volume `
        + `still holds ${whose}: it was bound while no agent ran; the volume is cleaned (or kept, Retain) only once this claim releases it`;
      this.deps.logger.error({ pv: name, claim: claimNow(pv) }, message);
      this.deps.events.warning(persistentVolumeReference(pv), EventReasons.VolumeRebound.reason, message);
      const { namespace, name: claimName, uid } = pv.spec!.claimRef!;
      const claimRef = persistentVolumeClaimReference({ metadata: { namespace, name: claimName, uid } });
      this.deps.events.warning(claimRef, EventReasons.VolumeRebound.reason, message);
    }
    this.said.set(source, now);
  }
}
