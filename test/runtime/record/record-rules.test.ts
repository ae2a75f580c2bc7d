import type { V1PersistentVolume } from '@kubernetes/client-node';
import {
  changesFromPvs, dirtyDisposition, offerVerdict, reboundVolumes, recordedLines, stateSeenOnPv, VolumeRecordEntry,
} from '../../../src/runtime/record';

const NOW = new Date('2026-11-27T00:00:00Z');
const context = { dialect: 'directory' as const, reclaimPolicyOf: (p: V1PersistentVolume) => p.spec?.persistentVolumeReclaimPolicy, now: NOW };

interface PvFields { phase?: string; claimUid?: string; uid?: string; name?: string; boundByController?: boolean; policy?: string }

function pv(over: PvFields = {}): V1PersistentVolume {
  return {
    metadata: {
      name: over.name ?? 'local-pv-1',
      uid: over.uid ?? 'uid-1',
      annotations: over.boundByController ? { 'pv.kubernetes.io/bound-by-controller': 'yes' } : {},
    },
    spec: {
      storageClassName: 'fast',
      local: { path: '/mnt/fast/vol1' },
      persistentVolumeReclaimPolicy: over.policy ?? 'Delete',
      ...(over.claimUid !== undefined ? { claimRef: { namespace: 'ns', name: 'data', uid: over.claimUid } } : {}),
      capacity: {},
      accessModes: [],
    },
    status: { phase: over.phase ?? 'Available' },
  };
}

function entry(over: Partial<VolumeRecordEntry> = {}): VolumeRecordEntry {
  return {
    identity: 'fs:/@wwid:a',
    state: 'offered',
    dialect: 'directory',
    storageClass: 'fast',
    hostPath: '/mnt/fast/vol1',
    volumeMode: 'Filesystem',
    pvName: 'local-pv-1',
    pvUid: 'uid-1',
    reclaimPolicy: 'Delete',
    reason: 'offered as PV local-pv-1',
    since: NOW.toISOString(),
    ...over,
  };
}

/** What the record changes, when `pvs` are this dialect's PVs with known identities and `others` further PVs the agent knows. */
function changes(entries: VolumeRecordEntry[], pvs: V1PersistentVolume[], identity = 'fs:/@wwid:a', others: V1PersistentVolume[] = []) {
  const map = new Map(entries.map((e) => [e.identity, e]));
  const all = [...pvs, ...others];
  const known = { uids: new Set(all.map((p) => p.metadata!.uid!)), names: new Set(all.map((p) => p.metadata!.name!)) };
  return changesFromPvs(entries, (i) => map.get(i), pvs.map((p) => ({ pv: p, identity })), known, context);
}

describe('what a PV shows of its volume', () => {
  test.each(['Bound', 'Released', 'Failed'])('a PV %s shows a tenant may have written', (phase) => {
    expect(stateSeenOnPv(pv({ phase }))).toBe('dirty');
  });

  test('an Available PV with a claim uid, or the binder\'s annotation, was used', () => {
    expect(stateSeenOnPv(pv({ claimUid: 'c1' }))).toBe('dirty');
    expect(stateSeenOnPv(pv({ boundByController: true }))).toBe('dirty');
  });

  test('an Available PV without any sign of a claim is unused', () => {
    expect(stateSeenOnPv(pv())).toBe('offered');
  });
});

describe('a PV\'s line in the record', () => {
  const lines = [entry(), entry({ identity: 'fs:/@wwid:b', pvUid: 'uid-2', pvName: 'local-pv-2' })];
  const lineOf = recordedLines(lines, (i) => lines.find((l) => l.identity === i));

  test('is found by its UID when the PV carries no identity (the replaced provisioners\' PVs)', () => {
    expect(lineOf(pv({ uid: 'uid-2' }))?.identity).toBe('fs:/@wwid:b');
  });

  test('is found by the identity written on the PV first', () => {
    const marked = pv({ uid: 'uid-2' });
    marked.metadata!.annotations!['local.storage.k8s.io/volume-identity'] = 'fs:/@wwid:a';
    expect(lineOf(marked)?.identity).toBe('fs:/@wwid:a');
  });

  test('is none for a PV the record has never seen', () => {
    expect(lineOf(pv({ uid: 'uid-9' }))).toBeUndefined();
  });
});

describe('recording what PVs show', () => {
  test('a PV seen Bound makes its volume dirty, with the reclaim policy that applies', () => {
    const [c] = changes([entry()], [pv({ phase: 'Bound', claimUid: 'c1', policy: 'Retain' })]);
    expect(c).toMatchObject({ state: 'dirty', reclaimPolicy: 'Retain', pvName: 'local-pv-1' });
  });

  test('a PV seen used records the claim its tenant used it through, by UID', () => {
    const [c] = changes([entry()], [pv({ phase: 'Released', claimUid: 'c1' })]);
    expect(c).toMatchObject({ state: 'dirty', claim: 'ns/data', claimUid: 'c1' });
  });

  test('the tenant recorded is never replaced by a later claim of the same PV', () => {
    const used = entry({ state: 'dirty', claim: 'ns/data', claimUid: 'c1' });
    expect(changes([used], [pv({ phase: 'Bound', claimUid: 'c2' })])).toEqual([]);
  });

  test('a dirty line that does not know its tenant never takes a claim bound since for it', () => {
    expect(changes([entry({ state: 'dirty' })], [pv({ phase: 'Bound', claimUid: 'c2' })])).toEqual([]);
  });

  test('a PV seen used that names no claim any more (its claimRef cleared) records a tenant the record cannot name', () => {
    const [c] = changes([entry()], [pv({ boundByController: true })]);
    expect(c).toMatchObject({ state: 'dirty', claimUid: '' });
    expect(c.claim).toBeUndefined();
  });

  test('a PV the agent did not make in place of its own that went unseen (made anew from a copy) leaves the volume dirty, whatever the new PV shows', () => {
    for (const seen of [pv({ uid: 'uid-2' }), pv({ uid: 'uid-2', phase: 'Bound', claimUid: 'c2' })]) {
      const [c] = changes([entry()], [seen]);
      expect(c).toMatchObject({ state: 'dirty', pvUid: 'uid-1' });
      expect(c.claimUid).toBeUndefined();
      expect(c.reason).toMatch(/its PV local-pv-1 went while the agent could not see .* not made by this agent/);
    }
  });

  test('a dirty volume stays dirty when its PV looks unused again (claimRef cleared by an administrator)', () => {
    expect(changes([entry({ state: 'dirty' })], [pv()])).toEqual([]);
  });

  test('a volume recorded offered whose PV is gone is dirty: nothing proves no tenant wrote meanwhile', () => {
    const [c] = changes([entry()], []);
    expect(c).toMatchObject({ state: 'dirty', identity: 'fs:/@wwid:a' });
    expect(c.reason).toMatch(/went while the agent could not see/);
  });

  test('an offered volume\'s PV seen for the first time has its UID recorded, so that whether it went is told by UID', () => {
    expect(changes([entry({ pvUid: undefined })], [pv()])).toEqual([expect.objectContaining({ state: 'offered', pvUid: 'uid-1' })]);
  });

  test('a volume just claimed (its PV made, its UID not yet seen) is not taken for gone while a PV has its name', () => {
    expect(changes([entry({ pvUid: undefined })], [], 'fs:/@wwid:b', [pv()])).toEqual([]);
    expect(changes([entry({ pvUid: undefined })], [], 'fs:/@wwid:b')).toEqual([expect.objectContaining({ state: 'dirty' })]);
  });

  test('a clean volume without a PV stays clean', () => {
    expect(changes([entry({ state: 'clean', pvName: undefined, pvUid: undefined })], [])).toEqual([]);
  });

  test('a PV the record has never seen is recorded: offered when unused, dirty when used (first sight, e.g. adopted)', () => {
    expect(changes([], [pv()])[0]).toMatchObject({ state: 'offered', pvName: 'local-pv-1' });
    expect(changes([], [pv({ phase: 'Released', claimUid: 'c' })])[0]).toMatchObject({ state: 'dirty' });
  });

  test('the other dialect\'s lines are not touched', () => {
    expect(changes([entry({ dialect: 'device' })], [])).toEqual([]);
  });

  test('nothing changes on a pass that sees what the record says', () => {
    expect(changes([entry()], [pv()])).toEqual([]);
  });
});

describe('a volume bound to another tenant than the one that used it', () => {
  const used = entry({ state: 'dirty', claim: 'ns/db-0', claimUid: 'c1' });
  const found = (line: VolumeRecordEntry, p: V1PersistentVolume) => reboundVolumes([{ pv: p, identity: line.identity }], () => line);

  test('is a Bound PV whose claim is not the one its record saw use the volume', () => {
    const bound = pv({ phase: 'Bound', claimUid: 'c2' });
    expect(found(used, bound)).toEqual([{ pv: bound, usedBy: { claim: 'ns/db-0', uid: 'c1' } }]);
  });

  test('is a claim that came and went again while no agent ran: it had the data too', () => {
    const released = pv({ phase: 'Released', claimUid: 'c2' });
    expect(found(used, released)).toEqual([{ pv: released, usedBy: { claim: 'ns/db-0', uid: 'c1' } }]);
  });

  test('is any claim of a volume whose tenant the record could not name', () => {
    const bound = pv({ phase: 'Bound', claimUid: 'c2' });
    expect(found(entry({ state: 'dirty', claimUid: '' }), bound)).toEqual([{ pv: bound, usedBy: { claim: undefined, uid: '' } }]);
  });

  test('is not the tenant that used it, still bound or Released', () => {
    expect(found(used, pv({ phase: 'Bound', claimUid: 'c1' }))).toEqual([]);
    expect(found(used, pv({ phase: 'Released', claimUid: 'c1' }))).toEqual([]);
  });

  test('is not a claim bound to a volume offered clean', () => {
    expect(found(entry({ state: 'offered' }), pv({ phase: 'Bound', claimUid: 'c2' }))).toEqual([]);
  });

  test('cannot be told from a line of a record older than tenants\' UIDs in it', () => {
    expect(found(entry({ state: 'dirty' }), pv({ phase: 'Bound', claimUid: 'c2' }))).toEqual([]);
  });

  test('is any claim of a PV the agent did not make, put in place of its own that went unseen', () => {
    const recreated = pv({ uid: 'uid-2', phase: 'Bound', claimUid: 'c2' });
    expect(found(entry({ state: 'dirty' }), recreated)).toEqual([{ pv: recreated, usedBy: { earlierPv: 'local-pv-1' } }]);
  });
});

describe('what may be offered', () => {
  const get = (entries: VolumeRecordEntry[]) => (i: string) => entries.find((e) => e.identity === i);

  test('a clean volume may be offered; a never-seen one is a first sight', () => {
    const lines = [entry({ state: 'clean' })];
    expect(offerVerdict('fs:/@wwid:a', '/mnt/fast/vol1', lines, get(lines)).kind).toBe('offer');
    expect(offerVerdict('fs:/@wwid:b', '/mnt/fast/vol1', lines, get(lines)).kind).toBe('first-sight');
  });

  test('an offered or dirty volume is not offered again', () => {
    for (const state of ['offered', 'dirty'] as const) {
      const lines = [entry({ state })];
      expect(offerVerdict('fs:/@wwid:a', '/mnt/fast/vol1', lines, get(lines))).toMatchObject({ kind: 'not-clean', state });
    }
  });

  test('a dirty volume an administrator accepted may be offered as it is', () => {
    const lines = [entry({ state: 'dirty', admin: 'accept' })];
    expect(offerVerdict('fs:/@wwid:a', '/mnt/fast/vol1', lines, get(lines)).kind).toBe('offer');
  });

  test('a directory inside an offered filesystem is refused, naming the other volume', () => {
    const lines = [entry({ identity: 'fs:/@wwid:a' })];
    const verdict = offerVerdict('fs:/sub@wwid:a', '/mnt/fast/vol2', lines, get(lines));
    expect(verdict).toMatchObject({ kind: 'overlaps', other: { hostPath: '/mnt/fast/vol1' } });
  });

  test('a weak identity\'s line at another path is another volume\'s, gone (its number handed out again): a first sight', () => {
    const lines = [entry({ identity: 'mount:tmpfs:0:55:/', state: 'dirty' })];
    expect(offerVerdict('mount:tmpfs:0:55:/', '/mnt/fast/vol2', lines, get(lines)).kind).toBe('first-sight');
    expect(offerVerdict('mount:tmpfs:0:55:/', '/mnt/fast/vol1', lines, get(lines))).toMatchObject({ kind: 'not-clean', state: 'dirty' });
  });

  test('a stable identity\'s line follows its disk to another path', () => {
    const lines = [entry({ state: 'dirty' })];
    expect(offerVerdict('fs:/@wwid:a', '/mnt/other/vol9', lines, get(lines))).toMatchObject({ kind: 'not-clean', state: 'dirty' });
  });

  test('a clean volume on the same disk does not block another: whichever is claimed first is offered', () => {
    const lines = [entry({ identity: 'wwid:a', state: 'clean' })];
    expect(offerVerdict('fs:/@wwid:a', '/mnt/fast/vol1', lines, get(lines)).kind).toBe('first-sight');
  });
});

describe('a dirty volume without a PV', () => {
  test('is cleaned when its reclaim policy is Delete and its class is configured', () => {
    expect(dirtyDisposition(entry({ state: 'dirty' }), true).action).toBe('clean');
  });

  test('is held when its reclaim policy keeps the data, or is unknown', () => {
    expect(dirtyDisposition(entry({ state: 'dirty', reclaimPolicy: 'Retain' }), true)).toMatchObject({ action: 'hold', reason: expect.stringMatching(/Retain/) });
    expect(dirtyDisposition(entry({ state: 'dirty', reclaimPolicy: undefined }), true).action).toBe('hold');
  });

  test('is held while its class is not configured, whatever its policy', () => {
    expect(dirtyDisposition(entry({ state: 'dirty' }), false)).toMatchObject({ action: 'hold', reason: expect.stringMatching(/not configured/) });
  });

  test('is cleaned, whatever its policy, once an administrator asked for it', () => {
    expect(dirtyDisposition(entry({ state: 'dirty', reclaimPolicy: 'Retain', admin: 'reclaim' }), true).action).toBe('clean');
  });
});
