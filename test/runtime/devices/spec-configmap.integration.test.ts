/**
 * The device dialect's PV spec ConfigMap, on real loop devices against the test
 * API server: which ConfigMap applies (Node annotation, else the default),
 * valid and invalid specs (upstream's own cases), and the filters.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { blockSpec, DeviceFixture, NODE_NAME } from './fixture';
import { upstreamDevicePVName } from '../../../src/runtime/pv';
import { cleanupPrivileged, describePrivileged, makeTempDir } from '../../support/privileged';


const pvName = (device: string) => upstreamDevicePVName(NODE_NAME, device);

describePrivileged('the device dialect\'s PV spec ConfigMap', () => {
  let fx: DeviceFixture;
  afterEach(async () => fx?.stop());
  afterAll(cleanupPrivileged);

  async function withDevices(options: { defaultPvSpecConfigMap?: string } = {}, names = ['sda', 'sdb', 'sdc']): Promise<void> {
    fx = await DeviceFixture.start(options);
    for (const n of names) fx.addDevice(n);
  }

  /** One pass that creates no PV and records exactly one Warning DeviceError on the Node; its message. */
  async function passWithOneDeviceError(): Promise<string> {
    await fx.pass();
    expect(await fx.serverPvNames()).toEqual([]);
    const events = await fx.nodeEvents('DeviceError');
    expect(events.map((e) => e.type)).toEqual(['Warning']);
    return events[0].message!;
  }

  describe('filters', () => {
    test('".*" gives every device a Block PV', async () => {
      await withDevices({ defaultPvSpecConfigMap: 'spec' });
      await fx.setSpec('spec', blockSpec(fx.deviceDir));
      await fx.pass();
      expect(await fx.serverPvNames()).toEqual(['sda', 'sdb', 'sdc'].map(pvName));
      const pv = (await fx.serverPv(pvName('sda')))!;
      expect(pv.spec?.volumeMode).toBe('Block');
      expect(pv.spec?.local?.path).toBe(path.join(fx.deviceDir, 'sda'));
      expect(pv.spec?.capacity?.storage).toBe('8Mi');
      expect(pv.spec?.local?.fsType).toBeUndefined();
    });

    test('"sd[ab]" gives two devices', async () => {
      await withDevices({ defaultPvSpecConfigMap: 'spec' });
      await fx.setSpec('spec', blockSpec(fx.deviceDir, { deviceNameFilter: 'sd[ab]' }));
      await fx.pass();
      expect(await fx.serverPvNames()).toEqual(['sda', 'sdb'].map(pvName));
    });

    test('".*" with Filesystem ext4 gives every device an ext4 PV', async () => {
      await withDevices({ defaultPvSpecConfigMap: 'spec' });
      await fx.setSpec('spec', blockSpec(fx.deviceDir, { volumeMode: 'Filesystem', fsType: 'ext4' }));
      await fx.pass();
      expect(await fx.serverPvNames()).toEqual(['sda', 'sdb', 'sdc'].map(pvName));
      for (const pv of await fx.serverPvs()) {
        expect(pv.spec?.volumeMode).toBe('Filesystem');
        expect(pv.spec?.local?.fsType).toBe('ext4');
      }
    });

    test('"sd[ab]" with Filesystem ext4 gives two ext4 PVs', async () => {
      await withDevices({ defaultPvSpecConfigMap: 'spec' });
      await fx.setSpec('spec', blockSpec(fx.deviceDir, { volumeMode: 'Filesystem', fsType: 'ext4', deviceNameFilter: 'sd[ab]' }));
      const pass = await fx.pass();
      // With the agent's Warnings and the pass beside the PVs: a device left out says why.
      const warnings = (await fx.recordedEvents()).filter((e) => e.type === 'Warning').map((e) => `${e.reason}: ${e.message}`);
      expect({ pvs: await fx.serverPvNames(), warnings, pass: pass.state }).toEqual({ pvs: ['sda', 'sdb'].map(pvName), warnings: [], pass: 'provisioned' });
      expect((await fx.serverPvs()).map((pv) => pv.spec?.local?.fsType)).toEqual(['ext4', 'ext4']);
    });

    test('the filter is matched against base names in subdirectories too (recursive walk)', async () => {
      fx = await DeviceFixture.start({ defaultPvSpecConfigMap: 'spec' });
      fx.addDevice('sda', undefined, path.join(fx.deviceDir, 'by-path'));
      await fx.setSpec('spec', blockSpec(fx.deviceDir, { deviceNameFilter: '^sd' }));
      await fx.pass();
      expect((await fx.serverPv(pvName('sda')))?.spec?.local?.path).toBe(path.join(fx.deviceDir, 'by-path', 'sda'));
    });
  });

  const valid: Array<[string, (dir: string) => Record<string, string>, { volumeMode: string; fsType?: string }]> = [
    ['Block', (dir) => blockSpec(dir), { volumeMode: 'Block' }],
    ['Filesystem ext4', (dir) => blockSpec(dir, { volumeMode: 'Filesystem', fsType: 'ext4' }), { volumeMode: 'Filesystem', fsType: 'ext4' }],
    ['Filesystem xfs', (dir) => blockSpec(dir, { volumeMode: 'Filesystem', fsType: 'xfs' }), { volumeMode: 'Filesystem', fsType: 'xfs' }],
    ['Filesystem btrfs', (dir) => blockSpec(dir, { volumeMode: 'Filesystem', fsType: 'btrfs' }), { volumeMode: 'Filesystem', fsType: 'btrfs' }],
    ['Block with a redundant fsType', (dir) => blockSpec(dir, { fsType: 'ext4' }), { volumeMode: 'Block' }],
    ['extra unknown keys', (dir) => blockSpec(dir, { 'somethingElse': 'x', 'team.example.owner': 'db' }), { volumeMode: 'Block' }],
  ];
  describe.each([
    ['the Node annotation', 'annotation'],
    ['the default ConfigMap', 'default'],
  ])('valid specs through %s', (_, via) => {
    test.each(valid)('%s: every device gets a PV with that spec', async (_name, data, want) => {
      await withDevices(via === 'default' ? { defaultPvSpecConfigMap: 'spec' } : {}, ['sda', 'sdb']);
      await fx.setSpec('spec', data(fx.deviceDir));
      if (via === 'annotation') await fx.annotate('spec');
      const result = await fx.pass();
      expect(result.state).toBe('provisioned');
      expect(await fx.serverPvNames()).toEqual(['sda', 'sdb'].map(pvName));
      for (const pv of await fx.serverPvs()) {
        expect(pv.spec?.volumeMode).toBe(want.volumeMode);
        expect(pv.spec?.local?.fsType).toBe(want.fsType);
        expect(pv.metadata?.annotations?.['local-pv-provisioner.cybozu.io/volumeMode']).toBe(want.volumeMode);
      }
      expect(await fx.nodeEvents('NoPVSpecConfigMap')).toEqual([]);
    });
  });

  test('the annotation wins over the default ConfigMap', async () => {
    await withDevices({ defaultPvSpecConfigMap: 'default-spec' }, ['sda']);
    await fx.setSpec('default-spec', blockSpec(fx.deviceDir));
    await fx.setSpec('node-spec', blockSpec(fx.deviceDir, { volumeMode: 'Filesystem', fsType: 'xfs' }));
    await fx.annotate('node-spec');
    await fx.pass();
    expect((await fx.serverPv(pvName('sda')))?.spec?.local?.fsType).toBe('xfs');
  });

  const invalid: Array<[string, (dir: string) => Record<string, string> | undefined, RegExp]> = [
    ['a ConfigMap name that does not exist', () => undefined, /ConfigMap local-storage\/spec .*does not exist/],
    ['a bad volumeMode', (dir) => blockSpec(dir, { volumeMode: 'block' }), /volumeMode.*"block"/],
    ['fsType ntfs', (dir) => blockSpec(dir, { volumeMode: 'Filesystem', fsType: 'ntfs' }), /fsType.*"ntfs"/],
    ['deviceDir missing', (dir) => omit(blockSpec(dir), 'deviceDir'), /deviceDir.*required/],
    ['volumeMode missing', (dir) => omit(blockSpec(dir), 'volumeMode'), /volumeMode.*required/],
    ['deviceNameFilter missing', (dir) => omit(blockSpec(dir), 'deviceNameFilter'), /deviceNameFilter.*required/],
    ['fsType missing with Filesystem', (dir) => blockSpec(dir, { volumeMode: 'Filesystem' }), /fsType.*required/],
    ['a relative deviceDir', () => blockSpec('dev/disk/by-path'), /deviceDir/],
    ['the regex "("', (dir) => blockSpec(dir, { deviceNameFilter: '(' }), /deviceNameFilter/],
  ];
  describe.each([
    ['the Node annotation', 'annotation'],
    ['the default ConfigMap', 'default'],
  ])('invalid specs through %s', (_, via) => {
    test.each(invalid)('%s: nothing is created and a Warning on the Node names the problem', async (_name, data, problem) => {
      await withDevices(via === 'default' ? { defaultPvSpecConfigMap: 'spec' } : {}, ['sda']);
      const d = data(fx.deviceDir);
      if (d) await fx.setSpec('spec', d);
      if (via === 'annotation') await fx.annotate('spec');
      const result = await fx.pass();
      expect(result.state).toBe('no-spec');
      expect(await fx.serverPvNames()).toEqual([]);
      const events = await fx.nodeEvents('NoPVSpecConfigMap');
      expect(events).toHaveLength(1);
      expect(events[0].type).toBe('Warning');
      expect(events[0].message).toMatch(problem);
      expect(events[0].message).toContain(via === 'annotation' ? 'Node annotation local-pv-provisioner.cybozu.io/pv-spec-configmap' : '--default-pv-spec-configmap');
    });
  });

  test('a deviceDir that does not exist: nothing is created and a Warning on the Node names it', async () => {
    await withDevices({ defaultPvSpecConfigMap: 'spec' }, ['sda']);
    const missing = path.join(fx.deviceDir, 'no-such-dir');
    await fx.setSpec('spec', blockSpec(missing));
    const message = await passWithOneDeviceError();
    expect(message).toContain(missing);
  });

  test('a deviceDir that is not a directory: nothing is created and a Warning on the Node names it', async () => {
    await withDevices({ defaultPvSpecConfigMap: 'spec' }, ['sda']);
    const file = path.join(makeTempDir(), 'a-file');
    fs.writeFileSync(file, 'not a directory');
    await fx.setSpec('spec', blockSpec(file));
    const message = await passWithOneDeviceError();
    expect(message).toContain(file);
  });

  test('a filter matching nothing: nothing is created and a Warning on the Node says the filter matched no device', async () => {
    await withDevices({ defaultPvSpecConfigMap: 'spec' }, ['sda']);
    await fx.setSpec('spec', blockSpec(fx.deviceDir, { deviceNameFilter: '^nvme' }));
    const message = await passWithOneDeviceError();
    expect(message).toContain('"^nvme"');
    expect(message).toContain(fx.deviceDir);
  });

  test('no annotation and no default: nothing is created and a Warning on the Node says so', async () => {
    await withDevices({}, ['sda']);
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    const result = await fx.pass();
    expect(result.state).toBe('no-spec');
    expect(await fx.serverPvNames()).toEqual([]);
    const events = await fx.nodeEvents('NoPVSpecConfigMap');
    expect(events).toHaveLength(1);
    expect(events[0].type).toBe('Warning');
    expect(events[0].message).toMatch(/no annotation local-pv-provisioner.cybozu.io\/pv-spec-configmap and no --default-pv-spec-configmap/);
  });

  test('a spec fixed after being invalid provisions on the next pass', async () => {
    await withDevices({ defaultPvSpecConfigMap: 'spec' }, ['sda']);
    await fx.setSpec('spec', blockSpec(fx.deviceDir, { volumeMode: 'block' }));
    expect((await fx.pass()).state).toBe('no-spec');
    await fx.setSpec('spec', blockSpec(fx.deviceDir));
    expect((await fx.pass()).state).toBe('provisioned');
    expect(await fx.serverPvNames()).toEqual([pvName('sda')]);
  });
});

function omit(data: Record<string, string>, key: string): Record<string, string> {
  const { [key]: _, ...rest } = data;
  return rest;
}
