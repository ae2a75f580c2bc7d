import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  captureRootMetadata,
  DirectoryHandle,
  escapeXattrName,
  openDirectory,
  parseGetfattrDump,
  parseRootMetadata,
  restoreRootMetadata,
  RootMetadata,
  rootMetadataDifferences,
  xattrChanges,
} from '../../../src/runtime/volume';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../../support/privileged';

afterAll(cleanupPrivileged);
// Loop devices and mkfs on a busy machine.

const MiB = 1024 * 1024;
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const snapshot = (over: Partial<RootMetadata> = {}): RootMetadata => ({ mode: 0o755, uid: 0, gid: 0, xattrs: {}, ...over });

describe('xattr names in a snapshot', () => {
  test('printable ASCII stands for itself; backslash, equals, space, control and non-ASCII bytes are octal escapes', () => {
    expect(escapeXattrName(Buffer.from('user.plain-name_1'))).toBe('user.plain-name_1');
    expect(escapeXattrName(Buffer.concat([Buffer.from('user.a=b\\c d\n'), Buffer.from([0xff]), Buffer.from('ü')]))).toBe(
      'user.a\\075b\\134c\\040d\\012\\377\\303\\274',
    );
  });
});

describe('parseGetfattrDump', () => {
  test('reads names and base64 values, skipping the file header and blank lines', () => {
    const out = Buffer.from('# file: /proc/1/fd/7\nsystem.posix_acl_access=0sAgAAAA==\nuser.empty=0s\nuser.foo=0sYmFy\n\n');
    expect(parseGetfattrDump(out)).toEqual({ 'system.posix_acl_access': 'AgAAAA==', 'user.empty': '', 'user.foo': 'YmFy' });
  });

  test('no output means no xattrs', () => {
    expect(parseGetfattrDump(Buffer.alloc(0))).toEqual({});
  });

  test('names getfattr prints raw (non-ASCII, spaces) or quoted come out in the one escaped form', () => {
    const out = Buffer.concat([Buffer.from('user.'), Buffer.from([0xff, 0xfe]), Buffer.from('\\012q x\\075=0seQ==\n')]);
    expect(parseGetfattrDump(out)).toEqual({ 'user.\\377\\376\\012q\\040x\\075': 'eQ==' });
  });

  test('security module labels are left out', () => {
    const out = Buffer.from('security.selinux=0sYQ==\nsecurity.SMACK64=0sYQ==\nsecurity.evm=0sYQ==\nsecurity.ima=0sYQ==\nsecurity.capability=0sYQ==\n');
    expect(parseGetfattrDump(out)).toEqual({ 'security.capability': 'YQ==' });
  });

  test('a value that is not in base64 is an error', () => {
    expect(() => parseGetfattrDump(Buffer.from('user.foo="bar"\n'))).toThrow(/not in base64/);
  });
});

describe('xattrChanges', () => {
  test('removes names the snapshot lacks and sets names missing or different, leaving equal ones alone', () => {
    expect(xattrChanges({ 'user.same': 'YQ==', 'user.extra': 'Yg==', 'user.changed': 'Yw==' }, { 'user.same': 'YQ==', 'user.changed': 'ZA==', 'user.gone': 'ZQ==' }))
      .toEqual({ remove: ['user.extra'], set: { 'user.changed': 'ZA==', 'user.gone': 'ZQ==' } });
  });

  test('never touches security module labels', () => {
    expect(xattrChanges({ 'security.selinux': 'YQ==' }, {})).toEqual({ remove: [], set: {} });
  });
});

describe('rootMetadataDifferences', () => {
  test('names each difference without printing values', () => {
    const current = snapshot({ mode: 0o2777, uid: 1000, gid: 1000, xattrs: { 'user.tenant': b64('secret'), 'system.posix_acl_access': 'AQ==' } });
    const recorded = snapshot({ xattrs: { 'system.posix_acl_access': 'Ag==', 'user.label': 'YQ==' } });
    expect(rootMetadataDifferences(current, recorded)).toEqual([
      'mode is 02777, recorded 0755',
      'owner is 1000:1000, recorded 0:0',
      'xattr user.tenant is there and was not recorded',
      'xattr system.posix_acl_access differs from the recorded value',
      'xattr user.label is missing',
    ]);
  });

  test('equal metadata has no differences', () => {
    expect(rootMetadataDifferences(snapshot({ xattrs: { 'user.a': 'YQ==' } }), snapshot({ xattrs: { 'user.a': 'YQ==' } }))).toEqual([]);
  });
});

describe('parseRootMetadata', () => {
  test('a snapshot survives JSON, as an object or as text', () => {
    const s = snapshot({ mode: 0o3770, uid: 1000, gid: 2000, xattrs: { 'user.\\377': '', 'system.posix_acl_default': 'AgAAAA==' } });
    expect(parseRootMetadata(JSON.parse(JSON.stringify(s)))).toEqual(s);
    expect(parseRootMetadata(JSON.stringify(s))).toEqual(s);
  });

  test.each([
    ['text that is not JSON', '{mode:', /not JSON/],
    ['something that is not an object', 42, /expected an object with mode, uid, gid, xattrs, got 42/],
    ['a missing mode', { uid: 0, gid: 0, xattrs: {} }, /mode must be an integer from 0 to 0o7777, got undefined/],
    ['a mode with file type bits', { mode: 0o40755, uid: 0, gid: 0, xattrs: {} }, /mode must be/],
    ['uid -1 (chown would leave the owner as it is)', { mode: 0o755, uid: -1, gid: 0, xattrs: {} }, /uid must be/],
    ['gid 4294967295 (the same -1)', { mode: 0o755, uid: 0, gid: 4294967295, xattrs: {} }, /gid must be/],
    ['an unknown field', { mode: 0o755, uid: 0, gid: 0, xattrs: {}, acl: 'x' }, /unknown field\(s\) acl/],
    ['xattrs that are a list', { mode: 0o755, uid: 0, gid: 0, xattrs: [] }, /xattrs must be an object/],
    ['a name not in escaped form', { mode: 0o755, uid: 0, gid: 0, xattrs: { 'user.a b': '' } }, /xattr name "user.a b" is not in escaped form/],
    ['a name without a namespace', { mode: 0o755, uid: 0, gid: 0, xattrs: { foo: '' } }, /not a namespace-qualified name/],
    ['a security module label', { mode: 0o755, uid: 0, gid: 0, xattrs: { 'security.selinux': '' } }, /owned by a security module/],
    ['a value that is not base64', { mode: 0o755, uid: 0, gid: 0, xattrs: { 'user.a': 'not base64!' } }, /user.a's value is not base64/],
  ])('%s is refused with a message saying so', (_what, value, message) => {
    expect(() => parseRootMetadata(value)).toThrow(/^root metadata snapshot is not valid: /);
    expect(() => parseRootMetadata(value)).toThrow(message);
  });
});

/** A fresh filesystem of `type` on a loop device, mounted; returns its mount point. */
function freshFilesystem(type: 'ext4' | 'xfs'): string {
  const loop = createLoopDevice(type === 'xfs' ? 320 * MiB : 32 * MiB);
  if (type === 'ext4') mkfsExt4(loop.device);
  else execFileSync('mkfs.xfs', ['-q', '-f', loop.device]);
  const mountPoint = path.join(makeTempDir('lvp-rootmeta-'), 'vol');
  mount(loop.device, mountPoint, { type });
  return mountPoint;
}

const sh = (cmd: string, ...args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });
const xattrNames = (dir: string) => Object.keys(parseGetfattrDump(execFileSync('getfattr', ['--absolute-names', '-d', '-m', '-', '-e', 'base64', dir]))).sort();

const handles: DirectoryHandle[] = [];
afterEach(() => {
  while (handles.length > 0) fs.closeSync(handles.pop()!.fd);
});
function open(dir: string): DirectoryHandle {
  const h = openDirectory(dir);
  handles.push(h);
  return h;
}

describePrivileged('root metadata on a real filesystem', () => {
  describe.each(['ext4', 'xfs'] as const)('%s', (type) => {
    let fsRoot: string;
    beforeAll(() => {
      fsRoot = freshFilesystem(type);
    });
    /** A directory standing for a volume root, on the filesystem made for this suite. */
    const root = (): string => fs.mkdtempSync(path.join(fsRoot, 'root-'));

    test('capture then restore round-trips mode, owner, xattrs with odd names and empty values, and ACLs, through JSON', async () => {
      const dir = root();
      fs.chmodSync(dir, 0o2750);
      fs.chownSync(dir, 1000, 2000);
      sh('setfattr', '-n', 'user.label', '-v', 'admin', dir);
      sh('setfattr', '-n', 'user.empty', dir);
      sh('setfattr', '-n', 'user.a=b c\\012ü', '-v', '0x00ff', dir);
      sh('setfacl', '-m', 'u:1234:rx', '-d', '-m', 'g:55:rx', dir);
      const h = open(dir);
      const captured = await captureRootMetadata(h);
      const record = JSON.parse(JSON.stringify(captured)) as RootMetadata;

      expect(record.mode).toBe(0o2750);
      expect(record.xattrs['user.a\\075b\\040c\\012\\303\\274']).toBe(b64(Buffer.from([0x00, 0xff])));
      expect(record.xattrs['user.empty']).toBe('');
      expect(Object.keys(record.xattrs)).toEqual(expect.arrayContaining(['system.posix_acl_access', 'system.posix_acl_default', 'user.label']));

      expect(await restoreRootMetadata(h, record)).toEqual({ ok: true });
      expect(await captureRootMetadata(h)).toEqual(captured);
    });

    test("a tenant's added user.* and trusted.* xattrs are removed and a changed one is set back", async () => {
      const dir = root();
      sh('setfattr', '-n', 'user.label', '-v', 'admin', dir);
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      sh('setfattr', '-n', 'user.tenant-data', '-v', 'left for the next tenant', dir);
      sh('setfattr', '-n', 'trusted.tenant', '-v', 'x', dir);
      sh('setfattr', '-n', 'user.label', '-v', 'tenant', dir);

      expect(await restoreRootMetadata(h, recorded)).toEqual({ ok: true });
      expect(xattrNames(dir)).toEqual(['user.label']);
      expect(sh('getfattr', '--absolute-names', '--only-values', '-n', 'user.label', dir)).toBe('admin');
    });

    test('a default ACL and an access ACL a tenant added are removed', async () => {
      const dir = root();
      fs.chmodSync(dir, 0o755);
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      sh('setfacl', '-m', 'u:1234:rwx', '-d', '-m', 'u:1234:rwx', dir);

      expect(await restoreRootMetadata(h, recorded)).toEqual({ ok: true });
      expect(sh('getfacl', '--absolute-names', '--omit-header', '--numeric', dir)).toBe('user::rwx\ngroup::r-x\nother::r-x\n\n');
      expect(fs.statSync(dir).mode % 0o10000).toBe(0o755);
    });

    test('an ACL present at capture is restored after a tenant changed one and removed the other', async () => {
      const dir = root();
      sh('setfacl', '-m', 'u:1234:r-x', '-d', '-m', 'g:55:r-x', dir);
      const before = sh('getfacl', '--absolute-names', '--omit-header', '--numeric', dir);
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      sh('setfacl', '-m', 'u:1234:rwx,u:999:rwx', dir);
      sh('setfacl', '-k', dir);

      expect(await restoreRootMetadata(h, recorded)).toEqual({ ok: true });
      expect(sh('getfacl', '--absolute-names', '--omit-header', '--numeric', dir)).toBe(before);
      expect(before).toContain('default:group:55:r-x');
    });

    test('mode 0777 with setgid and sticky, and a chown by a tenant, are undone', async () => {
      const dir = root();
      fs.chmodSync(dir, 0o750);
      fs.chownSync(dir, 0, 3000);
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      fs.chownSync(dir, 1000, 1000);
      fs.chmodSync(dir, 0o3777);

      expect(await restoreRootMetadata(h, recorded)).toEqual({ ok: true });
      const st = fs.statSync(dir);
      expect([st.mode % 0o10000, st.uid, st.gid]).toEqual([0o750, 0, 3000]);
    });

    test('setgid and sticky bits recorded are set back after a tenant cleared them', async () => {
      const dir = root();
      fs.chmodSync(dir, 0o3775);
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      fs.chmodSync(dir, 0o775);

      expect(await restoreRootMetadata(h, recorded)).toEqual({ ok: true });
      expect(fs.statSync(dir).mode % 0o10000).toBe(0o3775);
    });

    test('capture and restore go through the handle: a root renamed and replaced by a symlink after open does not redirect them', async () => {
      const dir = root();
      const other = root();
      fs.chmodSync(other, 0o700);
      sh('setfattr', '-n', 'user.other', '-v', 'keep', other);
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      sh('setfattr', '-n', 'user.tenant', '-v', 'x', dir);
      fs.chmodSync(dir, 0o777);
      fs.renameSync(dir, `${dir}.moved`);
      fs.symlinkSync(other, dir);

      expect(await captureRootMetadata(h)).toMatchObject({ mode: 0o777, xattrs: { 'user.tenant': b64('x') } });
      expect(await restoreRootMetadata(h, recorded)).toEqual({ ok: true });
      expect(xattrNames(`${dir}.moved`)).toEqual([]);
      expect(fs.statSync(`${dir}.moved`).mode % 0o10000).toBe(recorded.mode);
      expect(xattrNames(other)).toEqual(['user.other']);
      expect(fs.statSync(other).mode % 0o10000).toBe(0o700);
    });

    test('security module labels are neither recorded nor changed, security.capability is restored like any xattr', async () => {
      const dir = root();
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      // Without SELinux loaded, root may write the label as a plain security.* xattr.
      sh('setfattr', '-n', 'security.selinux', '-v', 'system_u:object_r:container_file_t:s0', dir);
      sh('setfattr', '-n', 'security.capability', '-v', '0sAQAAAgAgAAAAAAAAAAAAAAAAAAA=', dir);

      expect(await captureRootMetadata(h)).toEqual({ ...recorded, xattrs: { 'security.capability': 'AQAAAgAgAAAAAAAAAAAAAAAAAAA=' } });
      expect(await restoreRootMetadata(h, recorded)).toEqual({ ok: true });
      expect(xattrNames(dir)).toEqual([]);
      expect(sh('getfattr', '--absolute-names', '--only-values', '-n', 'security.selinux', dir)).toBe('system_u:object_r:container_file_t:s0');
    });

    test('a snapshot that does not parse fails the restore with a clear message and changes nothing', async () => {
      const dir = root();
      sh('setfattr', '-n', 'user.tenant', '-v', 'x', dir);
      fs.chmodSync(dir, 0o777);
      const h = open(dir);
      const r = await restoreRootMetadata(h, { mode: 0o755, uid: 0, gid: 0, xattrs: { 'user.a': '%%%' } });
      expect(r).toEqual({ ok: false, reason: "root metadata snapshot is not valid: xattr user.a's value is not base64" });
      expect(xattrNames(dir)).toEqual(['user.tenant']);
      expect(fs.statSync(dir).mode % 0o10000).toBe(0o777);
    });

    test('a restore whose result is not the snapshot fails, naming what differs', async () => {
      const dir = root();
      const h = open(dir);
      const recorded = await captureRootMetadata(h);
      sh('setfattr', '-n', 'user.tenant', '-v', 'x', dir);
      // A setfattr that does nothing stands for a change that does not take.
      const r = await restoreRootMetadata(h, recorded, { setfattr: 'true' });
      expect(r).toEqual({ ok: false, reason: 'the root directory is not as recorded after restoring it: xattr user.tenant is there and was not recorded' });
    });
  });

  test('without getfattr, capture fails naming the Debian package to install', async () => {
    const h = open(makeTempDir('lvp-rootmeta-plain-'));
    await expect(captureRootMetadata(h, { getfattr: 'lvp-no-such-getfattr' })).rejects.toThrow(/not installed\? it is in the Debian package attr/);
  });
});
