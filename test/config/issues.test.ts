import { formatIssue } from '../../src/config';

describe('formatIssue', () => {
  test('puts the dotted path before the message', () => {
    expect(formatIssue({ path: 'storageClassMap.fast-disks.volumeMode', message: '"block" is not one of Filesystem, Block' }))
      .toBe('storageClassMap.fast-disks.volumeMode: "block" is not one of Filesystem, Block');
  });

  test('gives the message alone when the issue is about the whole config', () => {
    expect(formatIssue({ path: '', message: 'expected a map, got a list' })).toBe('expected a map, got a list');
  });
});
