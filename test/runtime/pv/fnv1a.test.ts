import fc from 'fast-check';
import { referenceFnv1a32 } from './reference-fnv1a';
import { fnv1a32 } from '../../../src/runtime/pv';


describe('fnv1a32', () => {
  test.each([
    ['', 0x811c9dc5],
    ['a', 0xe40c292c],
    ['foobar', 0xbf9cf968],
  ])('of %j is the published test vector', (input, expected) => {
    expect(fnv1a32(input)).toBe(expected);
  });

  test('agrees with a reference implementation on any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        expect(fnv1a32(bytes)).toBe(referenceFnv1a32(bytes));
      }),
    );
  });

  test('hashes a string as its UTF-8 bytes, as Go hashes []byte(s)', () => {
    expect(fnv1a32('disque-é')).toBe(referenceFnv1a32(Buffer.from('disque-é', 'utf8')));
  });
});
