import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../../src/config';
import type { PoolVolumeUsage } from '../../../src/runtime/pool/backend';
import {
  claimConcernsNode, decideClaims, decideExpansions, decideRelease, PoolClassConfig, poolVolumeOf, reboundPoolVolumes, strayKeeping, volumesWithoutPv,
} from '../../../src/runtime/pool/pool-decisions';
import { availableBytes } from '../../../src/runtime/pool/storage-capacity';
import type { VolumeRecordEntry } from '../../../src/runtime/record';

const UID = '0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b';
const POOLS: Record<string, PoolClassConfig> = {
  'local-pool': {
    hostDir: '/mnt/pool',
    mountDir: '/mnt/pool',
    pool: 'btrfs',
    blockCleanerCommand: [],
    volumeMode: 'Filesystem',
    accessMode: 'ReadWriteOnce',
    fsType: '',
    namePattern: '*',
    selector: [],
  },
};

function claim(change: { annotations?: Record<string, string>; spec?: object; status?: object; uid?: string } = {}): V1PersistentVolumeClaim {
  return {
    metadata: {
      name: 'data',
      namespace: 'app',
      uid: change.uid ?? UID,
      annotations: change.annotations ?? { 'volume.kubernetes.io/selected-node': 'worker-1', 'volume.kubernetes.io/storage-provisioner': POOL_PROVISIONER },
    },
    spec: { storageClassName: 'local-pool', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } }, ...change.spec },
    status: { phase: 'Pending', ...change.status },
  };
}

const decide = (claims: V1PersistentVolumeClaim[], pvNames: string[] = []) => decideClaims(claims, new Set(pvNames), 'worker-1', POOLS);

describe('which claims a node provisions', () => {
  test('a pending claim of a pool class the scheduler put on this node, handed to our provisioner, gets a volume of its size named for it', () => {
    expect(decide([claim()])).toEqual([expect.objectContaining({ action: 'provision', className: 'local-pool', sizeBytes: 10 * 1024 ** 3, name: `pvc-${UID}` })]);
  });

  test('a claim put on another node is that node\'s', () => {
    expect(decide([claim({ annotations: { 'volume.kubernetes.io/selected-node': 'worker-2', 'volume.kubernetes.io/storage-provisioner': POOL_PROVISIONER } })])).toEqual([]);
  });

  test('a claim not yet handed to our provisioner waits for the PV controller', () => {
    expect(decide([claim({ annotations: { 'volume.kubernetes.io/selected-node': 'worker-1' } })])).toEqual([]);
  });

  test('the older beta provisioner annotation is read too', () => {
    const old = claim({ annotations: { 'volume.kubernetes.io/selected-node': 'worker-1', 'volume.beta.kubernetes.io/storage-provisioner': POOL_PROVISIONER } });
    expect(decide([old]).map((d) => d.action)).toEqual(['provision']);
  });

  test('a claim of a class that is not a pool here is left alone', () => {
    expect(decide([claim({ spec: { storageClassName: 'fast-disks' } })])).toEqual([]);
  });

  test('a bound claim, or one whose PV exists already, is not provisioned again', () => {
    expect(decide([claim({ spec: { volumeName: 'pv-1' } })])).toEqual([]);
    expect(decide([claim()], [`pvc-${UID}`])).toEqual([]);
  });

  test('a Block claim, a claim with a data source of another kind and a claim without a size are refused, saying why', () => {
    const refused = decide([
      claim({ uid: '00000000-0000-0000-0000-000000000001', spec: { volumeMode: 'Block' } }),
      claim({ uid: '00000000-0000-0000-0000-000000000002', spec: { dataSource: { kind: 'VolumeSnapshot', name: 's' } } }),
      claim({ uid: '00000000-0000-0000-0000-000000000003', spec: { resources: { requests: {} } } }),
    ]);
    expect(refused.map((d) => d.action === 'refuse' && d.reason)).toEqual([
      expect.stringContaining('Filesystem volumes only'),
      'its data source is a VolumeSnapshot of API group ""; a pool class fills a volume only from a VolumeSnapshot (snapshot.storage.k8s.io) or a PersistentVolumeClaim',
      expect.stringContaining('is not a size'),
    ]);
  });

  test('a claim with a VolumeSnapshot or a claim for data source is provisioned from it', () => {
    const snapshot = { kind: 'VolumeSnapshot', apiGroup: 'snapshot.storage.k8s.io', name: 'snap' };
    expect(decide([claim({ spec: { dataSource: snapshot, dataSourceRef: snapshot } })])).toEqual([
      expect.objectContaining({ action: 'provision', source: { kind: 'VolumeSnapshot', name: 'snap' } }),
    ]);
    expect(decide([claim({ spec: { dataSource: { kind: 'PersistentVolumeClaim', name: 'db' } } })])).toEqual([
      expect.objectContaining({ action: 'provision', source: { kind: 'PersistentVolumeClaim', name: 'db' } }),
    ]);
  });

  test('a data source in another namespace is refused: a claim reads only its own namespace\'s data', () => {
    const ref = { kind: 'VolumeSnapshot', apiGroup: 'snapshot.storage.k8s.io', name: 'snap', namespace: 'other' };
    expect(decide([claim({ spec: { dataSourceRef: ref } })])).toEqual([
      expect.objectContaining({ action: 'refuse', reason: expect.stringContaining('is in namespace "other"') }),
    ]);
  });

  test('a Block claim of an lvm-thin class gets a Block volume; a Filesystem one a Filesystem volume', () => {
    const thin = { 'local-pool': { ...POOLS['local-pool'], hostDir: '/dev/vg0', pool: 'lvm-thin', thinPool: 'thin', fsType: 'ext4' } } as const;
    const decided = decideClaims([
      claim({ uid: '00000000-0000-0000-0000-000000000001', spec: { volumeMode: 'Block' } }),
      claim({ uid: '00000000-0000-0000-0000-000000000002' }),
    ], new Set(), 'worker-1', thin);
    expect(decided).toEqual([
      expect.objectContaining({ action: 'provision', volumeMode: 'Block' }),
      expect.objectContaining({ action: 'provision', volumeMode: 'Filesystem' }),
    ]);
  });
});

interface PvChange {
  phase?: string; policy?: string; deleting?: boolean; finalizers?: string[]; path?: string; node?: string; volumeId?: string;
}

function pv(change: PvChange = {}): V1PersistentVolume {
  return {
    metadata: {
      name: `pvc-${UID}`,
      labels: { 'local.storage.k8s.io/node': change.node ?? 'worker-1' },
      annotations: {
        'pv.kubernetes.io/provisioned-by': POOL_PROVISIONER,
        ...(change.volumeId !== '' ? { 'local.storage.k8s.io/pool-volume': change.volumeId ?? 'fc4dcb07-2fde-2a43-9d14-f06589f79398' } : {}),
      },
      finalizers: change.finalizers ?? ['local.storage.k8s.io/cleanup'],
      ...(change.deleting ? { deletionTimestamp: new Date() } : {}),
    },
    spec: { storageClassName: 'local-pool', persistentVolumeReclaimPolicy: change.policy ?? 'Delete', local: { path: change.path ?? `/mnt/pool/pvc-${UID}` } },
    status: { phase: change.phase ?? 'Bound' },
  };
}

describe('which claim changes start a pass on a node', () => {
  test('a claim the scheduler put on this node, or one bound to a PV of this node; no other claim of the cluster', () => {
    const ours = (name: string) => name === 'pvc-mine';
    expect(claimConcernsNode(claim(), 'worker-1', ours)).toBe(true);
    expect(claimConcernsNode(claim(), 'worker-2', ours)).toBe(false);
    expect(claimConcernsNode(claim({ annotations: {}, spec: { volumeName: 'pvc-mine' } }), 'worker-2', ours)).toBe(true);
    expect(claimConcernsNode(claim({ annotations: {}, spec: { volumeName: 'pvc-other' } }), 'worker-2', ours)).toBe(false);
  });
});

describe('what a pool PV asks of its node', () => {
  test('a pool PV is this node\'s only with our provisioner, our node label and the path of its volume in the class\'s pool', () => {
    expect(poolVolumeOf(pv(), 'worker-1', POOLS)).toMatchObject({
      className: 'local-pool', name: `pvc-${UID}`, volumeId: 'fc4dcb07-2fde-2a43-9d14-f06589f79398',
    });
    expect(poolVolumeOf(pv({ node: 'worker-2' }), 'worker-1', POOLS)).toBeUndefined();
    expect(poolVolumeOf(pv({ path: '/etc' }), 'worker-1', POOLS)).toBeUndefined();
  });

  test('a CSI pool PV is this node\'s only as a PV of our driver whose handle is its volume\'s identity', () => {
    const volumeId = 'fc4dcb07-2fde-2a43-9d14-f06589f79398';
    const csi = (source: { driver: string; volumeHandle: string }) => {
      const local = pv();
      return { ...local, spec: { ...local.spec, local: undefined, csi: source } };
    };
    expect(poolVolumeOf(csi({ driver: POOL_PROVISIONER, volumeHandle: volumeId }), 'worker-1', POOLS)).toMatchObject({ name: `pvc-${UID}`, volumeId });
    expect(poolVolumeOf(csi({ driver: 'other.csi.example.com', volumeHandle: volumeId }), 'worker-1', POOLS)).toBeUndefined();
    expect(poolVolumeOf(csi({ driver: POOL_PROVISIONER, volumeHandle: 'another-volume' }), 'worker-1', POOLS)).toBeUndefined();
  });

  test('a pool PV without its volume\'s identity is never acted on: nothing could say which volume to delete', () => {
    expect(poolVolumeOf(pv({ volumeId: '' }), 'worker-1', POOLS)).toBeUndefined();
  });

  test('a Released PV of policy Delete is retired: deleted first, so no claim binds it, its volume destroyed after', () => {
    expect(decideRelease(pv({ phase: 'Released' }))).toBe('retire');
  });

  test('an Available pool PV (an administrator cleared its claimRef) is retired whatever its policy: a pool volume is never offered again', () => {
    expect(decideRelease(pv({ phase: 'Available' }))).toBe('retire');
    expect(decideRelease(pv({ phase: 'Available', policy: 'Retain' }))).toBe('retire');
  });

  test('a pool PV not yet bound to its claim (Pending) is left to the binder', () => {
    expect(decideRelease(pv({ phase: 'Pending' }))).toBe('none');
  });

  test('a bound PV is a tenant\'s, even while it is being deleted', () => {
    expect(decideRelease(pv())).toBe('none');
    expect(decideRelease(pv({ deleting: true }))).toBe('none');
  });

  test('a PV being deleted once released: its volume destroyed (Delete) or kept (Retain), then it goes', () => {
    expect(decideRelease(pv({ phase: 'Released', deleting: true }))).toBe('destroy-then-let-go');
    expect(decideRelease(pv({ phase: 'Released', deleting: true, policy: 'Retain' }))).toBe('keep-then-let-go');
  });

  test('a Released PV of policy Retain keeps its volume', () => {
    expect(decideRelease(pv({ phase: 'Released', policy: 'Retain' }))).toBe('none');
  });

  test('a PV being deleted without our finalizer is not ours to act on', () => {
    expect(decideRelease(pv({ phase: 'Released', deleting: true, finalizers: [] }))).toBe('none');
  });
});

describe('which pool volumes a node resizes', () => {
  const boundTo = (uid: string, storage = '10Gi'): V1PersistentVolume => {
    const base = pv({ phase: 'Bound' });
    return { ...base, spec: { ...base.spec, capacity: { storage }, claimRef: { namespace: 'app', name: 'data', uid } } };
  };
  const asking = (storage: string) => claim({ spec: { resources: { requests: { storage } } }, status: { phase: 'Bound' } });
  const expansions = (p: V1PersistentVolume, c: V1PersistentVolumeClaim) => decideExpansions([p], (ns, name) => (ns === 'app' && name === 'data' ? c : undefined), 'worker-1', POOLS);

  test('a bound pool volume whose claim asks for more is grown to what the claim asks', () => {
    expect(expansions(boundTo(UID), asking('20Gi'))).toEqual([expect.objectContaining({ quantity: '20Gi', bytes: 20 * 1024 ** 3, fromBytes: 10 * 1024 ** 3 })]);
  });

  test('a claim asking for the same or less changes nothing (a volume never shrinks)', () => {
    expect(expansions(boundTo(UID), asking('10Gi'))).toEqual([]);
    expect(expansions(boundTo(UID), asking('5Gi'))).toEqual([]);
  });

  test('a claim of the same name but another UID is not the PV\'s claim', () => {
    expect(expansions(boundTo('11111111-1111-1111-1111-111111111111'), asking('20Gi'))).toEqual([]);
  });
});

describe('pool volumes bound to another tenant', () => {
  const boundTo = (uid: string, phase = 'Bound'): V1PersistentVolume => {
    const base = pv({ phase });
    return { ...base, spec: { ...base.spec, claimRef: { namespace: 'app', name: 'other', uid } } };
  };

  test('a pool PV bound to a claim other than the one its volume was made for (the UID in its name) gave that claim the first tenant\'s data', () => {
    expect(reboundPoolVolumes([boundTo('c2')], 'worker-1', POOLS)).toEqual([{ pv: boundTo('c2'), usedBy: { uid: UID } }]);
  });

  test('a pool PV bound to its own claim, or released by another, is not reported', () => {
    expect(reboundPoolVolumes([boundTo(UID), boundTo('c2', 'Released')], 'worker-1', POOLS)).toEqual([]);
  });
});

describe('pool volumes without a PV', () => {
  test('are the pool volumes no PV is named as', () => {
    expect(volumesWithoutPv([`pvc-${UID}`, 'pvc-11111111-1111-1111-1111-111111111111'], new Set([`pvc-${UID}`]))).toEqual(['pvc-11111111-1111-1111-1111-111111111111']);
  });

  test('nothing that is not named as a pool volume is ever one', () => {
    expect(volumesWithoutPv(['data', 'pvc-1', `pvc-${UID}.old`, 'lost+found'], new Set())).toEqual([]);
  });
});

describe('what a pool can still give', () => {
  const volumes = (...usages: PoolVolumeUsage[]) => new Map(usages.map((u, i) => [`v${i}`, u]));

  test('free space less what each volume may still write', () => {
    expect(availableBytes(1000, volumes({ usedBytes: 100, limitBytes: 300 }, { usedBytes: 50, limitBytes: 50 }))).toBe(800);
  });

  test('a volume past its limit promises nothing more, and the result is never negative', () => {
    expect(availableBytes(100, volumes({ usedBytes: 400, limitBytes: 300 }))).toBe(100);
    expect(availableBytes(100, volumes({ usedBytes: 0, limitBytes: 300 }))).toBe(0);
  });

  test('a volume without a limit now (lost while quotas were off) still counts what its PV was promised', () => {
    expect(availableBytes(1000, volumes({ usedBytes: 10 }))).toBe(1000);
    expect(availableBytes(1000, volumes({ usedBytes: 10 }), (id) => (id === 'v0' ? 300 : undefined))).toBe(710);
    // A limit below its PV's size counts for the PV's.
    expect(availableBytes(1000, volumes({ usedBytes: 10, limitBytes: 100 }), () => 300)).toBe(710);
  });
});

describe('a stray volume is kept', () => {
  const line = (over: Partial<VolumeRecordEntry>): VolumeRecordEntry => ({
    identity: 'pool:u',
    state: 'dirty',
    dialect: 'pool',
    storageClass: 'local-pool',
    hostPath: '/mnt/pool/pvc-x',
    volumeMode: 'Filesystem',
    reason: 'made',
    since: '2026-01-01T00:00:00Z',
    ...over,
  });

  test('when the record knows it: its PV may have gone while no agent could act, under a policy the record never saw', () => {
    expect(strayKeeping(line({ reclaimPolicy: 'Delete' }), 'Delete')).toBe('pv-gone-unseen');
    expect(strayKeeping(line({ reclaimPolicy: 'Retain' }), 'Delete')).toBe('retained');
  });

  test('unless an administrator said "volumes reclaim"', () => {
    expect(strayKeeping(line({ reclaimPolicy: 'Retain', admin: 'reclaim' }), 'Retain')).toBeUndefined();
  });

  test('without a line (no PV was ever made for it), by its class\'s policy', () => {
    expect(strayKeeping(undefined, 'Delete')).toBeUndefined();
    expect(strayKeeping(undefined, 'Retain')).toBe('class-keeps');
    expect(strayKeeping(undefined, undefined)).toBe('class-keeps');
  });
});
