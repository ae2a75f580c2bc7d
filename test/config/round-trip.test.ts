import * as path from 'node:path';
import fc from 'fast-check';
import {
  ACCESS_MODES, ClassConfig, DEVICE_FS_TYPES, DEVICE_WIPES, DeviceSpecConfig, NodeSelectorRequirement, NodeSelectorTerm,
  parseDeviceSpec, parseProvisionerConfig, ProvisionerConfig, RECLAIM_POLICIES, resolveDeviceSpec,
  resolveProvisionerConfig, serializeDeviceSpec, serializeProvisionerConfig, TAINT_EFFECTS, Toleration,
} from '../../src/config';

/*
 * parse(serialize(c)) equals c for every valid c. The arbitraries build only valid
 * configs, but with the values most likely to break a YAML round trip: strings
 * YAML 1.1 would read as booleans, numbers, nulls or timestamps, quotes, colons,
 * '#', leading spaces, control and non-ASCII characters, class names like "true".
 */

/** Configs are compared with toStrictEqual, which tells null-prototype objects apart. */
const PLAIN = { noNullPrototype: true } as const;

const yamlTraps = fc.constantFrom('yes', 'no', 'on', 'off', 'y', 'true', 'null', '~', '0777', '0x1f', '1_000', '1:20', '.inf', '-.5', '2001-12-14',
  '', ' ', '#', '- x', 'a: b', '"', "'", '\\', '{', '[', '&a', '*a', '!tag', '%', '@', '`', '\t', '\n', '\r\n', '\u0085', '\u2028', '\ufeff', 'é', '☺', '𝄞');
/** Any text without NUL (no path or argv can hold it), biased to YAML traps. */
const oddString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !s.includes('\0')),
  fc.array(yamlTraps, { maxLength: 3 }).map((parts) => parts.join('')),
);
const absolutePath = fc.array(oddString, { minLength: 1, maxLength: 3 }).map((parts) => `/${parts.join('/')}`);

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/);
const dnsSubdomain = fc.oneof(
  fc.array(dnsLabel, { minLength: 1, maxLength: 3 }).map((labels) => labels.join('.')),
  fc.constantFrom('true', 'yes', 'null', '123', '0777', '1e3', 'on', '0o17', '0x1f', '1-0'),
);
const labelName = fc.stringMatching(/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?$/);
const qualifiedName = fc.tuple(fc.option(dnsSubdomain, { nil: undefined }), labelName)
  .map(([prefix, name]) => (prefix === undefined ? name : `${prefix}/${name}`));
const labelValue = fc.oneof(fc.constant(''), labelName, fc.constantFrom('yes', 'no', 'true', '0777', '1e3', 'null'));
const durationMs = fc.oneof(fc.nat({ max: 1_000_000_000_000 }), fc.constantFrom(0, 1, 999, 1_000, 300_000, 5_400_000));

const globPiece = fc.oneof(
  fc.constantFrom('*', '?', '[a-z]', '[^x]', '[\\]a]', '[\\-x]', '\\*', '\\[', 'sd', 'nvme', '.', '-', ' ', 'é', '[α-ω]'),
  fc.stringMatching(/^[a-zA-Z0-9_.:+=@-]{1,4}$/),
);
const glob = fc.array(globPiece, { minLength: 1, maxLength: 4 }).map((pieces) => pieces.join(''));
const namePattern = fc.array(glob, { minLength: 1, maxLength: 3 }).map((globs) => globs.join(','));

const requirement: fc.Arbitrary<NodeSelectorRequirement> = fc.oneof(
  fc.record({ key: qualifiedName, operator: fc.constantFrom('In' as const, 'NotIn' as const), values: fc.array(oddString, { minLength: 1, maxLength: 3 }) }, PLAIN),
  fc.record({ key: qualifiedName, operator: fc.constantFrom('Exists' as const, 'DoesNotExist' as const), values: fc.constant([] as string[]) }, { requiredKeys: ['key', 'operator'], noNullPrototype: true }),
  fc.record({ key: qualifiedName, operator: fc.constantFrom('Gt' as const, 'Lt' as const), values: fc.integer().map((n) => [String(n)]) }, PLAIN),
);
const fieldRequirement: fc.Arbitrary<NodeSelectorRequirement> = fc.record({
  key: fc.constant('metadata.name'),
  operator: fc.constantFrom('In' as const, 'NotIn' as const),
  values: oddString.map((v) => [v]),
}, PLAIN);
const selectorTerm: fc.Arbitrary<NodeSelectorTerm> = fc.record(
  { matchExpressions: fc.array(requirement, { maxLength: 3 }), matchFields: fc.array(fieldRequirement, { maxLength: 2 }) },
  { requiredKeys: [], noNullPrototype: true },
);

const toleration: fc.Arbitrary<Toleration> = fc.oneof(
  fc.record({ operator: fc.constant('Exists' as const), effect: fc.constantFrom(...TAINT_EFFECTS) }, { requiredKeys: ['operator'], noNullPrototype: true }),
  fc.record({ key: qualifiedName, operator: fc.constant('Equal' as const), value: labelValue, effect: fc.constantFrom('NoSchedule' as const, 'PreferNoSchedule' as const) },
    { requiredKeys: ['key'], noNullPrototype: true }),
  fc.record({ key: qualifiedName, operator: fc.constant('Exists' as const), effect: fc.constant('NoExecute' as const), tolerationSeconds: fc.integer() },
    { requiredKeys: ['key', 'operator', 'effect'], noNullPrototype: true }),
);

const classConfig: fc.Arbitrary<ClassConfig> = fc.record({
  hostDir: absolutePath,
  mountDir: absolutePath,
  blockCleanerCommand: fc.tuple(oddString.filter((s) => s !== ''), fc.array(oddString, { maxLength: 3 })).map(([program, args]) => [program, ...args]),
  volumeMode: fc.constantFrom('Filesystem' as const, 'Block' as const),
  accessMode: fc.constantFrom(...ACCESS_MODES),
  fsType: oddString,
  namePattern,
  selector: fc.array(selectorTerm, { maxLength: 3 }),
}, PLAIN).map((c) => (c.volumeMode === 'Block' ? { ...c, fsType: '' } : c));

const distinctMountDirs = (classes: Record<string, ClassConfig>) => {
  const dirs = Object.values(classes).map((c) => path.posix.normalize(c.mountDir).replace(/(.)\/$/, '$1'));
  return new Set(dirs).size === dirs.length;
};

const provisionerConfig: fc.Arbitrary<ProvisionerConfig> = fc.record({
  storageClassMap: fc.dictionary(dnsSubdomain, classConfig, { maxKeys: 3, noNullPrototype: true }).filter(distinctMountDirs),
  nodeLabelsForPV: fc.array(qualifiedName, { maxLength: 3 }),
  labelsForPV: fc.dictionary(qualifiedName, labelValue, { maxKeys: 3, noNullPrototype: true }),
  useAlphaAPI: fc.boolean(),
  useJobForCleaning: fc.boolean(),
  jobTolerations: fc.array(toleration, { maxLength: 3 }),
  minResyncPeriod: durationMs,
  useNodeNameOnly: fc.boolean(),
  setPVOwnerRef: fc.boolean(),
  removeNodeNotReadyTaint: fc.boolean(),
  provisionerNotReadyNodeTaintKey: fc.oneof(fc.constant(''), qualifiedName),
  cleanupTimeout: durationMs,
  cleanupStallTimeout: durationMs,
  maxConcurrentCleanups: fc.integer({ min: 1, max: 1000 }),
  missingVolumeGracePeriod: durationMs,
  deleteMissingReleasedVolumes: fc.boolean(),
}, PLAIN).map((c) => (c.provisionerNotReadyNodeTaintKey === '' ? { ...c, removeNodeNotReadyTaint: false } : c));

const regexSpecial = /[.*+?^${}()|[\]\\/-]/g;
const deviceSpec: fc.Arbitrary<DeviceSpecConfig> = fc.record({
  storageClassName: dnsSubdomain,
  volumeMode: fc.constantFrom('Filesystem' as const, 'Block' as const),
  fsType: fc.constantFrom(...DEVICE_FS_TYPES),
  deviceDir: absolutePath,
  deviceNameFilter: fc.oneof(
    fc.constantFrom('.*', 'sd[ab]', '^nvme', '^(?i)SD', '(?i)^loop[0-9]+$', 'pci-0000:3c:00\\.0-sas-.*', '(?P<n>sd)x'),
    oddString.map((s) => s.replace(regexSpecial, '\\$&')),
  ),
  reclaimPolicy: fc.constantFrom(...RECLAIM_POLICIES),
  wipeDevicesHoldingData: fc.boolean(),
  wipe: fc.constantFrom(...DEVICE_WIPES),
}, PLAIN).map((c): DeviceSpecConfig => (c.volumeMode === 'Block' ? { ...c, fsType: '' } : c));

/**
 * Raw characters go-yaml v2 (upstream's reader) rejects ("control characters are not
 * allowed") or reads as line breaks (NEL, LS, PS), and a stray BOM.
 */
const GO_YAML_UNREADABLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/;

describe('round trip', () => {
  test('directory dialect: parse(serialize(c)) equals c', () => {
    fc.assert(fc.property(provisionerConfig, (c) => {
      const data = serializeProvisionerConfig(c);
      for (const text of Object.values(data)) expect(text).not.toMatch(GO_YAML_UNREADABLE);
      const result = parseProvisionerConfig(data);
      expect(result).toMatchObject({ ok: true });
      expect(result.ok && result.config).toStrictEqual(c);
    }), { numRuns: 300 });
  });

  test('directory dialect: resolving a resolved config changes nothing', () => {
    fc.assert(fc.property(provisionerConfig, (c) => {
      const result = resolveProvisionerConfig(c);
      expect(result.ok && result.config).toStrictEqual(c);
    }), { numRuns: 100 });
  });

  test('device dialect: parse(serialize(c)) equals c', () => {
    fc.assert(fc.property(deviceSpec, (c) => {
      const result = parseDeviceSpec(serializeDeviceSpec(c));
      expect(result).toMatchObject({ ok: true });
      expect(result.ok && result.config).toStrictEqual(c);
    }), { numRuns: 300 });
  });

  test('device dialect: resolving a resolved spec changes nothing', () => {
    fc.assert(fc.property(deviceSpec, (c) => {
      const result = resolveDeviceSpec(c);
      expect(result.ok && result.config).toStrictEqual(c);
    }), { numRuns: 100 });
  });
});
