import { POOL_PROVISIONER } from '../../../src/config';
import type { VolumeSnapshotContent } from '../../../src/runtime/kube/snapshot-objects';
import { decideContent, isOurContent } from '../../../src/runtime/snapshots/content-decisions';
import { parseSnapshotHandle, snapshotHandle } from '../../../src/runtime/snapshots/snapshot-handle';

const FINALIZER = 'snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection';
const BEING_DELETED = 'snapshot.storage.kubernetes.io/volumesnapshot-being-deleted';

function content(change: { deleting?: boolean; annotations?: Record<string, string>; policy?: 'Delete' | 'Retain'; ready?: boolean; refUid?: string } = {})
  : VolumeSnapshotContent {
  return {
    metadata: {
      name: 'snapcontent-1',
      finalizers: [FINALIZER],
      ...change.annotations ? { annotations: change.annotations } : {},
      ...change.deleting ? { deletionTimestamp: new Date() } : {},
    },
    spec: {
      driver: POOL_PROVISIONER,
      deletionPolicy: change.policy ?? 'Delete',
      source: { volumeHandle: 'fc4dcb07-2fde-2a43-9d14-f06589f79398' },
      volumeSnapshotRef: { namespace: 'app', name: 'snap', uid: change.refUid ?? '4b1f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b' },
    },
    ...change.ready === undefined ? {} : { status: { readyToUse: change.ready } },
  };
}

describe('what the agent does with a VolumeSnapshotContent', () => {
  test('one of its driver taken of a volume is its to handle; one of another driver, or imported by its handle, is not', () => {
    expect(isOurContent(content())).toBe(true);
    expect(isOurContent({ ...content(), spec: { ...content().spec, driver: 'other.csi' } })).toBe(false);
    expect(isOurContent({ ...content(), spec: { ...content().spec, source: { snapshotHandle: 'n/x' } } })).toBe(false);
  });

  test('its snapshot is taken until the content is ready to use, then left alone', () => {
    expect(decideContent(content())).toBe('take');
    expect(decideContent(content({ ready: false }))).toBe('take');
    expect(decideContent(content({ ready: true }))).toBe('none');
  });

  test('deleted for its VolumeSnapshot (marked being-deleted), its snapshot goes under policy Delete and stays under Retain', () => {
    expect(decideContent(content({ deleting: true, annotations: { [BEING_DELETED]: 'yes' } }))).toBe('delete');
    expect(decideContent(content({ deleting: true, annotations: { [BEING_DELETED]: 'yes' }, policy: 'Retain' }))).toBe('let-go');
  });

  test('deleted while its VolumeSnapshot still binds it (not marked), it waits for the snapshot controller, as the sidecar does', () => {
    expect(decideContent(content({ deleting: true }))).toBe('none');
  });

  test('deleted with no VolumeSnapshot, its snapshot goes', () => {
    expect(decideContent(content({ deleting: true, refUid: '' }))).toBe('delete');
  });
});

describe('a snapshot\'s handle', () => {
  test('names its node and its identity there, and is read back', () => {
    expect(snapshotHandle('worker-1', 'fc4dcb07')).toBe('worker-1/fc4dcb07');
    expect(parseSnapshotHandle('worker-1/fc4dcb07')).toEqual({ node: 'worker-1', identity: 'fc4dcb07' });
  });

  test('a handle of another form is not the agent\'s', () => {
    for (const other of ['fc4dcb07', '/fc4dcb07', 'worker-1/', 'a/b/c']) expect(parseSnapshotHandle(other)).toBeUndefined();
  });
});
