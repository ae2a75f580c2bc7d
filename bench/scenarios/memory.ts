/** The idle agent's memory and the bytes it receives, with and without many PVs of other nodes in the cluster. */
import * as path from 'node:path';
import { V1PersistentVolume } from '@kubernetes/client-node';
import { makeMountPoint, makeTempDir } from '../../test/support/privileged';
import { BenchCluster, CLASS, pvName, until } from '../cluster';
import { rssBytes } from '../process-stats';
import { mib, row } from '../table';

/** Creates `count` PVs of other nodes, 32 requests at a time (as the administrator, not through the proxy). */
export async function createAll(cluster: BenchCluster, count: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < count) await cluster.k.create(otherNodePv(next++));
  }));
}

/** PV number `i` of one of 500 other nodes, labelled as their agents label theirs. */
function otherNodePv(i: number): V1PersistentVolume {
  const node = `other-${i % 500}`;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `other-pv-${i}`, labels: { 'local.storage.k8s.io/node': node } },
    spec: {
      capacity: { storage: '100Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: CLASS,
      local: { path: `/mnt/disks/vol${i}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] }] } },
    },
  };
}

/** The idle agent with 10 volumes, with no other PVs or with `others` PVs of other nodes in the cluster. */
async function idle(others: number): Promise<{ rss: number; bytes: number; requests: number }> {
  const cluster = await BenchCluster.start();
  await createAll(cluster, others);
  const dir = makeTempDir('lvp-bench-idle-');
  for (let i = 0; i < 10; i++) makeMountPoint(path.join(dir, `vol${i}`));
  const before = cluster.k.counters.total();
  const agent = await cluster.startAgent(dir);
  try {
    await agent.waitReady();
    await until(() => Array.from({ length: 10 }, (_, i) => pvName(`vol${i}`)).every((n) => cluster.available(n)), 'the 10 PVs are Available');
    // Idle: past start-up, a few discovery periods (10 s each by default would be too long; 5 s shows the steady state).
    await new Promise((r) => setTimeout(r, 5000));
    const after = cluster.k.counters.total();
    return { rss: rssBytes(agent.child.pid!), bytes: after.bytes - before.bytes, requests: after.requests - before.requests };
  } finally {
    await agent.stop();
    await cluster.stop();
  }
}

export async function memoryWithOtherNodes(): Promise<void> {
  const none = await idle(0);
  const many = await idle(50_000);
  row('Idle agent RSS, 10 volumes, no other PVs', mib(none.rss));
  row('Idle agent RSS, 10 volumes, 50 000 PVs of other nodes', `${mib(many.rss)} (${(many.rss / none.rss).toFixed(2)}× none)`,
    'no more than with none (issue 4; within 10 % for allocator noise)', many.rss <= none.rss * 1.1);
  row('Bytes received from the API, start to 5 s idle, no other PVs', `${(none.bytes / 1024).toFixed(1)} KiB in ${none.requests} requests`);
  row('Bytes received from the API, start to 5 s idle, 50 000 PVs of other nodes', `${(many.bytes / 1024).toFixed(1)} KiB in ${many.requests} requests (${(many.bytes / none.bytes).toFixed(2)}× none)`,
    'no more than with none (issue 4; within 10 %)', many.bytes <= none.bytes * 1.1);
}
