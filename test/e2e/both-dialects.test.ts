/**
 * End to end, both dialects on one node, as the construct deploys them (both
 * DaemonSets with the same nodeSelector, one ServiceAccount): each agent
 * inspects, cleans and counts only its own PVs, and a disk one of them offers is
 * never offered by the other.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Duration } from 'cdk8s';
import { Cluster, NODE_NAME, synthesize } from './cluster';
import { VolumeMode } from '../../src/constructs';
import { directoryPVName, upstreamDevicePVName } from '../../src/runtime/pv';
import { AgentProcess } from '../support/agent-process';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeMountPoint, makeTempDir } from '../support/privileged';

const MiB = 1024 * 1024;


/** One series of a Prometheus text exposition, or undefined. */
function series(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

describePrivileged('end to end: both dialects on one node', () => {
  let cluster: Cluster;
  let directories: AgentProcess;
  let devices: AgentProcess;
  const fsDir = makeTempDir('lvp-e2e-both-fs-');
  const blockDir = makeTempDir('lvp-e2e-both-block-');
  const deviceDir = makeTempDir('lvp-e2e-both-devices-');

  beforeAll(async () => {
    cluster = await Cluster.start(synthesize({
      storageClasses: [
        { name: 'e2e-fs', hostDir: fsDir },
        { name: 'e2e-block', hostDir: blockDir, volumeMode: VolumeMode.BLOCK },
      ],
      devices: {
        specs: [{ name: 'e2e-nvme', storageClassName: 'e2e-nvme', volumeMode: VolumeMode.BLOCK, deviceDir, deviceNameFilter: '^nvme' }],
        defaultSpec: 'e2e-nvme',
        pollingInterval: Duration.minutes(5),
      },
    }));
    directories = cluster.startAgent('local-volume-provisioner');
    devices = cluster.startAgent('local-volume-provisioner-devices');
    await Promise.all([directories.waitReady(), devices.waitReady()]);
  });
  afterEach(() => {
    expect(directories.child.exitCode).toBeNull();
    expect(devices.child.exitCode).toBeNull();
  });
  afterAll(async () => {
    await cluster?.stop();
    cleanupPrivileged();
  });

  test('each agent offers its own volumes; neither reports the other\'s as missing, in error or in its gauges', async () => {
    makeMountPoint(path.join(fsDir, 'vol1'));
    fs.symlinkSync(createLoopDevice(8 * MiB).device, path.join(blockDir, 'disk1'));
    fs.symlinkSync(createLoopDevice(8 * MiB).device, path.join(deviceDir, 'nvme1'));
    const fsPv = directoryPVName('vol1', NODE_NAME, 'e2e-fs');
    const blockPv = directoryPVName('disk1', NODE_NAME, 'e2e-block');
    const devicePv = upstreamDevicePVName(NODE_NAME, 'nvme1');
    for (const name of [fsPv, blockPv, devicePv]) await cluster.waitForPv(name, { phase: 'Available' });
    // Both agents see all three PVs in their node cache; a pass of each after that.
    await cluster.until(async () => series((await devices.get('/metrics')).body, 'local_pv_provisioner_available_devices', `node="${NODE_NAME}"`) === 1,
      'the device agent counts its one device');

    const deviceMetrics = (await devices.get('/metrics')).body;
    expect(series(deviceMetrics, 'local_pv_provisioner_error_devices', `node="${NODE_NAME}"`)).toBe(0);
    expect(deviceMetrics).not.toMatch(/volume_state\{state="missing"/);
    expect(deviceMetrics).not.toContain(fsPv);
    expect((await directories.get('/metrics')).body).not.toContain(devicePv);
    expect(cluster.events('VolumeMissing')).toEqual([]);
  });

  test('a disk linked into a directory class and into deviceDir is offered once', async () => {
    const loop = createLoopDevice(8 * MiB);
    fs.symlinkSync(loop.device, path.join(blockDir, 'shared'));
    await cluster.waitForPv(directoryPVName('shared', NODE_NAME, 'e2e-block'), { phase: 'Available' });
    fs.symlinkSync(loop.device, path.join(deviceDir, 'nvme-shared'));
    await cluster.until(() => cluster.events('DuplicatePath').some((e) => e.message?.includes('nvme-shared')), 'the device agent says the disk is already a PV');
    expect(cluster.pv(upstreamDevicePVName(NODE_NAME, 'nvme-shared'))).toBeUndefined();
  });

  test('every request either agent made was allowed by the synthesized RBAC (no 403)', () => {
    expect(cluster.denials).toEqual([]);
  });
});
