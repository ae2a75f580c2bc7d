/**
 * The device dialect end to end without an API server: devices found on loop
 * devices, named, planned against existing PVs, built into PV objects.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { dnsSubdomainProblem } from '../../../src/config';
import type { DeviceSpecConfig } from '../../../src/config';
import { deviceCandidates, discoverDevices, planProvisioning } from '../../../src/runtime/discovery';
import { assignDevicePVNames, buildDevicePV, type NodeInfo } from '../../../src/runtime/pv';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir } from '../../support/privileged';

const node: NodeInfo = { name: 'node1', uid: 'uid-1', labels: {} };

function spec(deviceDir: string): DeviceSpecConfig {
  return {
    storageClassName: 'local-storage',
    volumeMode: 'Block',
    fsType: '',
    deviceDir,
    deviceNameFilter: '.*',
    reclaimPolicy: 'Delete',
    wipeDevicesHoldingData: false,
    wipe: 'full',
  };
}

async function pvsFor(deviceDir: string) {
  const discovery = await discoverDevices(spec(deviceDir), { shouldProbe: () => false });
  const naming = assignDevicePVNames(node.name, discovery.devices);
  const plan = planProvisioning(deviceCandidates(naming.named, 'Block'), []);
  return { naming, pvs: plan.create.map((c) => buildDevicePV({ name: c.pvName, device: c.device, spec: spec(deviceDir), node })) };
}

describePrivileged('device dialect: devices to PV objects', () => {
  afterAll(cleanupPrivileged);

  test('a by-path style name becomes upstream\'s PV name, with the walked path and exact size', async () => {
    const dir = makeTempDir();
    const loop = createLoopDevice(1024 ** 3 + 5 * 1024);
    fs.symlinkSync(loop.device, path.join(dir, 'pci-0000:3c:00.0-sas-0x5000c500a1b2c3d4-lun-0'));
    const { pvs } = await pvsFor(dir);
    expect(pvs.map((pv) => [pv.metadata?.name, pv.spec?.local?.path, pv.spec?.capacity?.storage])).toEqual([
      ['local-node1-pci-0000-3c-00.0-sas-0x5000c500a1b2c3d4-lun-0', path.join(dir, 'pci-0000:3c:00.0-sas-0x5000c500a1b2c3d4-lun-0'), '1048581Ki'],
    ]);
  });

  test('a device named with every punctuation character gets a valid, fixed name', async () => {
    const dir = makeTempDir();
    const baseName = '!"#$%&\'()*+,-.:;<=>?@[\\]^_`{|}~';
    fs.symlinkSync(createLoopDevice(16 * 1024 * 1024).device, path.join(dir, baseName));
    const { pvs, naming } = await pvsFor(dir);
    expect(naming.named[0].fixed).toBe(true);
    expect(pvs[0].metadata?.name).toMatch(/^local-node1-[0-9a-f]{8}$/);
    expect(dnsSubdomainProblem(pvs[0].metadata!.name!)).toBeUndefined();
    expect(pvs[0].spec?.local?.path).toBe(path.join(dir, baseName));
  });

  test('two devices whose names collide get no PV, and the collision names both', async () => {
    const dir = makeTempDir();
    fs.symlinkSync(createLoopDevice(16 * 1024 * 1024).device, path.join(dir, 'sd_a'));
    fs.symlinkSync(createLoopDevice(16 * 1024 * 1024).device, path.join(dir, 'sd-a'));
    const { pvs, naming } = await pvsFor(dir);
    expect(pvs).toEqual([]);
    expect(naming.collisions).toEqual([{ name: 'local-node1-sd-a', paths: [path.join(dir, 'sd-a'), path.join(dir, 'sd_a')] }]);
  });
});
