import { jsonPatch, mergePatch, patchSchemaFor, strategicMergePatch } from './patch';
import { ApiError } from './status';

const deployment = {
  metadata: { name: 'd', finalizers: ['a'] },
  spec: {
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1 } },
    template: {
      spec: {
        containers: [
          { name: 'app', image: 'x:1', env: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }], ports: [{ containerPort: 80 }] },
          { name: 'side', image: 'y:1' },
        ],
        volumes: [{ name: 'data', hostPath: { path: '/a' } }],
        tolerations: [{ key: 'k', operator: 'Exists' }],
      },
    },
  },
};
const smp = (patch: unknown) => strategicMergePatch(structuredClone(deployment), patch, patchSchemaFor('Deployment'));

describe('strategic merge patch', () => {
  test('list elements merge by their merge key', () => {
    const out = smp({ spec: { template: { spec: { containers: [{ name: 'app', env: [{ name: 'B', value: '3' }] }] } } } });
    expect(out.spec.template.spec.containers[0].env).toEqual([{ name: 'A', value: '1' }, { name: 'B', value: '3' }]);
    expect(out.spec.template.spec.containers[1]).toEqual({ name: 'side', image: 'y:1' });
  });

  test('$patch: delete removes one element', () => {
    const out = smp({ spec: { template: { spec: { containers: [{ name: 'side', $patch: 'delete' }] } } } });
    expect(out.spec.template.spec.containers.map((c: any) => c.name)).toEqual(['app']);
  });

  test('$setElementOrder orders the merged list', () => {
    const out = smp({ spec: { template: { spec: { '$setElementOrder/containers': [{ name: 'side' }, { name: 'app' }], 'containers': [{ name: 'side', image: 'y:2' }] } } } });
    expect(out.spec.template.spec.containers.map((c: any) => `${c.name}=${c.image}`)).toEqual(['side=y:2', 'app=x:1']);
  });

  test('lists without a patch strategy are replaced', () => {
    const out = smp({ spec: { template: { spec: { tolerations: [{ key: 'other', operator: 'Exists' }] } } } });
    expect(out.spec.template.spec.tolerations).toEqual([{ key: 'other', operator: 'Exists' }]);
  });

  test('finalizers merge as a set and $deleteFromPrimitiveList removes from it', () => {
    expect(smp({ metadata: { finalizers: ['b', 'a'] } }).metadata.finalizers).toEqual(['a', 'b']);
    expect(smp({ metadata: { '$deleteFromPrimitiveList/finalizers': ['a'] } }).metadata.finalizers).toEqual([]);
  });

  test('$retainKeys drops the keys of a union the patch does not name', () => {
    const out = smp({ spec: { strategy: { $retainKeys: ['type'], type: 'Recreate', rollingUpdate: null } } });
    expect(out.spec.strategy).toEqual({ type: 'Recreate' });
    const vol = smp({ spec: { template: { spec: { volumes: [{ name: 'data', $retainKeys: ['emptyDir', 'name'], emptyDir: {} }] } } } });
    expect(vol.spec.template.spec.volumes).toEqual([{ name: 'data', emptyDir: {} }]);
  });

  test('null deletes a field and $patch: replace replaces a map', () => {
    expect(smp({ spec: { strategy: null } }).spec.strategy).toBeUndefined();
    expect(smp({ spec: { strategy: { $patch: 'replace', type: 'Recreate' } } }).spec.strategy).toEqual({ type: 'Recreate' });
  });
});

describe('JSON merge patch', () => {
  test('merges maps, replaces lists and deletes with null', () => {
    expect(mergePatch({ a: { b: 1, c: 2 }, l: [1, 2] }, { a: { c: null, d: 3 }, l: [3] })).toEqual({ a: { b: 1, d: 3 }, l: [3] });
  });
});

describe('JSON patch', () => {
  test('applies add, replace, remove, move, copy and test in order', () => {
    const doc = { metadata: { labels: { a: '1' } }, list: [1, 2] };
    const out = jsonPatch(doc, [
      { op: 'add', path: '/metadata/labels/b', value: '2' },
      { op: 'replace', path: '/metadata/labels/a', value: 'x' },
      { op: 'add', path: '/list/-', value: 3 },
      { op: 'remove', path: '/list/0' },
      { op: 'copy', from: '/metadata/labels/b', path: '/metadata/labels/c' },
      { op: 'move', from: '/metadata/labels/c', path: '/metadata/labels/d~1e' },
      { op: 'test', path: '/list', value: [2, 3] },
    ]);
    expect(out).toEqual({ metadata: { labels: { 'a': 'x', 'b': '2', 'd/e': '2' } }, list: [2, 3] });
    expect(doc.list).toEqual([1, 2]);
  });

  test('a failed test operation is 422', () => {
    expect(() => jsonPatch({ a: 1 }, [{ op: 'test', path: '/a', value: 2 }])).toThrow(ApiError);
    try {
      jsonPatch({ a: 1 }, [{ op: 'test', path: '/a', value: 2 }]);
    } catch (e) {
      expect((e as ApiError).code).toBe(422);
    }
  });

  test('removing a missing path is 422', () => {
    expect(() => jsonPatch({}, [{ op: 'remove', path: '/nope' }])).toThrow(/missing/);
  });
});
