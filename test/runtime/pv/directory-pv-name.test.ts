import { referenceFnv1a32 } from './reference-fnv1a';
import { directoryPVName } from '../../../src/runtime/pv';


describe('directoryPVName', () => {
  test('is local-pv- and the hex FNV-1a of entry + node + class, as the Go provisioner names PVs', () => {
    const expected = `local-pv-${referenceFnv1a32('vol1node1local-storage').toString(16)}`;
    expect(directoryPVName('vol1', 'node1', 'local-storage')).toBe(expected);
  });

  test('hashes the plain concatenation, so the parts are not separated', () => {
    expect(directoryPVName('vol1', 'node1', 'fast')).toBe(directoryPVName('vol1no', 'de1', 'fast'));
  });

  test('differs between classes for the same entry on the same node', () => {
    expect(directoryPVName('vol1', 'node1', 'fast')).not.toBe(directoryPVName('vol1', 'node1', 'slow'));
  });

  test('does not zero-pad a hash with leading zero digits', () => {
    // Find an entry whose hash has fewer than 8 hex digits, with the reference hash.
    let entry = '';
    for (let i = 0; ; i++) {
      if (referenceFnv1a32(`vol${i}node1fast`) < 0x10000000) {
        entry = `vol${i}`;
        break;
      }
    }
    const name = directoryPVName(entry, 'node1', 'fast');
    expect(name).toMatch(/^local-pv-[0-9a-f]{1,7}$/);
    expect(name).toBe(`local-pv-${referenceFnv1a32(`${entry}node1fast`).toString(16)}`);
  });
});
