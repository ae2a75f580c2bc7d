import type { V1Node, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import {
  decideClaimOfGoneNode,
  decidePVOfGoneNode,
  isNodeGone,
  nodeNamesOfPV,
} from '../../../src/runtime/node-cleanup/decisions';

type Req = { key: string; operator: string; values?: string[] };

function pv(terms: Req[][] | undefined, phase = 'Available', extra: Partial<V1PersistentVolume['spec']> = {}): V1PersistentVolume {
  return {
    metadata: { name: 'local-pv-1', uid: 'pv-uid' },
    spec: {
      local: { path: '/mnt/disks/vol1' },
      nodeAffinity: terms && { required: { nodeSelectorTerms: terms.map((t) => ({ matchExpressions: t })) } },
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'local-fast',
      ...extra,
    } as V1PersistentVolume['spec'],
    status: { phase },
  };
}

/** The opted-in StorageClasses; the test PVs are of the first. */
const OPTED_IN = ['local-fast'];

const onNode = (name: string): Req[][] => [[{ key: 'kubernetes.io/hostname', operator: 'In', values: [name] }]];
const node = (name: string, hostname = name): V1Node => ({ metadata: { name, labels: { 'kubernetes.io/hostname': hostname } } });

describe('node names of a local PV', () => {
  test('within a term hostname values intersect', () => {
    expect(nodeNamesOfPV(pv([[
      { key: 'kubernetes.io/hostname', operator: 'In', values: ['a', 'b'] },
      { key: 'kubernetes.io/hostname', operator: 'In', values: ['b', 'c'] },
    ]]))).toEqual(['b']);
  });

  test('across terms hostname values unite', () => {
    expect(nodeNamesOfPV(pv([...onNode('a'), ...onNode('b')]))).toEqual(['a', 'b']);
  });

  test('no affinity means an unknown node, not a deleted one', () => {
    expect(nodeNamesOfPV(pv(undefined))).toBeUndefined();
    expect(decidePVOfGoneNode(pv(undefined), [], OPTED_IN)).toEqual({ delete: false, reason: 'its node exists or is unknown' });
  });

  test('terms on other keys pin nothing', () => {
    expect(nodeNamesOfPV(pv([[{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['z'] }]]))).toBeUndefined();
  });
});

describe('whether a node is gone', () => {
  test('a Node with that name exists', () => expect(isNodeGone('n1', [node('n1', 'other')])).toBe(false));
  test('a Node with that hostname label exists', () => expect(isNodeGone('host-1', [node('n1', 'host-1')])).toBe(false));
  test('neither exists', () => expect(isNodeGone('n1', [node('n2')])).toBe(true));
});

describe('PVs of gone nodes', () => {
  test('an Available PV of a gone node is deleted', () => {
    expect(decidePVOfGoneNode(pv(onNode('gone')), [node('here')], OPTED_IN)).toEqual({ delete: true });
  });

  test('a Released PV with Delete of a gone node is deleted', () => {
    expect(decidePVOfGoneNode(pv(onNode('gone'), 'Released'), [], OPTED_IN)).toEqual({ delete: true });
  });

  test('a Released PV with Retain stays', () => {
    expect(decidePVOfGoneNode(pv(onNode('gone'), 'Released', { persistentVolumeReclaimPolicy: 'Retain' }), [], OPTED_IN).delete).toBe(false);
  });

  test('a Bound PV stays: its claim is handled separately', () => {
    expect(decidePVOfGoneNode(pv(onNode('gone'), 'Bound'), [], OPTED_IN).delete).toBe(false);
  });

  test('a PV whose node exists stays', () => {
    expect(decidePVOfGoneNode(pv(onNode('here')), [node('here')], OPTED_IN).delete).toBe(false);
  });

  test('a non-local PV is never touched', () => {
    const p = pv(onNode('gone'));
    delete (p.spec as { local?: unknown }).local;
    expect(decidePVOfGoneNode(p, [], OPTED_IN).delete).toBe(false);
  });

  test('a PV of a StorageClass that has not opted in is never touched, whatever its phase', () => {
    for (const phase of ['Available', 'Released']) {
      expect(decidePVOfGoneNode(pv(onNode('gone'), phase, { storageClassName: 'hand-made' }), [], OPTED_IN))
        .toEqual({ delete: false, reason: 'StorageClass "hand-made" has not opted in' });
    }
  });

  test('with no class opted in, nothing is deleted', () => {
    expect(decidePVOfGoneNode(pv(onNode('gone')), [], []).delete).toBe(false);
  });

  test('a Released PV without a reclaim policy stays: only Delete says its data may go', () => {
    expect(decidePVOfGoneNode(pv(onNode('gone'), 'Released', { persistentVolumeReclaimPolicy: undefined }), [], OPTED_IN).delete).toBe(false);
  });
});

describe('claims bound to PVs of gone nodes', () => {
  const boundPV = (): V1PersistentVolume => pv(onNode('gone'), 'Bound', { claimRef: { name: 'data', namespace: 'db', uid: 'pvc-uid' } });
  const claim = (className = 'fast'): V1PersistentVolumeClaim => ({
    metadata: { name: 'data', namespace: 'db', uid: 'pvc-uid' },
    spec: { storageClassName: className, volumeName: 'local-pv-1' },
  });
  const base = { nodes: [node('here')], storageClassNames: ['fast'], goneSinceMs: 0, nowMs: 60_000, deletionDelayMs: 60_000 };

  test('is deleted when the node stayed gone for the delay, the binding is intact and the class opted in', () => {
    expect(decideClaimOfGoneNode({ ...base, pvc: claim(), pv: boundPV() })).toEqual({ delete: true });
  });

  test('waits for the deletion delay', () => {
    expect(decideClaimOfGoneNode({ ...base, pvc: claim(), pv: boundPV(), nowMs: 59_999 }).delete).toBe(false);
  });

  test('stays when its class did not opt in', () => {
    expect(decideClaimOfGoneNode({ ...base, pvc: claim('slow'), pv: boundPV() }).delete).toBe(false);
  });

  test('stays when the node came back', () => {
    expect(decideClaimOfGoneNode({ ...base, nodes: [node('gone')], pvc: claim(), pv: boundPV() }).delete).toBe(false);
  });

  test('stays when the PV is bound to another claim with the same name (UID mismatch)', () => {
    const p = boundPV();
    p.spec!.claimRef!.uid = 'other-uid';
    expect(decideClaimOfGoneNode({ ...base, pvc: claim(), pv: p })).toEqual({ delete: false, reason: 'the binding between claim and PV is not intact' });
  });

  test('stays when its PV is not local', () => {
    const p = boundPV();
    delete (p.spec as { local?: unknown }).local;
    expect(decideClaimOfGoneNode({ ...base, pvc: claim(), pv: p }).delete).toBe(false);
  });
});
