/**
 * End to end, the device dialect: the synthesized devices DaemonSet's agent
 * (`devices`, its `$(MY_NODE_NAME)` args expanded as kubelet does) against the
 * synthesized PV spec ConfigMap, with loop devices linked into the device
 * directory as /dev/disk/by-path links are.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Duration } from 'cdk8s';
import { Cluster, NODE_NAME, synthesize } from './cluster';
import { VolumeMode } from '../../src/constructs';
import { upstreamDevicePVName } from '../../src/runtime/pv';
import { AgentProcess } from '../support/agent-process';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsExt4, mount } from '../support/privileged';

const MiB = 1024 * 1024;


describePrivileged('end to end: device dialect', () => {
  let cluster: Cluster;
  let agent: AgentProcess;
  let deviceDir: string;

  beforeAll(async () => {
    deviceDir = makeTempDir('lvp-e2e-devices-');
    cluster = await Cluster.start(synthesize({
      devices: {
        specs: [{ name: 'e2e-nvme', storageClassName: 'e2e-nvme', volumeMode: VolumeMode.BLOCK, deviceDir, deviceNameFilter: '^pci-.*-nvme-' }],
        defaultSpec: 'e2e-nvme',
        pollingInterval: Duration.minutes(5),
      },
    }));
    agent = cluster.startAgent('local-volume-provisioner-devices');
    await agent.waitReady();
  });
  afterEach(() => {
    expect(agent.child.exitCode).toBeNull();
  });
  afterAll(async () => {
    await cluster?.stop();
    cleanupPrivileged();
  });

  test('the agent runs the devices subcommand with the node and namespace expanded into its args', () => {
    expect(agent.args).toEqual(expect.arrayContaining(['devices', `--node-name=${NODE_NAME}`, '--namespace-name=local-volume-provisioner', '--default-pv-spec-configmap=e2e-nvme']));
  });

  test('a blank device is provisioned at once (not at the 5-minute poll), and after use is wiped and offered again under a new UID', async () => {
    const loop = createLoopDevice(16 * MiB);
    const baseName = 'pci-0000:3c:00.0-nvme-1';
    fs.symlinkSync(loop.device, path.join(deviceDir, baseName));
    const name = upstreamDevicePVName(NODE_NAME, baseName);

    const first = await cluster.waitForPv(name, { phase: 'Available' });
    expect(first.spec).toMatchObject({ storageClassName: 'e2e-nvme', volumeMode: 'Block', local: { path: path.join(deviceDir, baseName) } });
    expect(first.spec!.capacity!.storage).toBe('16Mi');

    const claim = await cluster.bindClaim(name);
    await cluster.waitForPv(name, { phase: 'Bound' });
    mkfsExt4(loop.device);
    await cluster.deleteClaim(claim);
    const second = await cluster.waitForPv(name, { phase: 'Available', notUid: first.metadata!.uid });

    expect(second.metadata!.uid).not.toBe(first.metadata!.uid);
    expect(() => execFileSync('blkid', ['-p', loop.device], { stdio: 'pipe' })).toThrow();
  });

  test('a device holding a filesystem is neither provisioned nor wiped, and an Event says why', async () => {
    const loop = createLoopDevice(16 * MiB);
    mkfsExt4(loop.device);
    const data = makeTempDir('lvp-e2e-data-');
    mount(loop.device, data);
    fs.writeFileSync(path.join(data, 'precious.txt'), 'keep me');
    execFileSync('umount', [data]);
    const baseName = 'pci-0000:3c:00.0-nvme-2';
    fs.symlinkSync(loop.device, path.join(deviceDir, baseName));

    await cluster.until(() => cluster.events('DeviceHoldsData').some((e) => e.message?.includes(path.join(deviceDir, baseName))),
      'a DeviceHoldsData Event names the device');
    expect(cluster.pv(upstreamDevicePVName(NODE_NAME, baseName))).toBeUndefined();
    mount(loop.device, data);
    expect(fs.readFileSync(path.join(data, 'precious.txt'), 'utf8')).toBe('keep me');
  });

  test('every request the agent made was allowed by the synthesized RBAC (no 403)', () => {
    expect(cluster.denials).toEqual([]);
  });
});
