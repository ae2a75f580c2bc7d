/**
 * One volume's line in the node's volume record (volume-record.ts): what state
 * its data is in, and what is needed to find it again and clean it, whatever has
 * become of its PV. Kept as one JSON file per volume.
 */
import { parseRootMetadata, RootMetadata } from '../volume/root-metadata';

/**
 * - `clean`: verified clean (emptied or wiped, or seen holding nothing) and not
 *   offered: the one state in which discovery may offer it;
 * - `offered`: a PV was made for it and no tenant has been seen on it;
 * - `dirty`: a tenant may have written to it: it is cleaned (reclaim policy
 *   Delete) or held (Retain, or its class is not configured) before it is ever
 *   offered again, whatever becomes of its PV.
 */
export type RecordedState = 'clean' | 'offered' | 'dirty';

/** What an administrator said of a dirty volume (`local-volume-provisioner volumes ...`). */
export type AdminWord =
  /** Clean it now, and offer it once clean, whatever its reclaim policy. */
  | 'reclaim'
  /** Offer it as it is: the administrator cleaned it, or gives its data on knowingly. */
  | 'accept';

export interface VolumeRecordEntry {
  /** The volume's identity (volume/identity.ts): the key. */
  readonly identity: string;
  readonly state: RecordedState;
  /**
   * The dialect that offers it; `pool` for a pool class's storage (the line of the
   * filesystem it claims) and each volume it made.
   */
  readonly dialect: 'directory' | 'device' | 'pool';
  readonly storageClass: string;
  /** Its `spec.local.path` (the host's view). */
  readonly hostPath: string;
  readonly volumeMode: 'Filesystem' | 'Block';
  /** The PV last made for it, while it has one. */
  readonly pvName?: string;
  readonly pvUid?: string;
  /** The reclaim policy that applies to the data on it (of the PV that had it). */
  readonly reclaimPolicy?: string;
  /**
   * `dirty`: the claim a tenant was seen using it through (`namespace/name`) and that claim's
   * UID, or an empty UID when its PV showed use but named no claim (its claimRef tampered
   * with). A PV of it bound to a claim of another UID before it is clean gives that claim
   * the tenant's data (bound while no agent ran: record-rules.ts, reboundVolumes).
   */
  readonly claim?: string;
  readonly claimUid?: string;
  /** Why it is in this state, for a person. */
  readonly reason: string;
  /** When it entered this state (ISO 8601). */
  readonly since: string;
  readonly admin?: AdminWord;
  /**
   * `accept ... --for`: the one claim (`namespace/name`) the volume is given to, as it is; its
   * PV is made bound to that claim in advance, so no other can have it.
   */
  readonly handTo?: string;
  /** The root directory's metadata when it was first offered (Filesystem volumes), restored by every clean. */
  readonly rootMetadata?: RootMetadata;
}

const STATES: readonly RecordedState[] = ['clean', 'offered', 'dirty'];

/** Parses one record file; a message naming what is wrong otherwise. */
export function parseRecordEntry(text: string): { ok: true; entry: VolumeRecordEntry } | { ok: false; message: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `is not JSON (${(e as Error).message})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, message: 'is not a JSON object' };
  const v = value as Record<string, unknown>;
  const str = (key: string, required: boolean): string | undefined | Error => {
    const x = v[key];
    if (x === undefined && !required) return undefined;
    return typeof x === 'string' && (x !== '' || !required) ? x : new Error(`field "${key}" must be a non-empty string`);
  };
  for (const key of ['identity', 'storageClass', 'hostPath', 'reason', 'since']) {
    const x = str(key, true);
    if (x instanceof Error) return { ok: false, message: x.message };
  }
  for (const key of ['pvName', 'pvUid', 'reclaimPolicy', 'claim', 'claimUid', 'handTo']) {
    const x = str(key, false);
    if (x instanceof Error) return { ok: false, message: x.message };
  }
  if (!STATES.includes(v.state as RecordedState)) return { ok: false, message: `field "state" must be one of ${STATES.join(', ')}, not ${JSON.stringify(v.state)}` };
  if (!['directory', 'device', 'pool'].includes(v.dialect as string)) {
    return { ok: false, message: `field "dialect" must be directory, device or pool, not ${JSON.stringify(v.dialect)}` };
  }
  if (v.volumeMode !== 'Filesystem' && v.volumeMode !== 'Block') return { ok: false, message: `field "volumeMode" must be Filesystem or Block, not ${JSON.stringify(v.volumeMode)}` };
  if (v.admin !== undefined && v.admin !== 'reclaim' && v.admin !== 'accept') return { ok: false, message: `field "admin" must be reclaim or accept, not ${JSON.stringify(v.admin)}` };
  if (v.rootMetadata !== undefined) {
    try {
      parseRootMetadata(v.rootMetadata);
    } catch (e) {
      return { ok: false, message: `field "rootMetadata": ${(e as Error).message}` };
    }
  }
  return { ok: true, entry: v as unknown as VolumeRecordEntry };
}
