/**
 * What the XFS and ext4 pool backend reads: xfs_quota's report by project ID, and the
 * identities it gives volumes. (It runs against real XFS and ext4 in test/node/real-node.test.ts:
 * this machine's kernel has no project quotas.)
 */
import { parseProjectVolumeIdentity, parseQuotaReport, projectVolumeIdentity } from '../../../src/runtime/pool/project-quota';

const KiB = 1024;
const NAME = 'pvc-0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0';

// As xfs_quota 6.1 printed it on Linux 6.1 (ext4; XFS alike): a project over its limit shows its grace as [--none--].
const REPORT = [
  '#0                  32          0          0     00 [--------]          5          0          0     00 [--------]',
  '#4242                8          0      10240     00 [--------]          2          0        100     00 [--------]',
  '#2000001          3076          0       1024     00 [--none--]          2          0         50     00 [--------]',
  '#2000002          1024       1000       2048     01 [6 days]           7          0         64     00 [--------]',
  '',
].join('\n');

test('the report is read by project ID: use and hard limit in bytes, inodes and their hard limit', () => {
  const report = parseQuotaReport(REPORT);
  expect([...report.keys()]).toEqual([0, 4242, 2000001, 2000002]);
  expect(report.get(2000001)).toEqual({ usedBytes: 3076 * KiB, hardBytes: 1024 * KiB, inodes: 2, hardInodes: 50 });
  expect(report.get(2000002)).toEqual({ usedBytes: 1024 * KiB, hardBytes: 2048 * KiB, inodes: 7, hardInodes: 64 });
});

test('a report with no projects (nothing counted yet) is empty, not an error', () => {
  expect(parseQuotaReport('\n').size).toBe(0);
});

test('a volume\'s identity names its project ID and its name, and is read back', () => {
  const identity = projectVolumeIdentity(2000001, NAME);
  expect(identity).toBe(`project:2000001:${NAME}`);
  expect(parseProjectVolumeIdentity(identity)).toEqual({ id: 2000001, name: NAME });
});

test('an identity whose name is not a volume\'s (a path smuggled in) is none', () => {
  expect(parseProjectVolumeIdentity('project:2000001:../../etc')).toBeUndefined();
  expect(parseProjectVolumeIdentity(`subvolume:${NAME}`)).toBeUndefined();
});
