import { storageClassFields } from '../../../src/runtime/pv';

describe('storageClassFields', () => {
  test('a StorageClass without reclaimPolicy means Delete', () => {
    expect(storageClassFields('fast', { provisioner: 'kubernetes.io/no-provisioner' })).toEqual({
      ok: true,
      reclaimPolicy: 'Delete',
      mountOptions: [],
    });
  });

  test('takes Retain and the mount options', () => {
    expect(
      storageClassFields('fast', { provisioner: 'kubernetes.io/no-provisioner', reclaimPolicy: 'Retain', mountOptions: ['noatime'] }),
    ).toEqual({ ok: true, reclaimPolicy: 'Retain', mountOptions: ['noatime'] });
  });

  test('refuses Recycle, naming the class and the supported policies', () => {
    expect(storageClassFields('fast', { provisioner: 'x', reclaimPolicy: 'Recycle' })).toEqual({
      ok: false,
      message: 'StorageClass "fast" has reclaimPolicy "Recycle"; local volumes support Delete and Retain',
    });
  });

  test('says that a missing StorageClass must be created', () => {
    const result = storageClassFields('fast', undefined);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toMatch(/^StorageClass "fast" does not exist/);
  });
});
