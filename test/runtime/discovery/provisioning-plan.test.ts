import type { V1PersistentVolume } from '@kubernetes/client-node';
import { planProvisioning, type PlanCandidate } from '../../../src/runtime/discovery';
import { VOLUME_IDENTITY_ANNOTATION } from '../../../src/runtime/well-known';

const candidate = (pvName: string, localPath: string, identity = `fs:/@serial:/${pvName}`): PlanCandidate => ({ pvName, localPath, volumeMode: 'Filesystem', identity });
const pv = (name: string, localPath: string, identity?: string): V1PersistentVolume => ({
  metadata: { name, ...(identity ? { annotations: { [VOLUME_IDENTITY_ANNOTATION]: identity } } : {}) },
  spec: { local: { path: localPath } },
});

describe('planProvisioning', () => {
  test('creates a PV for each new volume', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/a'), candidate('b', '/mnt/disks/b')], []);
    expect(plan.create.map((c) => c.pvName)).toEqual(['a', 'b']);
    expect(plan.skip).toEqual([]);
  });

  test('skips a volume whose PV exists, quietly', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/a')], [pv('a', '/mnt/disks/a')]);
    expect(plan.create).toEqual([]);
    expect(plan.skip).toEqual([{ candidate: candidate('a', '/mnt/disks/a'), code: 'pv-exists', message: 'PV "a" already exists' }]);
  });

  test('warns when the existing PV of that name has another path (hostDir changed)', () => {
    const plan = planProvisioning([candidate('a', '/mnt/new/a')], [pv('a', '/mnt/old/a')]);
    expect(plan.skip[0]).toMatchObject({ code: 'pv-exists', warning: expect.stringContaining('exists with path "/mnt/old/a", not "/mnt/new/a"') });
  });

  test('skips a path already used by another PV (the duplicate-path guard)', () => {
    const plan = planProvisioning([candidate('renamed-class-pv', '/mnt/disks/a')], [pv('old-class-pv', '/mnt/disks/a/')]);
    expect(plan.create).toEqual([]);
    expect(plan.skip[0]).toMatchObject({
      code: 'path-in-use',
      message: 'path "/mnt/disks/a" is already used by PV "old-class-pv"',
      warning: 'path "/mnt/disks/a" is already used by PV "old-class-pv"; not creating PV "renamed-class-pv" for it',
    });
  });

  test.each(['/mnt/disks/a/', '/mnt//disks/a', '/mnt/./disks/a', '/mnt/x/../disks/a', '/mnt/disks/a/.'])(
    'a PV path spelt %s is the same path as /mnt/disks/a', (spelling) => {
      expect(planProvisioning([candidate('new-pv', '/mnt/disks/a')], [pv('old-pv', spelling)]).skip[0].code).toBe('path-in-use');
      expect(planProvisioning([candidate('new-pv', spelling)], [pv('old-pv', '/mnt/disks/a')]).skip[0].code).toBe('path-in-use');
    });

  test('paths that only look alike are other paths', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/a.'), candidate('b', '/mnt/disks/..a')], [pv('old-pv', '/mnt/disks/a')]);
    expect(plan.create.map((c) => c.pvName)).toEqual(['a', 'b']);
  });

  test('skips a volume whose cleanup is running, by PV name', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/a')], [], { pvNames: new Set(['a']), paths: new Set() });
    expect(plan.skip[0]).toMatchObject({ code: 'cleanup-running', message: 'the cleanup of PV "a" at "/mnt/disks/a" is still running' });
  });

  test('skips a volume whose cleanup is running, by path', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/a')], [], { pvNames: new Set(), paths: new Set(['/mnt/disks/a/']) });
    expect(plan.skip[0].code).toBe('cleanup-running');
  });

  test('creates the first of two candidates with one path and skips the second', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/a'), candidate('b', '/mnt/disks/a')], []);
    expect(plan.create.map((c) => c.pvName)).toEqual(['a']);
    expect(plan.skip[0]).toMatchObject({ code: 'duplicate-in-pass', message: 'path "/mnt/disks/a" is also found as PV "a" in this pass' });
  });

  test('creates the first of two candidates with one name and skips the second', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/a', 'fs:/@serial:/1'), candidate('a', '/mnt/disks/b', 'fs:/@serial:/2')], []);
    expect(plan.create.map((c) => c.localPath)).toEqual(['/mnt/disks/a']);
    expect(plan.skip[0].code).toBe('duplicate-in-pass');
  });

  test('keeps the candidate objects, so callers get their own fields back', () => {
    const rich = { ...candidate('a', '/mnt/disks/a'), capacityBytes: 42 };
    expect(planProvisioning([rich], []).create[0].capacityBytes).toBe(42);
  });

  test('one disk behind two entries (two links, two mounts, two classes) gets one PV: the first, with a warning for the other', () => {
    const plan = planProvisioning([candidate('a', '/mnt/disks/by-id-link', 'wwid:X'), candidate('b', '/mnt/other/sdb', 'wwid:X')], []);
    expect(plan.create.map((c) => c.pvName)).toEqual(['a']);
    expect(plan.skip).toEqual([expect.objectContaining({ code: 'same-volume', warning: expect.stringContaining('same disk or filesystem (wwid:X) as "/mnt/disks/by-id-link"') })]);
  });

  test('a disk that already has a PV under another path is not offered again (a moved device name)', () => {
    const plan = planProvisioning([candidate('new', '/mnt/disks/sdc', 'wwid:X')], [pv('old', '/mnt/disks/sdb', 'wwid:X')]);
    expect(plan.create).toEqual([]);
    expect(plan.skip).toEqual([expect.objectContaining({ code: 'same-volume', warning: expect.stringContaining('as PV "old" at "/mnt/disks/sdb"') })]);
  });

  test('the identity of a PV made before identities comes from the caller (what is at its path now)', () => {
    const legacy = pv('old', '/mnt/disks/sdb');
    const plan = planProvisioning([candidate('new', '/mnt/disks/sdc', 'wwid:X')], [legacy], undefined, (p) => (p === legacy ? 'wwid:X' : undefined));
    expect(plan.skip.map((s) => s.code)).toEqual(['same-volume']);
  });
});
