import { describeSignatures, parseWipefsJson } from '../../../src/runtime/volume';

describe('parseWipefsJson', () => {
  test('an empty signature list means no signature', () => {
    expect(parseWipefsJson('{\n   "signatures": [\n\n   ]\n}\n')).toEqual([]);
  });

  test('empty output (older wipefs on a blank device) means no signature', () => {
    expect(parseWipefsJson('')).toEqual([]);
  });

  test('reads type, usage, hex offset, label and uuid of each signature', () => {
    const out = JSON.stringify({
      signatures: [
        { device: 'loop0', offset: '0x438', type: 'ext4', uuid: 'abc', label: 'data', usage: 'filesystem' },
        { device: 'loop0', offset: '0x1fe', type: 'PMBR', uuid: null, label: null, usage: 'partition-table' },
      ],
    });
    expect(parseWipefsJson(out)).toEqual([
      { type: 'ext4', usage: 'filesystem', offset: 0x438, label: 'data', uuid: 'abc' },
      { type: 'PMBR', usage: 'partition-table', offset: 0x1fe },
    ]);
  });

  test('output without a signatures array is an error', () => {
    expect(() => parseWipefsJson('{"devices": []}')).toThrow(/signatures/);
  });

  test('an entry without a type is an error', () => {
    expect(() => parseWipefsJson('{"signatures": [{"offset": "0x0"}]}')).toThrow(/unexpected signature entry/);
  });
});

describe('describeSignatures', () => {
  test('names each signature with its usage, offset and label', () => {
    expect(
      describeSignatures([
        { type: 'gpt', usage: 'partition-table', offset: 0x200 },
        { type: 'ext4', usage: 'filesystem', offset: 0x438, label: 'data' },
      ]),
    ).toBe('gpt partition-table at 0x200, ext4 filesystem at 0x438 (label "data")');
  });
});
