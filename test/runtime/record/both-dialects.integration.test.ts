/**
 * Both dialects' agents on one node, sharing its volume record (as the construct's two
 * DaemonSets share the state directory): a disk both can reach is claimed once, whichever
 * agent passes first, and also when both pass at the same moment, before either has seen
 * the other's PV.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { cleanupPrivileged, createLoopDevice, describePrivileged, LoopDevice, makeTempDir } from '../../support/privileged';
import { blockSpec, DeviceFixture } from '../devices/fixture';
import { ControllerFixture } from '../static/fixture';

const MiB = 1024 * 1024;

describePrivileged('both dialects on one node, one disk', () => {
  let directory: ControllerFixture | undefined;
  let devices: DeviceFixture | undefined;
  afterEach(async () => {
    await devices?.stop();
    await directory?.stop();
    devices = undefined;
    directory = undefined;
  });
  afterAll(cleanupPrivileged);

  /** Both agents over one server and one state directory; the disk is in the directory dialect's Block class and in the device dialect's deviceDir. */
  async function bothAgents(): Promise<{ disk: LoopDevice }> {
    const stateDir = makeTempDir('lvp-state-');
    directory = await ControllerFixture.start({ classes: { 'local-block': { volumeMode: 'Block' } }, stateDir });
    devices = await DeviceFixture.start({ server: directory.server, stateDir, defaultPvSpecConfigMap: 'spec' });
    await devices.setSpec('spec', blockSpec(devices.deviceDir));
    const disk = createLoopDevice(8 * MiB);
    fs.symlinkSync(disk.device, path.join(directory.dirs['local-block'], 'disk1'));
    fs.symlinkSync(disk.device, path.join(devices.deviceDir, 'sda'));
    return { disk };
  }

  function pvsOfDisk(): Promise<V1PersistentVolume[]> {
    return directory!.server.list<V1PersistentVolume>('v1', 'PersistentVolume');
  }

  test('the directory dialect first: the device dialect does not offer the disk again', async () => {
    await bothAgents();
    expect((await directory!.pass()).created).toHaveLength(1);
    expect(await devices!.pass()).toMatchObject({ created: [] });
    expect((await pvsOfDisk()).map((pv) => pv.spec?.storageClassName)).toEqual(['local-block']);
  });

  test('the device dialect first: the directory dialect does not offer the disk again', async () => {
    await bothAgents();
    expect(await devices!.pass()).toMatchObject({ created: ['local-worker-1-sda'] });
    expect((await directory!.pass()).created).toEqual([]);
    expect((await pvsOfDisk()).map((pv) => pv.spec?.storageClassName)).toEqual(['local-storage']);
  });

  test('both at the same moment, neither having seen the other\'s PV: one claim wins under the record\'s lock, one PV', async () => {
    for (let round = 0; round < 5; round++) {
      await bothAgents();
      const [fromDirectory, fromDevices] = await Promise.all([directory!.pass(), devices!.pass()]);
      const created = [...fromDirectory.created, ...('created' in fromDevices ? fromDevices.created : [])];
      expect([round, created.length, (await pvsOfDisk()).length]).toEqual([round, 1, 1]);
      await devices!.stop();
      await directory!.stop();
      devices = undefined;
      directory = undefined;
    }
  });
});
