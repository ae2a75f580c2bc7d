import { resolveProvisionerConfig } from '../../../src/config';
import type { ClassDiscovery, DiscoveredVolume, MountTable, Rejection, RejectionCode } from '../../../src/runtime/discovery';
import { PassInputs, PassOutcome, QuietPasses } from '../../../src/runtime/static/quiet-passes';

const resolved = resolveProvisionerConfig({ storageClassMap: { 'local-fs': { hostDir: '/mnt/disks', mountDir: '/mnt/disks' } } });
if (!resolved.ok) throw new Error('test config is invalid');
const CONFIG = resolved.config;
const TABLE: MountTable = { entries: [], mountPoints: new Map() };
const INPUTS: PassInputs = {
  config: CONFIG,
  node: { name: 'worker-1', uid: 'uid-1', labels: { 'kubernetes.io/hostname': 'worker-1' } },
  pvRevision: 7,
  recordRevision: 3,
  mountTable: TABLE,
  directoryStamps: ['64768:1234:1:1'],
  readAtMs: 0,
};
/** The same inputs, read `ms` after INPUTS. */
const later = (ms: number, change: Partial<PassInputs> = {}): PassInputs => ({ ...INPUTS, ...change, readAtMs: ms });

const volume = (source: DiscoveredVolume['source']): DiscoveredVolume => ({
  className: 'local-fs',
  entryName: 'vol1',
  hostPath: '/mnt/disks/vol1',
  mountPath: '/mnt/disks/vol1',
  volumeMode: 'Filesystem',
  capacityBytes: 1024 ** 3,
  source,
  identity: 'fs:1',
});
const rejection = (code: RejectionCode, viaSymlink?: boolean): Rejection => ({
  className: 'local-fs',
  entryName: 'x',
  path: '/mnt/disks/x',
  code,
  reason: 'x',
  ...(viaSymlink ? { viaSymlink } : {}),
});
const discovery = (fields: Partial<ClassDiscovery> = {}): ClassDiscovery => ({
  className: 'local-fs', mountDir: '/mnt/disks', volumes: [volume('mount-point')], rejections: [rejection('not-a-mount-point')], ...fields,
});
/** A pass with every PV in order, every volume offered, only lasting rejections. */
const SETTLED: PassOutcome = {
  deleterAtRest: true,
  stewardWrites: 0,
  verdicts: [{ kind: 'ok', configured: true }],
  classes: [discovery()],
  planned: { create: 0, warnings: 0 },
};

/** A gate after one full pass over INPUTS that ended with `outcome`. */
function after(outcome: PassOutcome, fullPassEveryMs = 300_000): QuietPasses {
  const quiet = new QuietPasses(fullPassEveryMs);
  quiet.ran(INPUTS, outcome);
  return quiet;
}

describe('QuietPasses', () => {
  test('no pass is skipped before a full one ran', () => {
    expect(new QuietPasses().canSkip(INPUTS)).toBe(false);
  });

  test('a pass over the same inputs after one that left nothing behind is skipped', () => {
    expect(after(SETTLED).canSkip(later(10_000, { node: { ...INPUTS.node, labels: { ...INPUTS.node.labels } } }))).toBe(true);
  });

  test.each<[string, Partial<PassInputs>]>([
    ['a reloaded configuration', { config: { ...CONFIG } }],
    ['another Node UID', { node: { ...INPUTS.node, uid: 'uid-2' } }],
    ['a Node label changed', { node: { ...INPUTS.node, labels: { 'kubernetes.io/hostname': 'other' } } }],
    ['a Node label added', { node: { ...INPUTS.node, labels: { ...INPUTS.node.labels, zone: 'a' } } }],
    ['the volume record changed (another agent, an administrator)', { recordRevision: 4 }],
    ['a PV changed', { pvRevision: 8 }],
    ['a mount table read anew', { mountTable: { entries: [], mountPoints: new Map() } }],
    ['an entry of a discovery directory changed', { directoryStamps: ['64768:1234:2:2'] }],
    ['a discovery directory without a stamp to trust', { directoryStamps: [undefined] }],
  ])('a pass is not skipped after %s', (_what, change) => {
    expect(after(SETTLED).canSkip(later(10_000, change))).toBe(false);
  });

  test('once a pass is not skipped, the settled one is forgotten: the same inputs again are not skipped either', () => {
    const quiet = after(SETTLED);
    expect(quiet.canSkip(later(10_000, { pvRevision: 8 }))).toBe(false);
    expect(quiet.canSkip(later(20_000))).toBe(false);
  });

  test('a pass is not skipped once the last full pass is fullPassEveryMs old', () => {
    const quiet = after(SETTLED, 300_000);
    expect(quiet.canSkip(later(299_999))).toBe(true);
    expect(quiet.canSkip(later(300_000))).toBe(false);
  });

  test('the same inputs with their directory still without a stamp are never skipped', () => {
    const quiet = new QuietPasses();
    const unstamped = { ...INPUTS, directoryStamps: [undefined] };
    quiet.ran(unstamped, SETTLED);
    expect(quiet.canSkip({ ...unstamped, readAtMs: 10_000 })).toBe(false);
  });

  test.each<[string, Partial<PassOutcome>]>([
    ['a release or cleanup under way', { deleterAtRest: false }],
    ['a PV brought under the cleanup protocol', { stewardWrites: 1 }],
    ['a PV whose volume is missing', { verdicts: [{ kind: 'missing', reason: 'gone' }] }],
    ['a PV whose path holds another disk', { verdicts: [{ kind: 'identity-mismatch', recorded: 'a', current: 'b' }] }],
    ['a PV whose volume could not be told', { verdicts: [{ kind: 'unknown', reason: 'unreadable' }] }],
    ['a PV the configuration no longer offers', { verdicts: [{ kind: 'ok', configured: false }] }],
    ['a volume to offer', { planned: { create: 1, warnings: 0 } }],
    ['a duplicate path warned about', { planned: { create: 0, warnings: 1 } }],
    ['a discovery directory that cannot be listed', { classes: [discovery({ problem: 'does not exist' })] }],
    ['a block-device entry (its symlinks can lead elsewhere unseen)', { classes: [discovery({ volumes: [volume('block-device')] })] }],
    ['a symlink to nothing (its target may appear)', { classes: [discovery({ rejections: [rejection('broken-link')] })] }],
    ['an entry that could not be read', { classes: [discovery({ rejections: [rejection('unreadable-entry')] })] }],
    ['an entry that could not be measured', { classes: [discovery({ rejections: [rejection('size-unknown')] })] }],
    ['a rejected symlink (what it leads to may become a volume)', { classes: [discovery({ rejections: [rejection('unsupported-entry', true)] })] }],
  ])('the pass after one that left %s behind is not skipped', (_what, outcome) => {
    expect(after({ ...SETTLED, ...outcome }).canSkip(later(10_000))).toBe(false);
  });

  test.each<RejectionCode>(['not-a-mount-point', 'directory-in-block-class', 'unsupported-entry'])(
    'a rejection for %s of an entry that is no symlink, which only a change of the directory or the mount table lifts, lets the next pass be skipped', (code) => {
      expect(after({ ...SETTLED, classes: [discovery({ rejections: [rejection(code)] })] }).canSkip(later(10_000))).toBe(true);
    });

  test('a full pass that leaves something behind ends the skipping', () => {
    const quiet = after(SETTLED);
    quiet.ran(later(20_000), { ...SETTLED, deleterAtRest: false });
    expect(quiet.canSkip(later(30_000))).toBe(false);
  });
});
