import { provisionerName } from '../../../src/runtime/pv';

describe('provisionerName', () => {
  test('is local-volume-provisioner-<node>-<uid> by default', () => {
    expect(provisionerName('node1', '7f3c-11', false)).toBe('local-volume-provisioner-node1-7f3c-11');
  });

  test('is local-volume-provisioner-<node> with useNodeNameOnly', () => {
    expect(provisionerName('node1', '7f3c-11', true)).toBe('local-volume-provisioner-node1');
  });

  test('needs no UID with useNodeNameOnly', () => {
    expect(provisionerName('node1', '', true)).toBe('local-volume-provisioner-node1');
  });

  test('refuses an empty UID otherwise, saying what to set', () => {
    expect(() => provisionerName('node1', '', false)).toThrow(/useNodeNameOnly/);
  });
});
