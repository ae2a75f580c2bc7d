import { eventually, localPv, serverAndApi } from './fixtures';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { ObjectConflictError } from '../../../src/runtime/kube/errors';
import { addCleanupFinalizer, deletePersistentVolumeIfUnchanged, ensurePersistentVolume, removeCleanupFinalizer } from '../../../src/runtime/kube/pv-writes';
import { CLEANUP_FINALIZER } from '../../../src/runtime/well-known';
import { Kubernetes } from '../../support/kubernetes';

let server: Kubernetes;
let api: KubeApi;

beforeAll(async () => {
  ({ server, api } = await serverAndApi({}, { controllers: true }));
});

describe('ensurePersistentVolume', () => {
  test('creates a new PV', async () => {
    const result = await ensurePersistentVolume(api, localPv('pv-new', { node: 'n1' }));
    expect(result.created).toBe(true);
    expect(await server.get('v1', 'PersistentVolume', 'pv-new')).toBeDefined();
  });

  test('an existing PV of ours for the same path counts as success (a retried create)', async () => {
    const pv = localPv('pv-same', { node: 'n1', path: '/mnt/disks/a' });
    const first = await server.create(pv);
    const result = await ensurePersistentVolume(api, pv);
    expect(result).toMatchObject({ created: false, pv: { metadata: { uid: first.metadata!.uid } } });
  });

  test('an existing PV of ours for another path is a conflict naming both paths', async () => {
    await server.create(localPv('pv-other-path', { node: 'n1', path: '/mnt/disks/old' }));
    const err = await ensurePersistentVolume(api, localPv('pv-other-path', { node: 'n1', path: '/mnt/disks/new' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ObjectConflictError);
    expect((err as Error).message).toBe('PersistentVolume "pv-other-path" already exists for path "/mnt/disks/old" '
      + '(provisioned by "local-volume-provisioner-n1"); not creating it for path "/mnt/disks/new" (provisioned by "local-volume-provisioner-n1")');
  });

  test('an existing PV of another provisioner for the same path is a conflict', async () => {
    await server.create(localPv('pv-foreign', { node: 'n1', path: '/mnt/disks/f', provisioner: 'someone-else' }));
    await expect(ensurePersistentVolume(api, localPv('pv-foreign', { node: 'n1', path: '/mnt/disks/f' })))
      .rejects.toThrow('provisioned by "someone-else"');
  });

  test('a create that failed with 500 is not sent again by the client; the next pass\'s create makes exactly one PV', async () => {
    server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 500 });
    await expect(ensurePersistentVolume(api, localPv('pv-after-500', { node: 'n1' }))).rejects.toMatchObject({ code: 500 });
    const result = await ensurePersistentVolume(api, localPv('pv-after-500', { node: 'n1' }));
    expect(result.created).toBe(true);
    expect((await server.list('v1', 'PersistentVolume')).filter((p) => p.metadata.name === 'pv-after-500')).toHaveLength(1);
  });
});

describe('the cleanup finalizer', () => {
  test('is added only to the PV as it was read', async () => {
    const read = await server.create(localPv('pv-fin', { node: 'n1' }));
    await api.patchPersistentVolumeLabels('pv-fin', { tier: 'gold' });
    await expect(addCleanupFinalizer(api, read)).resolves.toBe('changed');
    const fresh = await server.get('v1', 'PersistentVolume', 'pv-fin');
    await expect(addCleanupFinalizer(api, fresh, { 'example.com/a': 'b' })).resolves.toMatchObject({ metadata: { name: 'pv-fin', finalizers: ['kubernetes.io/pv-protection', CLEANUP_FINALIZER] } });
    expect((await server.get('v1', 'PersistentVolume', 'pv-fin')).metadata).toMatchObject({
      finalizers: ['kubernetes.io/pv-protection', CLEANUP_FINALIZER], annotations: { 'example.com/a': 'b' },
    });
  });

  test('is removed from a PV being deleted even while other writers change it, and the PV goes', async () => {
    const pv = await server.create({ ...localPv('pv-held', { node: 'n1' }), metadata: { ...localPv('pv-held', { node: 'n1' }).metadata, finalizers: [CLEANUP_FINALIZER] } });
    await api.deletePersistentVolume('pv-held', pv.metadata!.uid!);
    expect((await server.get('v1', 'PersistentVolume', 'pv-held')).metadata.deletionTimestamp).toBeDefined();
    server.faults.failNext({ verb: 'patch', resource: 'persistentvolumes', code: 409 });
    await expect(removeCleanupFinalizer(api, 'pv-held', pv.metadata!.uid!)).resolves.toBe('done');
    await eventually(async () => await server.get('v1', 'PersistentVolume', 'pv-held') === undefined, 'PV gone');
  });

  test('is never removed from another PV of the same name', async () => {
    const old = await server.create({ ...localPv('pv-other', { node: 'n1' }), metadata: { ...localPv('pv-other', { node: 'n1' }).metadata, finalizers: [CLEANUP_FINALIZER] } });
    await expect(removeCleanupFinalizer(api, 'pv-other', 'another-uid')).resolves.toBe('not-found');
    expect((await server.get('v1', 'PersistentVolume', 'pv-other')).metadata.uid).toBe(old.metadata!.uid);
    expect((await server.get('v1', 'PersistentVolume', 'pv-other')).metadata.finalizers).toContain(CLEANUP_FINALIZER);
  });
});

describe('deletePersistentVolumeIfUnchanged', () => {
  test('deletes the PV whose UID matches', async () => {
    const pv = await server.create(localPv('pv-del', { node: 'n1' }));
    await expect(deletePersistentVolumeIfUnchanged(api, 'pv-del', pv.metadata!.uid!)).resolves.toBe('deleted');
    // Gone once the PV protection controller has taken its finalizer off.
    await eventually(async () => await server.get('v1', 'PersistentVolume', 'pv-del') === undefined, 'the PV is gone');
  });

  test('refuses a PV recreated under the same name, and leaves it', async () => {
    const old = await server.create(localPv('pv-recreated', { node: 'n1' }));
    await deletePersistentVolumeIfUnchanged(api, 'pv-recreated', old.metadata!.uid!);
    await eventually(async () => await server.get('v1', 'PersistentVolume', 'pv-recreated') === undefined, 'the PV is gone');
    const fresh = await server.create(localPv('pv-recreated', { node: 'n1' }));
    await expect(deletePersistentVolumeIfUnchanged(api, 'pv-recreated', old.metadata!.uid!)).resolves.toBe('changed');
    expect((await server.get('v1', 'PersistentVolume', 'pv-recreated')).metadata.uid).toBe(fresh.metadata!.uid);
  });

  test('refuses a PV that changed since it was read (e.g. a claim bound it), and leaves it', async () => {
    const read = await server.create(localPv('pv-changed', { node: 'n1' }));
    await api.patchPersistentVolumeLabels('pv-changed', { tier: 'gold' });
    await expect(deletePersistentVolumeIfUnchanged(api, 'pv-changed', read.metadata!.uid!, read.metadata!.resourceVersion)).resolves.toBe('changed');
    expect(await server.get('v1', 'PersistentVolume', 'pv-changed')).toBeDefined();
  });

  test('a PV already gone is reported as not-found', async () => {
    await expect(deletePersistentVolumeIfUnchanged(api, 'pv-never', 'some-uid')).resolves.toBe('not-found');
  });
});
