/**
 * The metadata of a volume's root directory: its mode (setuid, setgid and sticky
 * bits included), owner, group and extended attributes, POSIX ACLs included (the
 * kernel offers them as the xattrs system.posix_acl_access and
 * system.posix_acl_default).
 *
 * The filesystem cleaner empties a volume and keeps its root, so whatever a tenant
 * did to the root itself (chmod 0777, chown, a default ACL granting it access to
 * everything the next tenant creates, data left in a user.* xattr) would reach the
 * next tenant. So the root's metadata is captured once, when the volume is first
 * offered, kept in a durable record (hence {@link RootMetadata} is plain JSON), and
 * restored exactly after each clean.
 *
 * Both go through an open directory handle (volume/directory-handle.ts), never a
 * name: Node has no xattr calls, so getfattr and setfattr (Debian package `attr`)
 * are given `/proc/<our pid>/fd/<n>`, which the kernel resolves to the directory we
 * hold, for a child process too, whatever was renamed or replaced by a symlink since.
 *
 * Which xattrs: every name listxattr returns (getfattr `-m -`: user.*, trusted.*,
 * security.*, system.posix_acl_*; on XFS also trusted.SGI_ACL_FILE and
 * trusted.SGI_ACL_DEFAULT, the same ACLs in XFS's own format) except those a Linux
 * security module or the integrity subsystem owns ({@link isManagedXattr}). trusted.*
 * is listed only to a process with CAP_SYS_ADMIN, which the agent has.
 *
 * Restoring removes every xattr not in the snapshot, sets every one that differs,
 * then chowns and then chmods (after the ACL, since setting an access ACL rewrites
 * the permission bits, and chmod rewrites the ACL's mask to match the mode, which
 * was consistent with the ACL when both were captured). Then it reads everything
 * back: the state it reads is the verdict, so a removal that failed because the
 * name went with another (XFS's ACL aliases) does not matter, and a tenant still
 * changing the root meanwhile makes it fail, naming what differs.
 *
 * Xattr names are bytes; in a snapshot each is ASCII: printable characters as
 * themselves except `\` and `=`, every other byte as `\` and three octal digits
 * (getfattr's quoting, extended to spaces and non-ASCII bytes so it is one form);
 * setfattr reads the same form. Values are base64.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import type { DirectoryHandle } from './directory-handle';

/** A root directory's metadata, JSON as it is (for a durable record). */
export interface RootMetadata {
  /** Permission bits with setuid, setgid and sticky: st_mode & 0o7777. */
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  /** Extended attributes, ACLs included: name (escaped, see the module comment) to value in base64. */
  readonly xattrs: Readonly<Record<string, string>>;
}

export type RootMetadataResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface RootMetadataOptions {
  /** @default 'getfattr' */
  readonly getfattr?: string;
  /** @default 'setfattr' */
  readonly setfattr?: string;
  /** Each command is given up after this long. @default 10000 */
  readonly timeoutMs?: number;
}

/** What makes a root's xattrs the snapshot's: names to remove, and names to set with their base64 values. */
export interface XattrChanges {
  readonly remove: readonly string[];
  readonly set: Readonly<Record<string, string>>;
}

/**
 * Xattrs that are labels a security module or the integrity subsystem keeps; they are
 * neither captured nor changed. An LSM, not the tenant's data, decides them, and the
 * runtime relabels a volume for each pod that mounts it (SELinux: the mount's context=
 * option or a recursive relabel). Changing them needs policy permissions the agent is
 * not promised (relabelfrom/relabelto, CAP_MAC_ADMIN), removing security.selinux leaves
 * the root unlabeled (unusable by any pod), and security.evm is an HMAC the kernel keeps
 * over the other security xattrs, mode and owner: an old copy written back would be
 * invalid, and the root refused under EVM appraisal (security.ima likewise hashes contents).
 *
 * security.capability is NOT among them: it is a grant of capabilities a tenant with
 * CAP_SETFCAP can write, meaningless on a directory, that no LSM maintains; it is
 * restored like any other. So are other security.* names (writable with CAP_SYS_ADMIN).
 */
const LSM_OWNED = ['security.selinux', 'security.apparmor', 'security.ima', 'security.evm'];
const LSM_OWNED_PREFIXES = ['security.SMACK64'];

/** Whether the restore manages this (escaped) xattr name: false for names a security module owns. */
export function isManagedXattr(name: string): boolean {
  return !LSM_OWNED.includes(name) && !LSM_OWNED_PREFIXES.some((p) => name.startsWith(p));
}

const MAX_XATTR_VALUE_BYTES = 65536; // XATTR_SIZE_MAX
const MAX_XATTR_NAME_BYTES = 255; // XATTR_NAME_MAX
const BACKSLASH = 0x5c;
const EQUALS = 0x3d;

/** The escaped form of a raw xattr name. */
export function escapeXattrName(raw: Buffer): string {
  let out = '';
  for (const byte of raw) {
    out += byte > 0x20 && byte < 0x7f && byte !== BACKSLASH && byte !== EQUALS ? String.fromCharCode(byte) : `\\${byte.toString(8).padStart(3, '0')}`;
  }
  return out;
}

/** The raw bytes of an escaped name: `\ooo` is one byte, anything else stands for itself. */
function unescapeXattrName(text: Buffer): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const octal = text[i] === BACKSLASH ? /^[0-3][0-7]{2}/.exec(text.subarray(i + 1, i + 4).toString('latin1')) : null;
    if (octal) {
      bytes.push(parseInt(octal[0], 8));
      i += 3;
    } else {
      bytes.push(text[i]);
    }
  }
  return Buffer.from(bytes);
}

/**
 * Reads `getfattr --absolute-names -d -m - -e base64` output (raw bytes: getfattr
 * prints non-ASCII bytes of names as they are) into escaped name -> base64 value.
 * Names a security module owns are left out.
 */
export function parseGetfattrDump(stdout: Buffer): Record<string, string> {
  const xattrs: Record<string, string> = {};
  let start = 0;
  while (start < stdout.length) {
    let end = stdout.indexOf(0x0a, start);
    if (end < 0) end = stdout.length;
    const line = stdout.subarray(start, end);
    start = end + 1;
    if (line.length === 0 || line[0] === 0x23 /* '#': the "# file:" header */) continue;
    const eq = line.indexOf(EQUALS);
    const name = escapeXattrName(unescapeXattrName(eq < 0 ? line : line.subarray(0, eq)));
    const value = eq < 0 ? '' : line.subarray(eq + 1).toString('latin1');
    if (value !== '' && !value.startsWith('0s')) throw new Error(`getfattr printed ${JSON.stringify(name)} not in base64`);
    if (isManagedXattr(name)) xattrs[name] = value.slice(2);
  }
  return xattrs;
}

/** Removals for names the root has and the snapshot has not; sets for names missing or different. */
export function xattrChanges(current: Readonly<Record<string, string>>, snapshot: Readonly<Record<string, string>>): XattrChanges {
  const remove = Object.keys(current).filter((name) => isManagedXattr(name) && !Object.hasOwn(snapshot, name)).sort();
  const set: Record<string, string> = {};
  for (const name of Object.keys(snapshot).sort()) {
    if (isManagedXattr(name) && current[name] !== snapshot[name]) set[name] = snapshot[name];
  }
  return { remove, set };
}

const octalMode = (mode: number) => `0${mode.toString(8).padStart(3, '0')}`;

/** How `current` differs from `snapshot`, one phrase per difference (no xattr values: they may be large or secret); empty when equal. */
export function rootMetadataDifferences(current: RootMetadata, snapshot: RootMetadata): string[] {
  const differences: string[] = [];
  if (current.mode !== snapshot.mode) differences.push(`mode is ${octalMode(current.mode)}, recorded ${octalMode(snapshot.mode)}`);
  if (current.uid !== snapshot.uid || current.gid !== snapshot.gid) {
    differences.push(`owner is ${current.uid}:${current.gid}, recorded ${snapshot.uid}:${snapshot.gid}`);
  }
  const { remove, set } = xattrChanges(current.xattrs, snapshot.xattrs);
  for (const name of remove) differences.push(`xattr ${name} is there and was not recorded`);
  for (const name of Object.keys(set)) {
    differences.push(Object.hasOwn(current.xattrs, name) ? `xattr ${name} differs from the recorded value` : `xattr ${name} is missing`);
  }
  return differences;
}

const isId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) < 0xffffffff; // -1 means "unchanged" to chown
const FIELDS = ['mode', 'uid', 'gid', 'xattrs'];

/**
 * Checks a snapshot read back from a record (an object, or its JSON text) and returns it;
 * throws an error saying what is wrong with it otherwise.
 */
export function parseRootMetadata(value: unknown): RootMetadata {
  const bad = (why: string) => new Error(`root metadata snapshot is not valid: ${why}`);
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch (e) {
      throw bad(`not JSON (${(e as Error).message})`);
    }
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad(`expected an object with ${FIELDS.join(', ')}, got ${JSON.stringify(v) ?? String(v)}`);
  const o = v as Record<string, unknown>;
  const unknown = Object.keys(o).filter((k) => !FIELDS.includes(k));
  if (unknown.length > 0) throw bad(`unknown field(s) ${unknown.join(', ')}`);
  if (!Number.isSafeInteger(o.mode) || (o.mode as number) < 0 || (o.mode as number) > 0o7777) throw bad(`mode must be an integer from 0 to 0o7777, got ${JSON.stringify(o.mode)}`);
  if (!isId(o.uid)) throw bad(`uid must be an integer from 0 to 4294967294, got ${JSON.stringify(o.uid)}`);
  if (!isId(o.gid)) throw bad(`gid must be an integer from 0 to 4294967294, got ${JSON.stringify(o.gid)}`);
  if (typeof o.xattrs !== 'object' || o.xattrs === null || Array.isArray(o.xattrs)) throw bad(`xattrs must be an object of name to base64 value, got ${JSON.stringify(o.xattrs)}`);
  const xattrs: Record<string, string> = {};
  for (const [name, encoded] of Object.entries(o.xattrs as Record<string, unknown>)) {
    const raw = unescapeXattrName(Buffer.from(name, 'latin1'));
    if (!/^[\x21-\x7e]+$/.test(name) || escapeXattrName(raw) !== name) throw bad(`xattr name ${JSON.stringify(name)} is not in escaped form`);
    if (raw.length > MAX_XATTR_NAME_BYTES || !/^[a-z]+\../.test(name)) throw bad(`xattr name ${JSON.stringify(name)} is not a namespace-qualified name of at most ${MAX_XATTR_NAME_BYTES} bytes`);
    if (!isManagedXattr(name)) throw bad(`xattr ${name} is owned by a security module and never recorded`);
    if (typeof encoded !== 'string' || Buffer.from(encoded, 'base64').toString('base64') !== encoded) throw bad(`xattr ${name}'s value is not base64`);
    if (Buffer.from(encoded, 'base64').length > MAX_XATTR_VALUE_BYTES) throw bad(`xattr ${name}'s value is longer than ${MAX_XATTR_VALUE_BYTES} bytes`);
    xattrs[name] = encoded;
  }
  return { mode: o.mode as number, uid: o.uid, gid: o.gid, xattrs };
}

/** The path a child process resolves to the directory we hold. */
const childPath = (handle: DirectoryHandle) => `/proc/${process.pid}/fd/${handle.fd}`;

function runTool(command: string, args: string[], options: RootMetadataOptions, input?: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 10_000;
    // LC_ALL=C: messages we can quote, and names printed the same way on every node.
    const child = spawn(command, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    // Our own timer: spawn's `timeout` is not cleared when the command cannot be started.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => stderr.push(chunk));
    const failed = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(' ')} failed: ${why}`));
    };
    child.on('error', (e: NodeJS.ErrnoException) => failed(e.code === 'ENOENT' ? 'not installed? it is in the Debian package attr' : e.message));
    child.on('close', (status, signal) => {
      if (status === 0) {
        clearTimeout(timer);
        resolve(Buffer.concat(stdout));
        return;
      }
      if (timedOut) return failed(`no answer within ${timeoutMs} ms`);
      failed(Buffer.concat(stderr).toString('utf8').trim() || (signal ? `killed by ${signal}` : `exit status ${status}`));
    });
    if (child.stdin) {
      // A command that exits without reading all of it (EPIPE) says why in its exit status.
      child.stdin.on('error', () => undefined);
      child.stdin.end(input);
    }
  });
}

async function readXattrs(handle: DirectoryHandle, options: RootMetadataOptions): Promise<Record<string, string>> {
  const getfattr = options.getfattr ?? 'getfattr';
  // No -h: /proc/<pid>/fd/<n> must be followed to the directory (it never follows a name inside the volume).
  return parseGetfattrDump(await runTool(getfattr, ['--absolute-names', '-d', '-m', '-', '-e', 'base64', childPath(handle)], options));
}

/** The metadata of the directory `handle` holds. Rejects when it cannot be read. */
export async function captureRootMetadata(handle: DirectoryHandle, options: RootMetadataOptions = {}): Promise<RootMetadata> {
  const st = fs.fstatSync(handle.fd);
  const xattrs = await readXattrs(handle, options);
  return { mode: st.mode % 0o10000, uid: st.uid, gid: st.gid, xattrs };
}

/**
 * Makes the directory `handle` holds exactly `snapshot` (checked first, see
 * {@link parseRootMetadata}), then reads it back; fails naming what differs. Never throws.
 */
export async function restoreRootMetadata(
  handle: DirectoryHandle,
  snapshot: RootMetadata,
  options: RootMetadataOptions = {},
): Promise<RootMetadataResult> {
  let wanted: RootMetadata;
  try {
    wanted = parseRootMetadata(snapshot);
  } catch (e) {
    return { ok: false, reason: (e as Error).message };
  }
  const setfattr = options.setfattr ?? 'setfattr';
  const path = childPath(handle);
  const errors: string[] = [];
  const attempt = async (op: () => unknown) => {
    try {
      await op();
    } catch (e) {
      errors.push((e as Error).message);
    }
  };
  try {
    const changes = xattrChanges(await readXattrs(handle, options), wanted.xattrs);
    for (const name of changes.remove) await attempt(() => runTool(setfattr, ['-x', name, path], options));
    const sets = Object.entries(changes.set);
    if (sets.length > 0) {
      // setfattr's restore format, read from stdin: one process for every value.
      const dump = `# file: ${path}\n${sets.map(([name, value]) => `${name}=0s${value}\n`).join('')}`;
      await attempt(() => runTool(setfattr, ['--restore=-'], options, dump));
    }
    await attempt(() => fs.fchownSync(handle.fd, wanted.uid, wanted.gid));
    await attempt(() => fs.fchmodSync(handle.fd, wanted.mode));
    const differences = rootMetadataDifferences(await captureRootMetadata(handle, options), wanted);
    if (differences.length === 0) return { ok: true };
    const why = errors.length > 0 ? ` (${errors.join('; ')})` : '';
    return { ok: false, reason: `the root directory is not as recorded after restoring it: ${differences.join('; ')}${why}` };
  } catch (e) {
    return { ok: false, reason: `the root directory's metadata could not be restored: ${(e as Error).message}` };
  }
}
