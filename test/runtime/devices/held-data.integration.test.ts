/**
 * What the device dialect adds to upstream, on real loop devices: a device
 * holding data is never wiped unless the spec says so, a mounted device is
 * never wiped, the device gauges count each device once and follow failures,
 * and `plan --pv-spec-dir` shows it all before anything happens.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { blockSpec, DeviceFixture, KiB, MiB, NODE_NAME, readBytes } from './fixture';
import { formatPlan, makePlan } from '../../../src/runtime/plan/run-plan';
import { upstreamDevicePVName } from '../../../src/runtime/pv';
import { cleanupPrivileged, describePrivileged, makeTempDir, mkfsExt4, mount, unmount } from '../../support/privileged';


const SIZE = 16 * MiB;
const pvName = (device: string) => upstreamDevicePVName(NODE_NAME, device);
const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');
/** ext4's superblock magic 0xEF53, little-endian at byte 1024 + 56. */
const hasExt4Magic = (file: string) => readBytes(file, 1024 + 56, 2).equals(Buffer.from([0x53, 0xef]));

/** A DOS (MBR) partition table with one Linux partition from sector 2048 to the end, as fdisk would write it (no fdisk here). */
function writeDosPartitionTable(device: string, sizeBytes: number): void {
  const mbr = Buffer.alloc(512);
  const entry = 446;
  mbr[entry + 4] = 0x83;
  mbr.writeUInt32LE(2048, entry + 8);
  mbr.writeUInt32LE(sizeBytes / 512 - 2048, entry + 12);
  mbr.writeUInt32LE(0x1234abcd, 440);
  mbr[510] = 0x55;
  mbr[511] = 0xaa;
  const fd = fs.openSync(device, 'r+');
  try {
    fs.writeSync(fd, mbr, 0, 512, 0);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

describePrivileged('device dialect: devices holding data, mounted devices, gauges and plan', () => {
  let fx: DeviceFixture;
  afterEach(async () => fx?.stop());
  afterAll(cleanupPrivileged);

  async function start(spec: Record<string, string> = {}): Promise<void> {
    fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
    await fx.setSpec('spec', blockSpec(fx.deviceDir, spec));
  }

  async function heldDataState(link: string): Promise<number | undefined> {
    return fx.metric('local_volume_provisioner_volume_state', { state: 'held-data', persistentvolume: '', path: link, storageclass: 'local-storage' });
  }

  test('each device counts once: available + error + held is every device of the node (a blank one, one holding data, a broken link; a second link to the first is no other device)', async () => {
    await start();
    const blank = fx.addDevice('sda', SIZE);
    mkfsExt4(fx.addDevice('sdb', SIZE).device);
    fs.symlinkSync('/nonexistent/disk', path.join(fx.deviceDir, 'sdc'));
    fs.symlinkSync(blank.device, path.join(fx.deviceDir, 'sdd'));
    await fx.pass();
    const held = await fx.metric('local_pv_provisioner_held_devices', { node: NODE_NAME });
    expect({ ...(await fx.deviceGauges()), held }).toEqual({ available: 1, error: 1, held: 1 });
  });

  test('a device holding an ext4 filesystem is neither wiped nor provisioned by default; its data survives byte for byte', async () => {
    await start();
    const disk = fx.addDevice('sda', SIZE);
    mkfsExt4(disk.device);
    const before = sha256(disk.backingFile);
    await fx.pass();
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([]);
    expect(sha256(disk.backingFile)).toBe(before);
    const events = await fx.nodeEvents('DeviceHoldsData');
    expect(events.map((e) => e.type)).toEqual(['Warning']);
    expect(events[0].message).toContain(disk.link);
    expect(events[0].message).toContain('ext4');
    expect(events[0].message).toContain('wipeDevicesHoldingData');
    expect(await heldDataState(disk.link)).toBe(1);
    // Held data is neither available nor an error.
    expect(await fx.deviceGauges()).toEqual({ available: 0, error: 0 });
  });

  test('with wipeDevicesHoldingData: "true" a device holding ext4 is wiped and provisioned', async () => {
    await start({ wipeDevicesHoldingData: 'true' });
    const disk = fx.addDevice('sda', SIZE);
    mkfsExt4(disk.device);
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([pvName('sda')]);
    expect(hasExt4Magic(disk.backingFile)).toBe(false);
    expect(readBytes(disk.backingFile, 0, 5 * KiB).every((b) => b === 0)).toBe(true);
    expect(execFileSync('wipefs', ['--no-act', '--noheadings', disk.device], { encoding: 'utf8' }).trim()).toBe('');
  });

  test('a partition table alone counts as data', async () => {
    await start();
    const disk = fx.addDevice('sda', SIZE);
    writeDosPartitionTable(disk.link, SIZE);
    const before = sha256(disk.backingFile);
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([]);
    expect(sha256(disk.backingFile)).toBe(before);
    expect((await fx.nodeEvents('DeviceHoldsData'))[0]?.message).toMatch(/dos|partition/i);
  });

  test.each([
    ['by default', {}],
    ['even with wipeDevicesHoldingData: "true"', { wipeDevicesHoldingData: 'true' }],
  ])('a mounted device is never wiped (%s)', async (_, spec) => {
    await start(spec);
    const disk = fx.addDevice('sda', SIZE);
    mkfsExt4(disk.device);
    const mnt = path.join(makeTempDir(), 'mnt');
    mount(disk.device, mnt, { type: 'ext4' });
    fs.writeFileSync(path.join(mnt, 'precious'), 'user data');
    execFileSync('sync');
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([]);
    unmount(mnt);
    expect(hasExt4Magic(disk.backingFile)).toBe(true);
    mount(disk.device, mnt, { type: 'ext4' });
    expect(fs.readFileSync(path.join(mnt, 'precious'), 'utf8')).toBe('user data');
    const warnings = [...await fx.nodeEvents('DeviceHoldsData'), ...await fx.nodeEvents('DeviceError')];
    expect(warnings.map((e) => e.message).join('\n')).toContain(disk.link);
  });

  test('a mounted device is reported as an error device when wiping holding data is allowed', async () => {
    await start({ wipeDevicesHoldingData: 'true' });
    const disk = fx.addDevice('sda', SIZE);
    mkfsExt4(disk.device);
    mount(disk.device, path.join(makeTempDir(), 'mnt'), { type: 'ext4' });
    await fx.pass();
    const events = await fx.nodeEvents('DeviceError');
    expect(events.map((e) => e.message)).toEqual([expect.stringContaining(`cannot wipe device ${disk.link}`)]);
    expect(await fx.deviceGauges()).toEqual({ available: 0, error: 1 });
  });

  test('a device whose first wipe is refused is claimed for no one after: once free, it is wiped before its PV, never offered as it was', async () => {
    await start({ wipeDevicesHoldingData: 'true' });
    const disk = fx.addDevice('sda', SIZE);
    mkfsExt4(disk.device);
    const mnt = path.join(makeTempDir(), 'mnt');
    mount(disk.device, mnt, { type: 'ext4' });
    fs.writeFileSync(path.join(mnt, 'precious'), 'user data');
    expect(await fx.pass()).toMatchObject({ created: [] });
    // The claim made before the wipe is given back as unknown, not as clean.
    expect(fx.keeper.record.entries()).toEqual([]);

    unmount(mnt);
    const name = upstreamDevicePVName(NODE_NAME, 'sda');
    expect(await fx.pass()).toMatchObject({ created: [name] });
    expect(readBytes(disk.backingFile, 0, 64 * KiB).every((b) => b === 0)).toBe(true);
    expect(fx.keeper.record.entries().map((e) => [e.hostPath, e.state])).toEqual([[disk.link, 'offered']]);
  });

  test('warnings about devices are recorded when they change, not on every pass, so they never crowd out other Node Events', async () => {
    await start();
    mkfsExt4(fx.addDevice('sda', SIZE).device);
    fs.symlinkSync('/dev/lvp-test-no-such-device', path.join(fx.deviceDir, 'sdz'));
    // Client-go's per-object limit lets 25 Events through at once, then one per 5 minutes.
    for (let i = 0; i < 30; i++) await fx.pass();
    expect((await fx.nodeEvents('DeviceHoldsData')).map((e) => e.count ?? 1)).toEqual([1]);
    expect((await fx.nodeEvents('DeviceError')).map((e) => e.count ?? 1)).toEqual([1]);
    await fx.setSpec('spec', blockSpec(fx.deviceDir, { volumeMode: 'block' }));
    await fx.pass();
    expect(await fx.nodeEvents('NoPVSpecConfigMap')).toHaveLength(1);
  });

  describe('the device gauges', () => {
    test('count each device once: offered devices as available, broken ones as errors, held data in neither', async () => {
      await start();
      fx.addDevice('sda');
      fx.addDevice('sdb');
      mkfsExt4(fx.addDevice('sdc', SIZE).device);
      fs.symlinkSync('/dev/lvp-test-no-such-device', path.join(fx.deviceDir, 'sdz'));
      await fx.pass();
      expect(await fx.deviceGauges()).toEqual({ available: 2, error: 1 });
      await fx.pass();
      expect(await fx.deviceGauges()).toEqual({ available: 2, error: 1 });
    });

    test('follow a failing pass: a device whose PV cannot be created is an error, and available once it is', async () => {
      await start();
      fx.addDevice('sda');
      await fx.pass();
      expect(await fx.deviceGauges()).toEqual({ available: 1, error: 0 });
      fx.addDevice('sdb');
      fx.server.faults.failNext({ verb: 'create', resource: 'persistentvolumes', code: 500, count: 1000 });
      await fx.pass();
      expect(await fx.serverPvNames()).toEqual([pvName('sda')]);
      expect(await fx.deviceGauges()).toEqual({ available: 1, error: 1 });
      expect((await fx.nodeEvents('ProvisioningFailed')).map((e) => e.message)).toEqual([expect.stringContaining(pvName('sdb'))]);
      fx.server.faults.clear();
      await fx.pass();
      expect(await fx.deviceGauges()).toEqual({ available: 2, error: 0 });
    });

    test('a node without a usable spec shows in config_last_reload_successful; config_reloads_total counts changes, not passes', async () => {
      await start({ volumeMode: 'block' });
      fx.addDevice('sda');
      await fx.pass();
      await fx.pass();
      expect(await fx.metric('local_volume_provisioner_config_last_reload_successful')).toBe(0);
      expect(await fx.metric('local_volume_provisioner_config_reloads_total', { result: 'failed' })).toBe(1);
      await fx.setSpec('spec', blockSpec(fx.deviceDir));
      await fx.pass();
      await fx.pass();
      expect(await fx.metric('local_volume_provisioner_config_last_reload_successful')).toBe(1);
      expect(await fx.metric('local_volume_provisioner_config_reloads_total', { result: 'ok' })).toBe(1);
      expect(await fx.deviceGauges()).toEqual({ available: 1, error: 0 });
    });

    test('are set when the node has no spec', async () => {
      fx = await DeviceFixture.start();
      fx.addDevice('sda');
      await fx.pass();
      expect(await fx.deviceGauges()).toEqual({ available: 0, error: 0 });
    });
  });

  describe('plan --pv-spec-dir', () => {
    function specDir(data: Record<string, string>): string {
      const dir = makeTempDir('lvp-pv-spec-');
      for (const [k, v] of Object.entries(data)) fs.writeFileSync(path.join(dir, k), v);
      return dir;
    }

    test('lists devices, names, capacities, signatures and what would be wiped, and why others would not', async () => {
      fx = await DeviceFixture.start();
      const sda = fx.addDevice('sda');
      const sdb = fx.addDevice('sdb', SIZE);
      mkfsExt4(sdb.device);
      fs.symlinkSync('/dev/lvp-test-no-such-device', path.join(fx.deviceDir, 'sdz'));
      fx.addDevice('sd_x');
      fx.addDevice('sd-x');
      const before = sha256(sdb.backingFile);
      const plan = await makePlan({ configDir: '', pvSpecDir: specDir(blockSpec(fx.deviceDir)), nodeName: NODE_NAME, output: 'table' });
      expect(plan.dialect).toBe('device');
      expect(plan.volumes).toEqual([{
        pvName: pvName('sda'), storageClass: 'local-storage', path: sda.link, volumeMode: 'Block', capacity: '8Mi', signatures: 'blank', action: 'wipe-and-provision',
      }]);
      const rejected = Object.fromEntries(plan.rejected.map((r) => [path.basename(r.path), r.reason]));
      expect(Object.keys(rejected).sort()).toEqual(['sd-x', 'sd_x', 'sdb', 'sdz']);
      expect(rejected.sdb).toContain('ext4');
      expect(rejected.sd_x).toContain(pvName('sd-x'));
      const table = formatPlan(plan, 'table');
      for (const text of [pvName('sda'), sda.link, '8Mi', 'wipe-and-provision (blank)', sdb.link, 'ext4']) expect(table).toContain(text);
      // plan touches nothing, talks to no cluster.
      expect(sha256(sdb.backingFile)).toBe(before);
      expect(await fx.serverPvNames()).toEqual([]);
    });

    test('with wipeDevicesHoldingData the device holding ext4 is listed as to be wiped, with its signature', async () => {
      fx = await DeviceFixture.start();
      const sdb = fx.addDevice('sdb', SIZE);
      mkfsExt4(sdb.device);
      const plan = await makePlan({
        configDir: '', pvSpecDir: specDir(blockSpec(fx.deviceDir, { wipeDevicesHoldingData: 'true' })), nodeName: NODE_NAME, output: 'json',
      });
      expect(plan.volumes).toEqual([expect.objectContaining({ pvName: pvName('sdb'), capacity: '16Mi', action: 'wipe-and-provision', signatures: expect.stringContaining('ext4') })]);
      expect(JSON.parse(formatPlan(plan, 'json')).volumes[0].signatures).toContain('ext4');
    });

    test('an invalid spec directory is an error naming every problem', async () => {
      await expect(makePlan({ configDir: '', pvSpecDir: specDir({ volumeMode: 'block' }), nodeName: NODE_NAME, output: 'table' }))
        .rejects.toThrow(/volumeMode[\s\S]*deviceDir[\s\S]*deviceNameFilter/);
    });
  });
});
