/**
 * The volume record's rules, as pure functions: how what the agent sees of PVs
 * changes a volume's recorded state, whether a volume may be offered, and what
 * becomes of a dirty volume that has no PV. The record (volume-record.ts) applies
 * what these return; the controllers and the deleter act only on what is recorded.
 *
 * The one-way door: a volume becomes `dirty` the moment any PV of it is seen bound,
 * released or failed, or when its PV goes while the agent could not see whether a
 * tenant used it; only a verified clean (or an administrator's word) makes it `clean`
 * again, and only a `clean` volume is offered.
 */
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { RecordedState, VolumeRecordEntry } from './record-entry';
import { extentsOverlap, storageExtent } from './storage-extent';
import { isWeakIdentity } from '../volume/identity';
import { BOUND_BY_CONTROLLER_ANNOTATION, VOLUME_IDENTITY_ANNOTATION } from '../well-known';

/** What a PV seen now says of its volume: a tenant may have used it, or not yet. */
export function stateSeenOnPv(pv: V1PersistentVolume): 'offered' | 'dirty' {
  const phase = pv.status?.phase;
  const used = phase === 'Bound' || phase === 'Released' || phase === 'Failed'
    || pv.spec?.claimRef?.uid !== undefined
    || pv.metadata?.annotations?.[BOUND_BY_CONTROLLER_ANNOTATION] !== undefined;
  return used ? 'dirty' : 'offered';
}

/**
 * Each PV's line in the record: by the identity written on the PV, else by the PV's UID (the
 * PVs of a provisioner we replace carry no identity; the record knows them from adoption on).
 */
export function recordedLines(entries: readonly VolumeRecordEntry[], get: (identity: string) => VolumeRecordEntry | undefined)
  : (pv: V1PersistentVolume) => VolumeRecordEntry | undefined {
  const byPvUid = new Map(entries.flatMap((e) => (e.pvUid !== undefined ? [[e.pvUid, e] as const] : [])));
  return (pv) => {
    const identity = pv.metadata?.annotations?.[VOLUME_IDENTITY_ANNOTATION];
    return (identity !== undefined ? get(identity) : undefined) ?? byPvUid.get(pv.metadata?.uid ?? '');
  };
}

/** A PV of ours and the identity of its volume (recorded on it, or found at its path this pass). */
export interface PvWithIdentity {
  readonly pv: V1PersistentVolume;
  readonly identity: string;
}

/** The PVs whose identity is known, with it. */
export function withIdentities(pvs: readonly V1PersistentVolume[], identityOf: (pv: V1PersistentVolume) => string | undefined): PvWithIdentity[] {
  return pvs.flatMap((pv) => {
    const identity = identityOf(pv);
    return identity !== undefined ? [{ pv, identity }] : [];
  });
}

/**
 * The tenant of a PV seen used, as a record line keeps it: its claim and that claim's UID;
 * or, for a PV that shows it was used but names no claim UID any more (its claimRef cleared
 * or stripped of its UID), an empty UID: a tenant the record cannot name, so every claim
 * is another one.
 */
function tenantOf(pv: V1PersistentVolume): Pick<VolumeRecordEntry, 'claim' | 'claimUid'> {
  const ref = pv.spec?.claimRef;
  return ref?.uid ? { claim: `${ref.namespace ?? ''}/${ref.name ?? ''}`, claimUid: ref.uid } : { claimUid: '' };
}

export interface RecordContext {
  readonly dialect: VolumeRecordEntry['dialect'];
  /** The reclaim policy that applies to a PV's data (the device dialect overrides upstream's Retain). */
  readonly reclaimPolicyOf: (pv: V1PersistentVolume) => string | undefined;
  readonly now: Date;
}

/**
 * The record lines that change because of this node's PVs of `context.dialect`:
 * a PV seen used makes its volume dirty; a PV seen unused records its volume as
 * offered (first sight: the PVs of a provisioner we replace, or a record made anew);
 * a volume recorded as offered whose PV is gone is dirty, since nothing proves that
 * no tenant wrote to it meanwhile. `allPvs` are the UIDs and names of every PV the
 * agent knows of (its cache is synced).
 */
export function changesFromPvs(
  entries: readonly VolumeRecordEntry[],
  get: (identity: string) => VolumeRecordEntry | undefined,
  pvs: readonly PvWithIdentity[],
  allPvs: { readonly uids: ReadonlySet<string>; readonly names: ReadonlySet<string> },
  context: RecordContext,
): VolumeRecordEntry[] {
  const since = context.now.toISOString();
  const changes = new Map<string, VolumeRecordEntry>();
  for (const { pv, identity } of pvs) {
    const entry = changes.get(identity) ?? get(identity);
    const seen = stateSeenOnPv(pv);
    const uid = pv.metadata?.uid ?? '';
    const name = pv.metadata?.name ?? '';
    const policy = context.reclaimPolicyOf(pv);
    const base = {
      identity,
      dialect: context.dialect,
      storageClass: pv.spec?.storageClassName ?? '',
      hostPath: pv.spec?.local?.path ?? '',
      volumeMode: pv.spec?.volumeMode === 'Block' ? 'Block' as const : 'Filesystem' as const,
      pvName: name,
      ...(uid !== '' ? { pvUid: uid } : {}),
      ...(policy !== undefined ? { reclaimPolicy: policy } : {}),
      ...(entry?.rootMetadata !== undefined ? { rootMetadata: entry.rootMetadata } : {}),
    };
    if (entry?.state === 'dirty') {
      // Still dirty; follow the PV's reclaim policy (an administrator may change it while it is Released). Its tenant is the one
      // seen when it became dirty: a claim bound since is another tenant, never learnt as this one (reboundVolumes).
      if (entry.pvUid === uid && entry.reclaimPolicy !== policy) changes.set(identity, { ...entry, ...base, admin: entry.admin });
      continue;
    }
    if (entry?.state === 'offered' && entry.pvUid !== undefined && uid !== '' && entry.pvUid !== uid) {
      // The PV this agent made went unseen and another, not made by it, has the volume now (recreated by hand from a copy):
      // nothing proves no tenant wrote to it meanwhile, and no claim of that PV is a tenant the record can vouch for.
      changes.set(identity, {
        ...entry,
        state: 'dirty',
        reason: `its PV ${entry.pvName ?? ''} went while the agent could not see whether a tenant used it, and PV ${name}, not made by this agent, has it now`,
        since,
      });
      continue;
    }
    if (seen === 'dirty') {
      const used = tenantOf(pv);
      changes.set(identity, {
        ...base,
        ...used,
        state: 'dirty',
        reason: `PV ${name} was seen ${pv.status?.phase ?? 'bound'} (${used.claim ?? 'a claim'}): a tenant may have written to it`,
        since,
      });
      continue;
    }
    // The PV's UID is recorded once seen: whether it went is then told by UID, not by name.
    if (entry?.state !== 'offered' || entry.pvName !== name || (uid !== '' && entry.pvUid !== uid)) {
      changes.set(identity, { ...base, state: 'offered', reason: entry ? `offered as PV ${name}` : `PV ${name} was found Available and never bound (first sight)`, since });
    }
  }
  const withPv = new Set(pvs.map((p) => p.identity));
  for (const entry of entries) {
    if (entry.dialect !== context.dialect || entry.state !== 'offered' || changes.has(entry.identity) || withPv.has(entry.identity)) continue;
    // Claimed and its PV made, but not yet seen with its UID: gone only when no PV has its name.
    if (entry.pvUid !== undefined ? allPvs.uids.has(entry.pvUid) : allPvs.names.has(entry.pvName ?? '')) continue;
    changes.set(entry.identity, {
      ...entry,
      state: 'dirty',
      reason: `its PV ${entry.pvName ?? ''} went while the agent could not see whether a tenant used it`,
      since,
    });
  }
  return [...changes.values()];
}

/** A PV whose volume holds a tenant's data, bound to another tenant's claim. */
export interface ReboundVolume {
  readonly pv: V1PersistentVolume;
  /**
   * Whose data it holds: the claim whose tenant used the volume (`namespace/name`, when
   * known) and its UID; or, when no tenant was seen, the earlier PV whose tenants may have
   * written to it.
   */
  readonly usedBy: { readonly claim?: string; readonly uid: string } | { readonly earlierPv: string };
}

/**
 * The PVs bound to another tenant's claim than the one whose data is on their volume: a
 * claim other than the one the record saw use the volume (any claim, where the record saw
 * it used and could not name the claim), or any claim of a PV the agent did not make, put in
 * place of one that went unseen (made anew from a copy). Either was bound while no agent
 * ran, the claim guard not in force or gone round. Whatever the PV's phase: a tenant who
 * has come and gone again still had the data. Lines of a record older than the tenant's
 * UID in it tell nothing.
 */
export function reboundVolumes(pvs: readonly PvWithIdentity[], get: (identity: string) => VolumeRecordEntry | undefined): ReboundVolume[] {
  return pvs.flatMap(({ pv, identity }): ReboundVolume[] => {
    const entry = get(identity);
    const boundTo = pv.spec?.claimRef?.uid;
    if (entry?.state !== 'dirty' || !boundTo) return [];
    if (entry.claimUid !== undefined) return boundTo === entry.claimUid ? [] : [{ pv, usedBy: { claim: entry.claim, uid: entry.claimUid } }];
    const madeByAgent = entry.pvUid === undefined || entry.pvUid === pv.metadata?.uid;
    return madeByAgent ? [] : [{ pv, usedBy: { earlierPv: entry.pvName ?? '' } }];
  });
}

/** Why a volume may not be offered now, or undefined when it may (`first-sight`: the record has never seen it). */
export type OfferVerdict =
  | { readonly kind: 'offer' }
  | { readonly kind: 'first-sight' }
  | { readonly kind: 'not-clean'; readonly state: RecordedState; readonly reason: string }
  | { readonly kind: 'overlaps'; readonly other: VolumeRecordEntry };

/**
 * Whether the volume `identity` at `hostPath` may be offered: its line says clean (or an
 * administrator accepted it as it is), and no other volume that shares its storage is
 * offered or dirty. A line of a weak identity (a device or anonymous mount number, which
 * the kernel hands out again) at another path is another volume's, gone: first sight.
 */
export function offerVerdict(
  identity: string, hostPath: string, entries: readonly VolumeRecordEntry[], get: (identity: string) => VolumeRecordEntry | undefined,
): OfferVerdict {
  const extent = storageExtent(identity);
  const other = entries.find((e) => e.identity !== identity && e.state !== 'clean' && extentsOverlap(extent, storageExtent(e.identity)));
  if (other) return { kind: 'overlaps', other };
  const entry = get(identity);
  if (entry === undefined || (isWeakIdentity(identity) && entry.hostPath !== hostPath)) return { kind: 'first-sight' };
  if (entry.state === 'clean' || (entry.state === 'dirty' && entry.admin === 'accept')) return { kind: 'offer' };
  return { kind: 'not-clean', state: entry.state, reason: entry.reason };
}

/** What becomes of a dirty volume without a PV. */
export type DirtyDisposition =
  | { readonly action: 'clean' }
  | { readonly action: 'hold'; readonly reason: string };

/**
 * A dirty volume is cleaned when its reclaim policy is Delete and its class is
 * configured here, or when an administrator asked for it (`volumes reclaim`);
 * otherwise (Retain, Recycle, no known policy, a class not configured) it is held, never offered,
 * until an administrator says so.
 */
export function dirtyDisposition(entry: VolumeRecordEntry, classConfigured: boolean): DirtyDisposition {
  if (!classConfigured) return { action: 'hold', reason: `its StorageClass "${entry.storageClass}" is not configured on this node` };
  if (entry.admin === 'reclaim' || entry.reclaimPolicy === 'Delete') return { action: 'clean' };
  return { action: 'hold', reason: `its reclaim policy ${entry.reclaimPolicy ?? '(unknown)'} keeps the data` };
}
