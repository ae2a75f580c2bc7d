/**
 * The btrfs backend on a real btrfs filesystem (a loop device in this test's mount
 * namespace), attacked as a tenant would: the tenant is an unprivileged user (or root
 * without CAP_SYS_ADMIN) writing in its volume.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { resolveProvisionerConfig, serializeProvisionerConfig } from '../../../src/config';
import { formatPlan, makePlan } from '../../../src/runtime/plan/run-plan';
import { isPoolVolumeName } from '../../../src/runtime/pool/backend';
import { BtrfsPool } from '../../../src/runtime/pool/btrfs';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';

const MiB = 1024 * 1024;
let next = 0;
/** A fresh volume name each time. */
const volumeName = () => `pvc-00000000-0000-0000-0000-${String(++next).padStart(12, '0')}`;

/** Runs `script` in the shell as the tenant: an unprivileged user. */
function asTenant(script: string): { ok: boolean; output: string } {
  const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', 'sh', '-c', script], { encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

/** The filesystem's quota groups, as root reads them. */
function quotaGroups(pool: string): Map<string, { parents: string[]; children: string[]; limit: number | 'none' }> {
  const shown = JSON.parse(execFileSync('btrfs', ['--format', 'json', 'qgroup', 'show', '-pcre', '--raw', pool], { encoding: 'utf8' }))['qgroup-show'] as
    Array<{ qgroupid: string; parents: string[]; children: string[]; max_referenced: number | 'none' }>;
  return new Map(shown.map((q) => [q.qgroupid, { parents: q.parents, children: q.children, limit: q.max_referenced }]));
}

/** Resolves once `check` holds (within 10 s): for what the backend does after create() returns. */
async function eventually(check: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; !check();) {
    if (Date.now() > deadline) throw new Error('not so within 10 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The subvolume ID of the subvolume at `dir`. */
const subvolumeId = (dir: string) => Number(execFileSync('btrfs', ['inspect-internal', 'rootid', dir], { encoding: 'utf8' }));

/** Writes `mib` MiB into `file` as the tenant; how many whole MiB got there. */
function tenantWrites(file: string, mib: number): number {
  asTenant(`dd if=/dev/zero of=${file} bs=1M count=${mib} conv=fsync 2>/dev/null`);
  return fs.existsSync(file) ? Math.floor(fs.statSync(file).size / MiB) : 0;
}

describePrivileged('a btrfs pool', () => {
  let pool: string;
  let backend: BtrfsPool;
  beforeAll(async () => {
    const loop = createLoopDevice(512 * MiB);
    mkfsBtrfs(loop.device);
    pool = makeTempDir('lvp-btrfs-');
    mount(loop.device, pool, { type: 'btrfs' });
    backend = new BtrfsPool(pool);
    await backend.open();
  });
  afterAll(cleanupPrivileged);

  /** A new volume of `limitMiB`, writable by the tenant; its name and identity. */
  async function volume(limitMiB: number): Promise<{ name: string; id: string; dir: string }> {
    const name = volumeName();
    const id = await backend.create(name, limitMiB * MiB);
    fs.chmodSync(path.join(pool, name), 0o777);
    return { name, id, dir: path.join(pool, name) };
  }

  const usage = async (id: string) => (await backend.open()).volumes.get(id);

  describe('a volume', () => {
    test('is a subvolume in a quota group of its own limited to its size; made again, it is the same volume', async () => {
      const v = await volume(8);
      expect(v.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await backend.create(v.name, 8 * MiB)).toBe(v.id);
      expect(await usage(v.id)).toMatchObject({ limitBytes: 8 * MiB });
      expect(await backend.identityAt(v.name)).toBe(v.id);
    });

    test('takes no more than its limit: the tenant\'s writes beyond it fail', async () => {
      const v = await volume(16);
      expect(tenantWrites(path.join(v.dir, 'f'), 64)).toBeLessThan(16);
      expect((await usage(v.id))!.usedBytes).toBeLessThanOrEqual(16 * MiB);
    });

    test('counts the subvolumes its tenant makes inside it, and snapshots, at any depth, against its limit', async () => {
      const v = await volume(16);
      // A snapshot is of a subvolume its maker owns: the tenant's own (a root tenant's, of the volume itself too).
      expect(asTenant(`btrfs subvolume create ${v.dir}/a && btrfs subvolume create ${v.dir}/a/b && btrfs subvolume snapshot ${v.dir}/a ${v.dir}/snap`).ok).toBe(true);
      const written = tenantWrites(path.join(v.dir, 'a/b/f'), 64) + tenantWrites(path.join(v.dir, 'snap/f'), 64) + tenantWrites(path.join(v.dir, 'f'), 64);
      expect(written).toBeLessThan(16);
      expect((await usage(v.id))!.usedBytes).toBeLessThanOrEqual(16 * MiB);
    });

    test('a subvolume its tenant makes naming another volume\'s quota group is found, put back under its own limit, and said', async () => {
      const victim = await volume(64);
      const v = await volume(16);
      const victimGroup = `1/${Number(execFileSync('btrfs', ['inspect-internal', 'rootid', victim.dir], { encoding: 'utf8' }))}`;
      // The kernel lets any user name any existing group (it refuses only one that does not exist).
      expect(asTenant(`btrfs subvolume create -i ${victimGroup} ${v.dir}/away`).ok).toBe(true);
      expect(tenantWrites(path.join(v.dir, 'away/f'), 24)).toBe(24);

      const state = await backend.open();

      expect(state.escapes).toEqual([{ volume: v.id, what: expect.stringMatching(/inside volume .* counted to 1\/\d+, not to the volume's 1\/\d+; moved into it/) }]);
      expect(state.volumes.get(v.id)!.usedBytes).toBeGreaterThanOrEqual(24 * MiB);
      expect(state.volumes.get(victim.id)!.usedBytes).toBeLessThan(MiB);
      // Over its limit now: the tenant writes nothing more, anywhere in its volume.
      expect(tenantWrites(path.join(v.dir, 'away/g'), 8)).toBe(0);
      expect(tenantWrites(path.join(v.dir, 'g'), 8)).toBe(0);
      expect((await backend.open()).escapes).toEqual([]);
    });

    test('is known by its identity: a subvolume a tenant names like another volume inside its own changes nothing of that volume\'s figures', async () => {
      const other = await volume(64);
      const v = await volume(16);
      expect(asTenant(`btrfs subvolume create ${v.dir}/${other.name}`).ok).toBe(true);
      tenantWrites(path.join(v.dir, other.name, 'f'), 8);
      const state = await backend.open();
      expect(state.volumes.get(other.id)).toMatchObject({ limitBytes: 64 * MiB, usedBytes: expect.any(Number) });
      expect(state.volumes.get(other.id)!.usedBytes).toBeLessThan(MiB);
      expect(state.volumes.get(v.id)!.usedBytes).toBeGreaterThanOrEqual(8 * MiB);
    });

    test('made after one of another size, is limited to its own size', async () => {
      await volume(8);
      const v = await volume(32);
      expect(await usage(v.id)).toMatchObject({ limitBytes: 32 * MiB });
      expect(quotaGroups(pool).get(`1/${subvolumeId(v.dir)}`)!.limit).toBe(32 * MiB);
      expect(tenantWrites(path.join(v.dir, 'f'), 24)).toBe(24);
    });

    test('gets a group of its own ID, with its limit, when a subvolume made meanwhile took the ID its group was made for', async () => {
      const before = await volume(8);
      // The kernel gives the next ID to the tenant's subvolume, which joins its own volume's group.
      expect(asTenant(`btrfs subvolume create ${before.dir}/took`).ok).toBe(true);
      const took = subvolumeId(path.join(before.dir, 'took'));

      const v = await volume(16);

      const id = subvolumeId(v.dir);
      expect(id).toBeGreaterThan(took);
      const groups = quotaGroups(pool);
      expect(groups.get(`0/${id}`)!.parents).toEqual([`1/${id}`]);
      expect(groups.get(`1/${id}`)!.limit).toBe(16 * MiB);
      expect(groups.get(`0/${took}`)!.parents).toEqual([`1/${subvolumeId(before.dir)}`]);
      expect(groups.has(`1/${took}`)).toBe(false);
      expect(await usage(v.id)).toMatchObject({ limitBytes: 16 * MiB });
    });

    test('a subvolume its tenant makes naming the group made ahead for the next volume, taking that ID, is no volume: it is put back under its own volume\'s limit, and the next volume gets a group of its own', async () => {
      const v = await volume(16);
      const nextId = subvolumeId(v.dir) + 1;
      await eventually(() => quotaGroups(pool).has(`1/${nextId}`));
      // The tenant guesses the next ID and names its group: its subvolume gets that ID, in that group.
      const ahead = path.join(v.dir, 'ahead');
      expect(asTenant(`btrfs subvolume create -i 1/${nextId} ${ahead}`).ok).toBe(true);
      expect(subvolumeId(ahead)).toBe(nextId);
      const aheadUuid = /^\s*UUID:\s+(\S+)/m.exec(execFileSync('btrfs', ['subvolume', 'show', ahead], { encoding: 'utf8' }))![1];
      expect(tenantWrites(path.join(ahead, 'f'), 12)).toBe(12);
      const after = await volume(64);
      expect((await backend.inspect()).volumes.has(aheadUuid)).toBe(false);

      const state = await backend.open();

      expect(state.escapes).toEqual([{ volume: v.id, what: expect.stringMatching(/inside volume .* counted to 1\/\d+, not to the volume's 1\/\d+; moved into it/) }]);
      expect(state.volumes.has(aheadUuid)).toBe(false);
      expect(state.volumes.get(v.id)!.usedBytes).toBeGreaterThanOrEqual(12 * MiB);
      const afterId = subvolumeId(after.dir);
      expect(afterId).not.toBe(nextId);
      expect(quotaGroups(pool).get(`0/${afterId}`)!.parents).toEqual([`1/${afterId}`]);
      expect(state.volumes.get(after.id)).toEqual({ limitBytes: 64 * MiB, usedBytes: expect.any(Number) });
      expect(state.volumes.get(after.id)!.usedBytes).toBeLessThan(MiB);
    });

    test('is resized by its identity, its limit raised', async () => {
      const v = await volume(8);
      expect(await backend.resize(v.id, 32 * MiB)).toBe(true);
      expect(await usage(v.id)).toMatchObject({ limitBytes: 32 * MiB });
      expect(tenantWrites(path.join(v.dir, 'f'), 24)).toBe(24);
    });
  });

  describe('destroying a volume', () => {
    test('removes it and its quota group, and is done when it is gone already', async () => {
      const v = await volume(8);
      fs.writeFileSync(path.join(v.dir, 'data'), 'tenant data');
      await backend.destroy(v.id);
      expect(fs.existsSync(v.dir)).toBe(false);
      expect((await backend.open()).volumes.has(v.id)).toBe(false);
      await backend.destroy(v.id);
    });

    test('removes what a hostile tenant left: nested subvolumes, a read-only snapshot, immutable and append-only ones, a deep tree, a full volume', async () => {
      const v = await volume(32);
      const made = asTenant([
        `btrfs subvolume create ${v.dir}/n1`, `btrfs subvolume create ${v.dir}/n1/n2`, `btrfs subvolume snapshot -r ${v.dir}/n1 ${v.dir}/ro`,
        `mkdir -p ${v.dir}/deep/${'d/'.repeat(300)}`, `mkdir ${v.dir}/appdir`, `btrfs subvolume create ${v.dir}/appdir/n3`,
        `echo x > ${v.dir}/imm`, `echo x > ${v.dir}/appdir/log`, `: > ${v.dir}/fill`,
      ].join(' && '));
      expect(made).toEqual({ ok: true, output: expect.not.stringMatching(/ERROR/) });
      // A tenant with CAP_LINUX_IMMUTABLE (a privileged pod) flags its files, a directory, and subvolumes, one inside the other.
      for (const [flag, at] of [['+i', 'imm'], ['+a', 'appdir/log'], ['+a', 'appdir'], ['+i', 'n1/n2'], ['+i', 'n1'], ['+i', '.']]) {
        execFileSync('chattr', [flag, path.join(v.dir, at)]);
      }
      // A read-only snapshot of an immutable subvolume is immutable too (its flags cannot change until it is writable).
      execFileSync('btrfs', ['subvolume', 'snapshot', '-r', path.join(v.dir, 'n1'), path.join(v.dir, 'appdir', 'frozen')]);
      // Full, too: deleting needs room in its quota group.
      expect(tenantWrites(path.join(v.dir, 'fill'), 64)).toBeLessThan(32);

      await backend.destroy(v.id);

      expect(fs.existsSync(v.dir)).toBe(false);
      expect(execFileSync('btrfs', ['subvolume', 'list', pool], { encoding: 'utf8' })).not.toContain(v.name);
    });

    test('waits while the volume is in use: mounted elsewhere (a pod\'s mount its container did not give up), it names the mount', async () => {
      const v = await volume(8);
      const elsewhere = makeTempDir('lvp-pod-mount-');
      mount(v.dir, elsewhere, { bind: true });
      expect(await backend.users(v.name)).toEqual([expect.stringContaining(`mounted at ${elsewhere}`)]);
      execFileSync('umount', [elsewhere]);
      expect(await backend.users(v.name)).toEqual([]);
    });

    test('follows no symlink: one swapped in under its name to another tenant\'s volume leaves that volume whole', async () => {
      const a = await volume(8);
      const b = await volume(8);
      fs.writeFileSync(path.join(a.dir, 'data'), 'tenant A');
      fs.renameSync(b.dir, path.join(pool, 'moved'));
      fs.symlinkSync(a.dir, b.dir);
      await backend.destroy(b.id);
      expect(fs.readFileSync(path.join(a.dir, 'data'), 'utf8')).toBe('tenant A');
      expect(fs.existsSync(path.join(pool, 'moved'))).toBe(false);
      fs.unlinkSync(b.dir);
    });
  });

  test('a plain directory or a symlink under a volume\'s name is never taken for a volume', async () => {
    const a = await volume(8);
    const name = volumeName();
    fs.mkdirSync(path.join(pool, name));
    await expect(backend.create(name, 8 * MiB)).rejects.toThrow(/is not a subvolume; it is left alone/);
    fs.rmdirSync(path.join(pool, name));
    fs.symlinkSync(a.dir, path.join(pool, name));
    await expect(backend.create(name, 8 * MiB)).rejects.toThrow(/is not a subvolume; it is left alone/);
    expect(await backend.identityAt(name)).toBeUndefined();
    fs.unlinkSync(path.join(pool, name));
  });

  test('only names of the form pvc-<claim UID> are pool volumes: no path can be smuggled in', async () => {
    expect(isPoolVolumeName(volumeName())).toBe(true);
    expect(isPoolVolumeName('../etc')).toBe(false);
    expect(isPoolVolumeName(`${volumeName()}/..`)).toBe(false);
    await expect(backend.create('../etc', MiB)).rejects.toThrow(/not the name of a pool volume/);
  });

  test('plan shows a pool class with its volumes and what a new one could have, and says why one cannot be used', async () => {
    const config = resolveProvisionerConfig({
      storageClassMap: {
        'local-pool': { hostDir: pool, mountDir: pool, pool: 'btrfs' },
        'not-btrfs': { hostDir: makeTempDir('lvp-plan-'), mountDir: makeTempDir('lvp-plan-'), pool: 'btrfs' },
      },
    });
    if (!config.ok) throw new Error(JSON.stringify(config.errors));
    const configDir = makeTempDir('lvp-plan-config-');
    for (const [key, value] of Object.entries(serializeProvisionerConfig(config.config))) fs.writeFileSync(path.join(configDir, key), value);
    const before = (await backend.inspect()).volumes.size;
    const plan = await makePlan({ configDir, pvSpecDir: '', nodeName: 'worker-1', output: 'table' });
    expect(plan.volumes).toEqual([]);
    expect(plan.pools).toEqual([
      { storageClass: 'local-pool', path: pool, backend: 'btrfs', volumes: before, available: expect.stringMatching(/^\d+Mi$/) },
      { storageClass: 'not-btrfs', path: expect.any(String), backend: 'btrfs', volumes: 0, note: expect.stringContaining('is not on a btrfs filesystem') },
    ]);
    expect(formatPlan(plan, 'table')).toContain(`Pool class local-pool (btrfs) at ${pool}: ${before} volume(s)`);
  });

  test('a directory not on btrfs is no pool', async () => {
    await expect(new BtrfsPool(makeTempDir('lvp-not-btrfs-')).open()).rejects.toThrow(/not on a btrfs filesystem/);
  });
});

describePrivileged('a btrfs pool\'s agent killed while making volumes', () => {
  let pool: string;
  let work: string;
  beforeAll(async () => {
    const loop = createLoopDevice(512 * MiB);
    mkfsBtrfs(loop.device);
    pool = makeTempDir('lvp-btrfs-kill-');
    mount(loop.device, pool, { type: 'btrfs' });
    await new BtrfsPool(pool).open();
    // The agent's part as one file a child node runs, and a btrfs on its PATH that counts
    // each command and kills the child (-9) once the command it was told to has run.
    work = makeTempDir('lvp-btrfs-kill-work-');
    execFileSync(process.execPath, [require.resolve('esbuild/bin/esbuild'), path.join(__dirname, '../../../src/runtime/pool/btrfs.ts'), '--bundle',
      '--platform=node', '--format=cjs', '--log-level=warning', `--outfile=${path.join(work, 'btrfs.js')}`]);
    fs.mkdirSync(path.join(work, 'bin'));
    fs.writeFileSync(path.join(work, 'bin', 'btrfs'), [
      '#!/bin/sh',
      'exec 9>>"$LOG.lock"; flock 9; n=$(( $(cat "$LOG.count" 2>/dev/null || echo 0) + 1 )); echo $n > "$LOG.count"; echo "start $n" >> "$LOG"; exec 9>&-',
      '"$REAL_BTRFS" "$@"; rc=$?',
      'echo "end $n" >> "$LOG"',
      '[ "$n" = "$KILL_AFTER" ] && kill -9 "$AGENT_PID"',
      'exit $rc',
      '',
    ].join('\n'), { mode: 0o755 });
  });
  afterAll(cleanupPrivileged);

  /** Two volumes made by a child agent killed after its `killAfter`th btrfs command (0: never); how many commands it ran. */
  async function makeAndKill(names: readonly [string, string], killAfter: number): Promise<number> {
    const log = path.join(work, `log-${killAfter}`);
    // Its pid in its environment, which the command shells that run btrfs for it inherit.
    const script = `process.env.AGENT_PID = String(process.pid); const { BtrfsPool } = require(${JSON.stringify(path.join(work, 'btrfs.js'))});
      (async () => { const pool = new BtrfsPool(${JSON.stringify(pool)}); await pool.create(${JSON.stringify(names[0])}, ${8 * MiB}); await pool.create(${JSON.stringify(names[1])}, ${16 * MiB}); })()
        .catch((e) => { console.error(e); process.exitCode = 3; });`;
    const env = {
      ...process.env,
      PATH: `${path.join(work, 'bin')}:${process.env.PATH}`,
      LOG: log,
      KILL_AFTER: String(killAfter),
      REAL_BTRFS: execFileSync('sh', ['-c', 'command -v btrfs'], { encoding: 'utf8' }).trim(),
    };
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env });
    expect(killAfter === 0 ? child.status : child.signal).toBe(killAfter === 0 ? 0 : 'SIGKILL');
    // Its command shells outlive it, each finishing the command it runs (one it had begun to hand over included): the pool is
    // looked at once every process that inherited its environment has ended.
    const left = () => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).some((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/environ`, 'utf8').includes(`\0LOG=${log}\0`);
      } catch {
        return false; // ended meanwhile
      }
    });
    await eventually(() => !left());
    return fs.readFileSync(log, 'utf8').trim().split('\n').filter((l) => l.startsWith('start')).length;
  }

  /** Whatever is under `name` is a subvolume in a group of its own ID, its only group, limited to `limit`. */
  function limitedOrAbsent(name: string, limit: number): void {
    const at = path.join(pool, name);
    if (!fs.existsSync(at)) return;
    const id = subvolumeId(at);
    const groups = quotaGroups(pool);
    expect(fs.statSync(at).ino).toBe(256);
    expect({ name, parents: groups.get(`0/${id}`)?.parents, limit: groups.get(`1/${id}`)?.limit }).toEqual({ name, parents: [`1/${id}`], limit });
  }

  test('at any point leaves each volume\'s name showing nothing or the volume with its limit, and the next agent finishes both and leaves nothing else', async () => {
    const commands = await makeAndKill([volumeName(), volumeName()], 0);
    for (let killAfter = 1; killAfter <= commands; killAfter++) {
      const names = [volumeName(), volumeName()] as const;
      await makeAndKill(names, killAfter);
      limitedOrAbsent(names[0], 8 * MiB);
      limitedOrAbsent(names[1], 16 * MiB);

      const again = new BtrfsPool(pool);
      const before = await again.open();
      expect(fs.readdirSync(pool).filter((n) => n.startsWith('.'))).toEqual([]);
      const ids = [await again.create(names[0], 8 * MiB), await again.create(names[1], 16 * MiB)];
      const state = await again.open();
      expect({ killAfter, limits: ids.map((id) => state.volumes.get(id)?.limitBytes) }).toEqual({ killAfter, limits: [8 * MiB, 16 * MiB] });
      limitedOrAbsent(names[0], 8 * MiB);
      limitedOrAbsent(names[1], 16 * MiB);
      expect(state.volumes.size).toBe(before.volumes.size + ids.filter((id) => !before.volumes.has(id)).length);
      // Besides the volumes' groups, at most the one made ahead for the next ID, empty.
      const highest = Math.max(...execFileSync('btrfs', ['subvolume', 'list', pool], { encoding: 'utf8' }).trim().split('\n').map((l) => Number(/^ID (\d+)/.exec(l)![1])));
      const others = [...quotaGroups(pool)].filter(([g, q]) => g.startsWith('1/') && !q.children.includes(`0/${g.slice(2)}`))
        .map(([g, q]) => ({ group: Number(g.slice(2)) > highest ? 'ahead' : g, members: q.children }));
      expect({ killAfter, others }).toEqual({ killAfter, others: others.length === 0 ? [] : [{ group: 'ahead', members: [] }] });
    }
  });
});

describePrivileged('a btrfs pool\'s quotas', () => {
  let pool: string;
  let backend: BtrfsPool;
  beforeEach(() => {
    const loop = createLoopDevice(256 * MiB);
    mkfsBtrfs(loop.device);
    pool = makeTempDir('lvp-btrfs-quota-');
    mount(loop.device, pool, { type: 'btrfs' });
    backend = new BtrfsPool(pool);
  });
  afterEach(cleanupPrivileged);

  test('off on a pool without volumes: the agent turns simple quotas on', async () => {
    await backend.open();
    expect(fs.readdirSync('/sys/fs/btrfs').some((uuid) => {
      try {
        return fs.readFileSync(`/sys/fs/btrfs/${uuid}/qgroups/mode`, 'utf8').trim() === 'squota' && pool !== '';
      } catch {
        return false;
      }
    })).toBe(true);
  });

  test('in full mode, where a tenant\'s subvolume counts against nothing: refused, saying how to switch', async () => {
    execFileSync('btrfs', ['quota', 'enable', pool]);
    await expect(backend.open()).rejects.toThrow(/count in full mode.*needs simple quotas/);
  });

  test('turned off between the look at the pool and a volume\'s making: the volume is not given its name, and is made with its limit once they are on again', async () => {
    await backend.open();
    const before = volumeName();
    await backend.create(before, 8 * MiB);
    // The group for the next volume, made ahead, is there when quotas go off.
    const nextId = subvolumeId(path.join(pool, before)) + 1;
    await eventually(() => quotaGroups(pool).get(`1/${nextId}`)?.limit === 8 * MiB);
    execFileSync('btrfs', ['quota', 'disable', pool]);
    const name = volumeName();

    await expect(backend.create(name, 8 * MiB)).rejects.toThrow(/quota group 1\/\d+ is not there limited to 8388608 bytes under simple quotas/);

    expect(fs.existsSync(path.join(pool, name))).toBe(false);
    execFileSync('btrfs', ['quota', 'enable', '--simple', pool]);
    await backend.open();
    expect(fs.readdirSync(pool).filter((n) => n.startsWith('.'))).toEqual([]);
    const id = await backend.create(name, 8 * MiB);
    expect((await backend.open()).volumes.get(id)).toMatchObject({ limitBytes: 8 * MiB });
  });

  test('turned off by an administrator under volumes: refused, and once on again each volume gets its limit back by its identity, with the subvolumes in it', async () => {
    await backend.open();
    const name = volumeName();
    const id = await backend.create(name, 16 * MiB);
    execFileSync('btrfs', ['subvolume', 'create', path.join(pool, name, 'inner')]);
    execFileSync('btrfs', ['quota', 'disable', pool]);

    await expect(backend.open()).rejects.toThrow(/quotas were turned off .* its volumes have no limit now; nothing is provisioned until they are on again/);

    execFileSync('btrfs', ['quota', 'enable', '--simple', pool]);
    // Known by the record, it is one of the pool's volumes still, with no limit now.
    const recorded = new BtrfsPool(pool, () => [id]);
    expect((await recorded.open()).volumes.get(id)).toEqual({ usedBytes: expect.any(Number) });
    expect((await backend.open()).volumes.has(id)).toBe(false);
    expect(await backend.resize(id, 16 * MiB)).toBe(true);
    expect((await recorded.open()).volumes.get(id)).toMatchObject({ limitBytes: 16 * MiB });
    const groups = JSON.parse(execFileSync('btrfs', ['--format', 'json', 'qgroup', 'show', '-p', '--raw', pool], { encoding: 'utf8' }))['qgroup-show'] as
      Array<{ qgroupid: string; parents: string[] }>;
    const inner = execFileSync('btrfs', ['inspect-internal', 'rootid', path.join(pool, name, 'inner')], { encoding: 'utf8' }).trim();
    const volumeId = execFileSync('btrfs', ['inspect-internal', 'rootid', path.join(pool, name)], { encoding: 'utf8' }).trim();
    expect(groups.find((g) => g.qgroupid === `0/${inner}`)!.parents).toEqual([`1/${volumeId}`]);
  });
});
