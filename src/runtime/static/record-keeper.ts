/**
 * The controllers' side of the node's volume record (record/): each pass it
 * records what this node's PVs show (a tenant seen, a PV gone unseen), says loudly
 * when the record cannot be used, and lets discovery offer only volumes the record
 * calls clean, claiming each before its PV is made, so that no piece of storage is
 * offered twice, by either dialect, or while a tenant's data may be on it.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { ConcurrencyLimiter } from '../cleanup';
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import { EventReasons, Logger, ProvisionerMetrics } from '../observability';
import {
  changesFromPvs, offerVerdict, PvWithIdentity, reboundVolumes, recordedLines, RecordContext, RecordHealth, VolumeRecord, VolumeRecordEntry,
} from '../record';
import type { RootMetadata } from '../volume';
import type { ReboundReporter } from './rebound-reporter';

/** A volume discovery would offer, as the record needs to know it. */
export interface OfferCandidate {
  readonly identity: string;
  readonly hostPath: string;
  readonly storageClass: string;
  readonly volumeMode: 'Filesystem' | 'Block';
  readonly pvName: string;
  /** The reclaim policy its PV gets: what becomes of the volume if the PV goes unseen. */
  readonly reclaimPolicy: string;
}

/** A volume claimed to be offered: to any claim of its class, or (an administrator's word) to one claim only. */
export interface Claimed {
  /** `namespace/name` of the one claim its PV is made bound to. */
  readonly handTo?: string;
}

/**
 * What a volume the record has never seen holds: nothing (it may be offered, with the
 * root metadata to restore after each clean), or data of unknown origin.
 */
export type FirstSight =
  | { readonly holdsNothing: true; readonly rootMetadata?: RootMetadata }
  | { readonly holdsNothing: false; readonly what: string };

/** First sights looked at side by side (each reads a directory and runs getfattr). */
const FIRST_SIGHTS_AT_ONCE = 8;

export interface RecordKeeperDeps {
  readonly record: VolumeRecord;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly nodeName: string;
  readonly rebound: ReboundReporter;
  readonly now?: () => Date;
}

export class RecordKeeper {
  private lastProblem?: string;

  constructor(private readonly deps: RecordKeeperDeps) {}

  get record(): VolumeRecord {
    return this.deps.record;
  }

  /**
   * Each PV's volume's identity as recorded: on the PV, else the record's line of the PV's UID
   * (the PVs of the provisioners we replace carry none; adoption recorded what was at their path).
   */
  identities(): (pv: V1PersistentVolume) => string | undefined {
    const lineOf = recordedLines(this.deps.record.entries(), (i) => this.deps.record.get(i));
    return (pv) => lineOf(pv)?.identity;
  }

  /** Reads what changed in the record; when it cannot be used, says so (Event, metric, log) and returns why. */
  check(): RecordHealth {
    const health = this.deps.record.refresh();
    this.deps.metrics.setVolumeRecordUsable(health.ok);
    if (!health.ok) {
      const message = `${health.problem}; nothing is offered or cleaned on this node until it is repaired (operations.md: "The volume record")`;
      this.deps.events.warning(nodeReference(this.deps.nodeName), EventReasons.VolumeRecordUnusable.reason, message);
      if (message !== this.lastProblem) this.deps.logger.error(message);
      this.lastProblem = message;
    } else if (this.lastProblem !== undefined) {
      this.deps.logger.info('the volume record can be used again');
      this.lastProblem = undefined;
    }
    return health;
  }

  /** Records what this node's PVs of the dialect show; durable before the pass acts on any of them. */
  async observe(pvs: readonly PvWithIdentity[], allPvs: readonly V1PersistentVolume[], context: Omit<RecordContext, 'now'>): Promise<void> {
    const known = { uids: new Set(allPvs.map((pv) => pv.metadata?.uid ?? '')), names: new Set(allPvs.map((pv) => pv.metadata?.name ?? '')) };
    const now = (this.deps.now ?? (() => new Date()))();
    const record = this.deps.record;
    // Decided once outside the lock (a pass with nothing new takes no lock), again under it.
    if (changesFromPvs(record.entries(), (i) => record.get(i), pvs, known, { ...context, now }).length === 0) return;
    await record.update((r) => {
      const writes = changesFromPvs(r.entries(), (i) => r.get(i), pvs, known, { ...context, now });
      for (const w of writes) this.deps.logger.info({ path: w.hostPath, identity: w.identity, state: w.state }, `volume record: ${w.reason}`);
      return { writes, result: undefined };
    });
  }

  /** Says which of this node's PVs (all of the dialect's, once per pass) are bound to another tenant than the one that used their volume. */
  reportRebound(pvs: readonly PvWithIdentity[]): void {
    this.deps.rebound.report('record', reboundVolumes(pvs, (i) => this.deps.record.get(i)));
  }

  /**
   * Of `candidates` (discovery's plan), those that may be offered now, each recorded as
   * offered under the record's lock before this returns: clean in the record, or never
   * seen and holding nothing (`firstSight`), and sharing no storage with another volume
   * that is offered or used. The others are reported and not offered.
   */
  async claim<C extends OfferCandidate>(candidates: readonly C[], dialect: VolumeRecordEntry['dialect'],
    firstSight: (candidate: C) => Promise<FirstSight>): Promise<Array<C & Claimed>> {
    if (candidates.length === 0) return [];
    const record = this.deps.record;
    // What a never-seen volume holds is looked at before the lock (I/O, a few side by side); the claim is decided under it.
    const sights = new Map<C, FirstSight>();
    const looking = new ConcurrencyLimiter(FIRST_SIGHTS_AT_ONCE);
    await Promise.all(candidates
      .filter((c) => offerVerdict(c.identity, c.hostPath, record.entries(), (i) => record.get(i)).kind === 'first-sight')
      .map((c) => looking.run(async () => sights.set(c, await firstSight(c)))));
    const since = (this.deps.now ?? (() => new Date()))().toISOString();
    return record.update((r) => {
      const writes: VolumeRecordEntry[] = [];
      const claimed: Array<C & Claimed> = [];
      const lines = new Map<string, VolumeRecordEntry>();
      const get = (i: string) => lines.get(i) ?? r.get(i);
      for (const c of candidates) {
        const verdict = offerVerdict(c.identity, c.hostPath, [...r.entries().filter((e) => !lines.has(e.identity)), ...lines.values()], get);
        const entry = get(c.identity);
        let rootMetadata = entry?.rootMetadata;
        // Given as it is to one claim (`volumes accept --for`): its PV is made bound to that claim.
        const handTo = verdict.kind === 'offer' && entry?.state === 'dirty' ? entry.handTo : undefined;
        if (verdict.kind === 'overlaps') {
          this.reportOverlap(c, verdict.other);
          continue;
        }
        if (verdict.kind === 'not-clean') continue; // the deleter cleans it, or reports it held
        if (verdict.kind === 'first-sight') {
          const sight = sights.get(c);
          if (!sight) continue; // appeared in the record meanwhile (another agent): decided again next pass
          if (!sight.holdsNothing) {
            this.refuse(EventReasons.VolumeHoldsUnknownData.reason,
              `${c.hostPath} holds data the volume record knows nothing of (${sight.what}); it is not offered until it holds nothing `
              + '(empty it, or make a new filesystem on it)');
            continue;
          }
          rootMetadata = sight.rootMetadata;
        }
        const line: VolumeRecordEntry = {
          identity: c.identity,
          state: 'offered',
          dialect,
          storageClass: c.storageClass,
          hostPath: c.hostPath,
          volumeMode: c.volumeMode,
          pvName: c.pvName,
          reclaimPolicy: c.reclaimPolicy,
          reason: handTo ? `offered as PV ${c.pvName} to claim ${handTo} only` : `offered as PV ${c.pvName}`,
          since,
          ...(rootMetadata !== undefined ? { rootMetadata } : {}),
          ...(handTo ? { handTo } : {}),
        };
        lines.set(c.identity, line);
        writes.push(line);
        claimed.push({ ...c, ...(handTo ? { handTo } : {}) });
      }
      return { writes, result: claimed };
    });
  }

  /**
   * Records the UIDs of PVs just made for claimed volumes, durably, so that a PV made anew
   * from a copy of one while no agent runs (same name, another UID) is never taken for the
   * agent's own (record-rules.ts). Until this is written (a crash right after a create), the
   * first PV of the name seen is taken for the one made.
   */
  async made(pvs: ReadonlyArray<{ readonly identity: string; readonly pv: V1PersistentVolume }>): Promise<void> {
    if (pvs.length === 0) return;
    await this.deps.record.update((r) => ({
      writes: pvs.flatMap(({ identity, pv }) => {
        const entry = r.get(identity);
        const uid = pv.metadata?.uid;
        return entry?.state === 'offered' && entry.pvName === pv.metadata?.name && entry.pvUid === undefined && uid ? [{ ...entry, pvUid: uid }] : [];
      }),
      result: undefined,
    }));
  }

  /**
   * Gives back the claim of a volume whose PV could not be made. No PV of it ever existed:
   * `clean` when it is as clean as when it was claimed (the create failed); `unknown` when
   * it may not be (its wipe failed part way), so its line goes and the volume is a volume
   * never seen again: probed, and wiped, before it is ever offered.
   */
  async release(identity: string, pvName: string, now: 'clean' | 'unknown'): Promise<void> {
    await this.deps.record.update((r) => {
      const entry = r.get(identity);
      if (!entry || entry.state !== 'offered' || entry.pvName !== pvName || entry.pvUid !== undefined) return { writes: [], result: undefined };
      if (now === 'unknown') return { writes: [{ remove: identity }], result: undefined };
      const { pvName: _name, ...rest } = entry;
      return { writes: [{ ...rest, state: 'clean' as const, reason: `PV ${pvName} could not be made`, since: new Date().toISOString() }], result: undefined };
    });
  }

  /** A volume not offered because it shares storage with another one that is offered or used. */
  reportOverlap(candidate: OfferCandidate, other: VolumeRecordEntry): void {
    this.refuse(EventReasons.VolumeOverlaps.reason,
      `${candidate.hostPath} (${candidate.identity}) shares storage with ${other.hostPath} (${other.identity}, ${other.state}); it is not offered`);
  }

  private refuse(reason: string, message: string): void {
    this.deps.events.warning(nodeReference(this.deps.nodeName), reason, message);
    this.deps.logger.warn(message);
  }
}
