/** The tests' control plane itself, for scale: kube-apiserver (with etcd) start to ready, and one list of 10 000 PVs. */
import { performance } from 'node:perf_hooks';
import { CoreV1Api } from '@kubernetes/client-node';
import { BenchCluster } from '../cluster';
import { millis, percentile, row } from '../table';
import { createAll } from './memory';

export async function controlPlane(): Promise<void> {
  const t0 = performance.now();
  const cluster = await BenchCluster.start();
  const start = performance.now() - t0;
  try {
    await createAll(cluster, 10_000);
    const core = cluster.k.plane.kubeConfig().makeApiClient(CoreV1Api);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      // A consistent read (from etcd), as an agent's relist is.
      const list = await core.listPersistentVolume({ resourceVersion: '' });
      if (list.items.length !== 10_000) throw new Error(`listed ${list.items.length} PVs`);
      times.push(performance.now() - t);
    }
    row(`Control plane (kube-apiserver ${await cluster.k.plane.version()}, etcd, controller manager, scheduler): start to ready, with this node and class`, millis(start));
    row('Control plane: list 10 000 PVs over HTTPS (JSON, parsed by client-node), median of 3', millis(percentile(times, 50)));
  } finally {
    await cluster.stop();
  }
}
