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
