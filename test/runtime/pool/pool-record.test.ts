import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { PoolRecord, poolLineIdentity } from '../../../src/runtime/pool/pool-record';
import { offerVerdict, VolumeRecord, type VolumeRecordEntry } from '../../../src/runtime/record';

const FS = 'fs:/@serial:disk/0001';
const UUID = '66044440-12fe-6244-a3fd-6cfa083cd048';
/** The pool classes the configuration has. */
const CONFIGURED = new Set(['local-pool', 'other-pool']);

let dir: string;
let record: VolumeRecord;
let pools: PoolRecord;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lvp-pool-record-'));
  record = VolumeRecord.open(dir).record;
  pools = new PoolRecord(record);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A static volume's line, as the directory dialect writes it. */
async function staticLine(identity: string, state: VolumeRecordEntry['state']): Promise<void> {
  await record.update(() => ({
    writes: [{ identity, state, dialect: 'directory', storageClass: 'local-disks', hostPath: '/mnt/disks/vol1', volumeMode: 'Filesystem', reason: 'r', since: 's' }],
    result: undefined,
  }));
}

const pv = (policy: string): V1PersistentVolume => ({
  metadata: { name: `pvc-${UUID}` },
  spec: { persistentVolumeReclaimPolicy: policy, local: { path: `/mnt/pool/pvc-${UUID}` }, claimRef: { namespace: 'app', name: 'data', uid: UUID } },
});

describe('a pool class\'s storage', () => {
  test('is claimed for the class, once, and the claim stands on every later pass', async () => {
    expect(await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED)).toEqual({ ok: true });
    expect(await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED)).toEqual({ ok: true });
    expect(record.get(FS)).toMatchObject({ dialect: 'pool', storageClass: 'local-pool', state: 'offered' });
  });

  test('is refused to a second pool class: two classes promising one filesystem\'s free space would promise it twice', async () => {
    await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED);
    expect(await pools.claimStorage('other-pool', 'fs:/sub@serial:disk/0001', '/mnt/other', CONFIGURED)).toEqual({
      ok: false, reason: expect.stringContaining('pool class "local-pool" draws on it'),
    });
  });

  test('is refused where a static volume on that filesystem is offered or used; a clean one (not offered) is no obstacle', async () => {
    await staticLine('fs:/vol1@serial:disk/0001', 'dirty');
    expect(await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED)).toEqual({
      ok: false, reason: expect.stringContaining('/mnt/disks/vol1 of class "local-disks" is on it (dirty)'),
    });
    await staticLine('fs:/vol1@serial:disk/0001', 'clean');
    expect(await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED)).toEqual({ ok: true });
  });

  test('once claimed, keeps a static class from offering any of it', async () => {
    await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED);
    expect(offerVerdict('fs:/vol1@serial:disk/0001', '/mnt/disks/vol1', record.entries(), (i) => record.get(i)))
      .toEqual({ kind: 'overlaps', other: expect.objectContaining({ identity: FS }) });
  });

  test('is refused when the class\'s volumes were made on other storage (its directory unmounted or replaced), until it is back', async () => {
    const OTHER = 'fs:/@serial:disk/0002';
    await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED);
    await pools.made({ volumeId: UUID, className: 'local-pool', hostPath: '/mnt/pool/v', pvName: 'v', claim: 'app/data', claimUid: UUID, reclaimPolicy: 'Delete' });
    expect(await pools.claimStorage('local-pool', OTHER, '/mnt/pool', CONFIGURED))
      .toEqual({ ok: false, reason: expect.stringContaining(`/mnt/pool is not on the storage the class's 1 volume(s) were made on (${FS}`) });
    expect(record.get(OTHER)).toBeUndefined();
    expect(await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED)).toEqual({ ok: true });
  });

  test('is given up by a class that found it unusable, unless the class has volumes on it', async () => {
    await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED);
    await pools.releaseUnusedStorage('local-pool');
    expect(record.get(FS)).toBeUndefined();
    expect(await pools.claimStorage('other-pool', FS, '/mnt/other', CONFIGURED)).toEqual({ ok: true });
    await pools.made({ volumeId: UUID, className: 'other-pool', hostPath: '/mnt/other/v', pvName: 'v', claim: 'app/data', claimUid: UUID, reclaimPolicy: 'Delete' });
    await pools.releaseUnusedStorage('other-pool');
    expect(record.get(FS)).toMatchObject({ storageClass: 'other-pool' });
  });

  test('held by a class no longer configured while its volumes are there: the refusal names them and says what an administrator does', async () => {
    await pools.claimStorage('old-pool', FS, '/mnt/pool', new Set(['old-pool']));
    await pools.made({ volumeId: UUID, className: 'old-pool', hostPath: '/mnt/pool/v', pvName: 'v', claim: 'app/data', claimUid: UUID, reclaimPolicy: 'Delete' });
    expect(await pools.claimStorage('local-pool', 'fs:/sub@serial:disk/0001', '/mnt/pool/sub', CONFIGURED)).toEqual({
      ok: false,
      reason: expect.stringMatching(/pool class "old-pool", no longer configured, keeps it while 1 volume\(s\) of it are there \(\/mnt\/pool\/v\).*volumes reclaim PATH/),
    });
  });

  test('moves to the class\'s new storage once no volume of its old one is left', async () => {
    const OTHER = 'fs:/@serial:disk/0002';
    await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED);
    expect(await pools.claimStorage('local-pool', OTHER, '/mnt/pool', CONFIGURED)).toEqual({ ok: true });
    expect(record.get(FS)).toBeUndefined();
    expect(record.get(OTHER)).toMatchObject({ dialect: 'pool', storageClass: 'local-pool' });
  });

  test('goes with its class once no volume of the class is left', async () => {
    await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED);
    await pools.made({ volumeId: UUID, className: 'local-pool', hostPath: '/mnt/pool/v', pvName: 'v', claim: 'app/data', claimUid: UUID, reclaimPolicy: 'Retain' });
    await pools.releaseStorage(new Set());
    expect(record.get(FS)).toBeDefined();
    await pools.destroyed(UUID);
    await pools.releaseStorage(new Set());
    expect(record.get(FS)).toBeUndefined();
  });
});

describe('a pool volume\'s line', () => {
  test('is written when the volume is made: a tenant\'s data, with its claim and its policy', async () => {
    await pools.made({ volumeId: UUID, className: 'local-pool', hostPath: '/mnt/pool/v', pvName: 'v', claim: 'app/data', claimUid: UUID, reclaimPolicy: 'Delete' });
    expect(record.get(poolLineIdentity(UUID))).toMatchObject({ state: 'dirty', dialect: 'pool', claim: 'app/data', claimUid: UUID, reclaimPolicy: 'Delete' });
  });

  test('follows the policy an administrator sets on the PV, and is made for a volume an older agent made', async () => {
    await pools.follow([{ volumeId: UUID, className: 'local-pool', hostPath: `/mnt/pool/pvc-${UUID}`, pv: pv('Delete') }]);
    expect(pools.line(UUID)).toMatchObject({ reclaimPolicy: 'Delete', claim: 'app/data', pvName: `pvc-${UUID}` });
    await pools.follow([{ volumeId: UUID, className: 'local-pool', hostPath: `/mnt/pool/pvc-${UUID}`, pv: pv('Retain') }]);
    expect(pools.line(UUID)).toMatchObject({ reclaimPolicy: 'Retain' });
  });

  test('says a volume is kept once its PV went under Retain, and goes when it is destroyed', async () => {
    await pools.follow([{ volumeId: UUID, className: 'local-pool', hostPath: `/mnt/pool/pvc-${UUID}`, pv: pv('Retain') }]);
    await pools.kept(UUID, 'Retain', 'kept: PV gone');
    expect(pools.line(UUID)).toMatchObject({ state: 'dirty', reclaimPolicy: 'Retain', reason: 'kept: PV gone' });
    await pools.destroyed(UUID);
    expect(pools.line(UUID)).toBeUndefined();
  });

  test('survives the process: another agent reading the record sees it', async () => {
    await pools.made({ volumeId: UUID, className: 'local-pool', hostPath: '/mnt/pool/v', pvName: 'v', claim: 'app/data', claimUid: UUID, reclaimPolicy: 'Retain' });
    expect(VolumeRecord.open(dir).record.get(poolLineIdentity(UUID))).toMatchObject({ reclaimPolicy: 'Retain' });
  });
});

describe('a snapshot\'s line', () => {
  const taking = {
    className: 'local-pool',
    name: 'snapshot-4b1f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b',
    hostPath: '/mnt/pool/snapshot-4b1f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b',
    content: 'snapcontent-4b1f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b',
    volumeSnapshot: 'app/nightly',
    volumeSnapshotUid: '4b1f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b',
    deletionPolicy: 'Delete',
    volumeMode: 'Filesystem' as const,
  };
  const SNAPSHOT_ID = '29458799-3268-4341-b94c-4eed9bf330a0';

  test('is written before the snapshot is taken, naming its content, and replaced by the snapshot\'s own once taken', async () => {
    await pools.taking(taking);
    expect(pools.snapshots()).toEqual([taking]);
    await pools.taken(taking, SNAPSHOT_ID);
    expect(pools.snapshots()).toEqual([{ ...taking, identity: SNAPSHOT_ID }]);
    expect(record.entries().filter((e) => e.identity.includes(taking.name) || e.identity.includes(SNAPSHOT_ID)).map((e) => e.state)).toEqual(['dirty']);
  });

  test('is never taken for a volume\'s: a backend hands out no volume identity for it, and a class with snapshots keeps its storage', async () => {
    await pools.claimStorage('local-pool', FS, '/mnt/pool', CONFIGURED);
    await pools.taken(taking, SNAPSHOT_ID);
    expect(pools.volumeIds('local-pool')).toEqual([]);
    await pools.releaseUnusedStorage('local-pool');
    await pools.releaseStorage(new Set());
    expect(record.get(FS)?.storageClass).toBe('local-pool');
  });

  test('goes when its snapshot is deleted', async () => {
    await pools.taking(taking);
    await pools.taken(taking, SNAPSHOT_ID);
    await pools.snapshotGone(taking.className, taking.name, SNAPSHOT_ID);
    expect(pools.snapshots()).toEqual([]);
  });
});
