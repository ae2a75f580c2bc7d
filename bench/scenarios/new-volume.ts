/** How soon a new volume is offered: a mount point (directory dialect) or a blank device (device dialect), made while the agent runs. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { upstreamDevicePVName } from '../../src/runtime/pv';
import { AgentProcess, bundledBin } from '../../test/support/agent-process';
import { createLoopDevice, makeMountPoint, makeTempDir } from '../../test/support/privileged';
import { BenchCluster, CLASS, IMAGE_NODE_OPTIONS, NAMESPACE, NODE, pvName, until } from '../cluster';
import { MiB, millis, percentile, row } from '../table';

/** With the agent running and ready: a new mount point to its PV Available, over `trials`. */
export async function newVolumeToAvailable(trials: number): Promise<void> {
  const cluster = await BenchCluster.start();
  const dir = makeTempDir('lvp-bench-new-');
  const agent = await cluster.startAgent(dir);
  try {
    await agent.waitReady();
    const times: number[] = [];
    for (let i = 0; i < trials; i++) {
      const entry = `new${i}`;
      fs.mkdirSync(path.join(dir, entry));
      const t0 = performance.now();
      makeMountPoint(path.join(dir, entry));
      await until(() => cluster.available(pvName(entry)), `PV of ${entry} is Available`, 30_000);
      times.push(performance.now() - t0);
    }
    const median = percentile(times, 50);
    row(`New mount point to PV Available, median of ${trials}`, millis(median), '≤ 1 s (issue 4; upstream polls every 10 s)', median <= 1000);
    row(`New mount point to PV Available, p99 of ${trials}`, millis(percentile(times, 99)));
  } finally {
    await agent.stop();
    await cluster.stop();
  }
}

/** The device dialect's agent running and ready: a new blank device linked into its directory to its PV Available. */
export async function newDeviceToAvailable(trials: number): Promise<void> {
  const cluster = await BenchCluster.start();
  const deviceDir = makeTempDir('lvp-bench-devices-');
  await cluster.k.create({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'bench-spec', namespace: NAMESPACE },
    data: { storageClassName: CLASS, volumeMode: 'Block', deviceDir, deviceNameFilter: '^disk-' },
  });
  const agent = AgentProcess.start(
    ['devices', '--node-name', NODE, '--namespace-name', NAMESPACE, '--default-pv-spec-configmap', 'bench-spec', '--metrics-addr', '127.0.0.1:0',
      '--state-dir', makeTempDir('lvp-bench-state-')],
    { KUBECONFIG: await cluster.kubeconfigFile(), NODE_OPTIONS: IMAGE_NODE_OPTIONS },
    { entry: [bundledBin()], containerEnv: true },
  );
  try {
    await agent.waitReady();
    const times: number[] = [];
    for (let i = 0; i < trials; i++) {
      const loop = createLoopDevice(16 * MiB);
      const name = upstreamDevicePVName(NODE, `disk-${i}`);
      const t0 = performance.now();
      fs.symlinkSync(loop.device, path.join(deviceDir, `disk-${i}`));
      await until(() => cluster.available(name), `PV of disk-${i} is Available`, 30_000);
      times.push(performance.now() - t0);
    }
    const median = percentile(times, 50);
    row(`New blank device to PV Available (device dialect), median of ${trials}`, millis(median), '≤ 1 s (issue 6; upstream polls every 5 min)', median <= 1000);
    row(`New blank device to PV Available (device dialect), p99 of ${trials}`, millis(percentile(times, 99)));
  } finally {
    await agent.stop();
    await cluster.stop();
  }
}
