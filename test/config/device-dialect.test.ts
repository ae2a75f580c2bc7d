import { errorsOf, valid, warningsOf } from './helpers';
import { compileDeviceNameFilter, parseDeviceSpec, serializeDeviceSpec } from '../../src/config';

const FS_SPEC = { storageClassName: 'local-ssd', volumeMode: 'Filesystem', fsType: 'ext4', deviceDir: '/dev/disk/by-path/', deviceNameFilter: '.*' };
const BLOCK_SPEC = { storageClassName: 'local-ssd', volumeMode: 'Block', deviceDir: '/dev/disk/by-path/', deviceNameFilter: 'sd[ab]' };

describe('device dialect: valid PV spec ConfigMaps', () => {
  test('a Filesystem spec is read with the extension defaults', () => {
    expect(valid(parseDeviceSpec(FS_SPEC))).toEqual({
      storageClassName: 'local-ssd',
      volumeMode: 'Filesystem',
      fsType: 'ext4',
      deviceDir: '/dev/disk/by-path/',
      deviceNameFilter: '.*',
      reclaimPolicy: 'Delete',
      wipeDevicesHoldingData: false,
      wipe: 'full',
    });
  });

  test.each(['ext4', 'xfs', 'btrfs'])('fsType %s is accepted', (fsType) => {
    expect(valid(parseDeviceSpec({ ...FS_SPEC, fsType })).fsType).toBe(fsType);
  });

  test('a Block spec has no fsType', () => {
    const result = parseDeviceSpec(BLOCK_SPEC);
    expect(valid(result)).toMatchObject({ volumeMode: 'Block', fsType: '' });
    expect(warningsOf(result)).toEqual([]);
  });

  test('values are plain strings, never YAML: a filter like sd[ab] stays text', () => {
    expect(valid(parseDeviceSpec(BLOCK_SPEC)).deviceNameFilter).toBe('sd[ab]');
    expect(valid(parseDeviceSpec({ ...BLOCK_SPEC, deviceNameFilter: '[a, b]: yes' })).deviceNameFilter).toBe('[a, b]: yes');
  });

  test('a redundant fsType with Block is accepted with a warning and resolved to ""', () => {
    const result = parseDeviceSpec({ ...BLOCK_SPEC, fsType: 'ext4' });
    expect(valid(result).fsType).toBe('');
    expect(warningsOf(result)).toEqual(['fsType: "ext4" is ignored with volumeMode Block (a raw block volume has no filesystem)']);
  });

  test('a missing storageClassName defaults to local-storage with a warning', () => {
    const { storageClassName: _, ...rest } = FS_SPEC;
    const result = parseDeviceSpec(rest);
    expect(valid(result).storageClassName).toBe('local-storage');
    expect(warningsOf(result)).toEqual(['storageClassName: is missing; using "local-storage"']);
  });

  test('an empty deviceNameFilter is a pattern, not a missing key: it selects every device, as in Go', () => {
    const result = parseDeviceSpec({ ...FS_SPEC, deviceNameFilter: '' });
    expect(valid(result).deviceNameFilter).toBe('');
    expect(warningsOf(result)).toEqual([]);
  });

  test('unknown keys are a warning', () => {
    const result = parseDeviceSpec({ ...FS_SPEC, deviceFilter: 'x', comment: 'hello' });
    valid(result);
    expect(warningsOf(result)).toEqual([
      'deviceFilter: is not a known key and is ignored; did you mean deviceNameFilter?',
      'comment: is not a known key and is ignored',
    ]);
  });

  test('keys match exactly, as upstream reads them', () => {
    const result = parseDeviceSpec({ ...FS_SPEC, devicedir: '/dev' });
    expect(valid(result).deviceDir).toBe('/dev/disk/by-path/');
    expect(warningsOf(result)).toEqual(['devicedir: is not a known key and is ignored; did you mean deviceDir?']);
  });

  test('the extension keys are read', () => {
    expect(valid(parseDeviceSpec({ ...FS_SPEC, reclaimPolicy: 'Retain', wipeDevicesHoldingData: 'true' })))
      .toMatchObject({ reclaimPolicy: 'Retain', wipeDevicesHoldingData: true });
  });

  test('without wipe, a device is zeroed whole', () => {
    expect(valid(parseDeviceSpec(BLOCK_SPEC)).wipe).toBe('full');
  });

  test.each(['full', 'upstream-ranges'])('wipe: "%s" is read as written', (wipe) => {
    expect(valid(parseDeviceSpec({ ...BLOCK_SPEC, wipe })).wipe).toBe(wipe);
  });

  test('an empty wipe means the default, as every empty value does', () => {
    expect(valid(parseDeviceSpec({ ...BLOCK_SPEC, wipe: '' })).wipe).toBe('full');
  });
});

describe('device dialect: invalid PV spec ConfigMaps', () => {
  test('a bad volumeMode is an error', () => {
    expect(errorsOf(parseDeviceSpec({ ...FS_SPEC, volumeMode: 'filesystem' }))).toEqual(['volumeMode: "filesystem" is not one of Filesystem, Block']);
  });

  test('fsType outside ext4/xfs/btrfs is an error', () => {
    expect(errorsOf(parseDeviceSpec({ ...FS_SPEC, fsType: 'ntfs' }))).toEqual(['fsType: "ntfs" is not one of ext4, xfs, btrfs']);
  });

  test('a missing fsType with Filesystem is an error', () => {
    const { fsType: _, ...rest } = FS_SPEC;
    expect(errorsOf(parseDeviceSpec(rest))).toEqual(['fsType: is required (one of ext4, xfs, btrfs, with volumeMode Filesystem)']);
  });

  test('a relative deviceDir is an error', () => {
    expect(errorsOf(parseDeviceSpec({ ...FS_SPEC, deviceDir: 'dev/disk' }))).toEqual(['deviceDir: "dev/disk" is not an absolute path']);
  });

  test('a bad regular expression in deviceNameFilter is an error', () => {
    expect(errorsOf(parseDeviceSpec({ ...FS_SPEC, deviceNameFilter: '(' }))).toEqual(['deviceNameFilter: "(" is not a valid regular expression: error parsing regexp: missing closing ): `(`']);
  });

  test('a missing deviceNameFilter is an error, not "match everything"', () => {
    const { deviceNameFilter: _, ...rest } = FS_SPEC;
    expect(errorsOf(parseDeviceSpec(rest))).toEqual(['deviceNameFilter: is required (a regular expression over device names; ".*" selects every device)']);
  });

  test('each required key missing is reported, all at once', () => {
    expect(errorsOf(parseDeviceSpec({}))).toEqual([
      'volumeMode: is required (one of Filesystem, Block)',
      'deviceDir: is required (the absolute directory searched for devices, e.g. /dev/disk/by-path)',
      'deviceNameFilter: is required (a regular expression over device names; ".*" selects every device)',
    ]);
  });

  test('a bad fsType is reported alongside a bad volumeMode', () => {
    expect(errorsOf(parseDeviceSpec({ ...FS_SPEC, volumeMode: 'fs', fsType: 'ntfs' }))).toEqual([
      'volumeMode: "fs" is not one of Filesystem, Block',
      'fsType: "ntfs" is not one of ext4, xfs, btrfs',
    ]);
  });

  test('an empty storageClassName is an error naming the key, never replaced by local-storage', () => {
    expect(errorsOf(parseDeviceSpec({ ...FS_SPEC, storageClassName: '' }))).toEqual([
      'storageClassName: is empty: PVs without a StorageClass bind at once, before their Pod is scheduled, to any claim in the cluster '
      + 'that asks for no class; name a StorageClass (the device provisioner used "local-storage")',
    ]);
  });

  test('an empty value counts as missing', () => {
    expect(errorsOf(parseDeviceSpec({ ...FS_SPEC, deviceDir: '' }))).toEqual(['deviceDir: is required (the absolute directory searched for devices, e.g. /dev/disk/by-path)']);
  });

  test('several problems are reported at once', () => {
    expect(errorsOf(parseDeviceSpec({ storageClassName: 'Local_Storage', volumeMode: 'Filesystem', fsType: 'ntfs', deviceDir: 'dev', deviceNameFilter: '[', reclaimPolicy: 'Recycle', wipeDevicesHoldingData: 'sometimes' }))).toEqual([
      expect.stringMatching(/^storageClassName: "Local_Storage" is not a valid StorageClass name/),
      'fsType: "ntfs" is not one of ext4, xfs, btrfs',
      'deviceDir: "dev" is not an absolute path',
      'deviceNameFilter: "[" is not a valid regular expression: error parsing regexp: missing closing ]: `[`',
      'reclaimPolicy: "Recycle" is not one of Delete, Retain',
      'wipeDevicesHoldingData: "sometimes" is not a boolean (true/false, yes/no, on/off)',
    ]);
  });

  test.each(['partial', 'Full', 'upstream'])('wipe: "%s" is refused, naming the key and the values it takes', (wipe) => {
    expect(errorsOf(parseDeviceSpec({ ...BLOCK_SPEC, wipe }))).toEqual([`wipe: "${wipe}" is not one of full, upstream-ranges`]);
  });
});

describe('device name filters', () => {
  const names = ['sda', 'sdb', 'sdc', 'nvme0n1', 'loop0'];

  test.each([
    ['.*', names],
    ['sd[ab]', ['sda', 'sdb']],
    ['^nvme', ['nvme0n1']],
    ['a', ['sda']],
    ['(?i)SD[A]', ['sda']],
    ['^(?P<kind>sd)c$', ['sdc']],
    ['^s(?i)D[AB]', ['sda', 'sdb']],
    ['(n(?i)VME)0', ['nvme0n1']],
    ['\\A[]l]oop0\\z', ['loop0']],
  ])('%s selects %j (unanchored, as Go MatchString)', (filter, expected) => {
    const re = compileDeviceNameFilter(filter);
    expect(names.filter((n) => re.test(n))).toEqual(expected);
  });
});

describe('device dialect serialization', () => {
  test('writes plain strings, fsType only when there is one', () => {
    expect(serializeDeviceSpec(valid(parseDeviceSpec(BLOCK_SPEC)))).toEqual({
      storageClassName: 'local-ssd',
      volumeMode: 'Block',
      deviceDir: '/dev/disk/by-path/',
      deviceNameFilter: 'sd[ab]',
      reclaimPolicy: 'Delete',
      wipeDevicesHoldingData: 'false',
      wipe: 'full',
    });
  });
});
