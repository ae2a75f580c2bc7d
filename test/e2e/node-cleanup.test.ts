/**
 * End to end, a node deleted without `setPVOwnerRef`: the synthesized node-cleanup
 * Deployment, run with its args and env as its own ServiceAccount, removes the
 * PVs the node's agent left and, for the opted-in class, the claim bound to one.
 */
import * as path from 'node:path';
import { Duration } from 'cdk8s';
import { Cluster, NODE_NAME, synthesize } from './cluster';
import { directoryPVName } from '../../src/runtime/pv';
import { AgentProcess } from '../support/agent-process';
import { cleanupPrivileged, describePrivileged, makeMountPoint, makeTempDir } from '../support/privileged';


describePrivileged('end to end: node cleanup', () => {
  let cluster: Cluster;
  let agent: AgentProcess;
  let dir: string;

  beforeAll(async () => {
    dir = makeTempDir('lvp-e2e-gone-');
    for (const v of ['vol1', 'vol2']) makeMountPoint(path.join(dir, v));
    cluster = await Cluster.start(synthesize({
      storageClasses: [{ name: 'e2e-fs', hostDir: dir }],
      nodeCleanup: { storageClassNames: ['e2e-fs'], pvcDeletionDelay: Duration.seconds(1), stalePvDiscoveryInterval: Duration.seconds(1) },
    }));
    agent = cluster.startAgent('local-volume-provisioner');
    await agent.waitReady();
  });
  afterAll(async () => {
    await cluster?.stop();
    cleanupPrivileged();
  });

  test('the PVs of a deleted node go, and the claim of the opted-in class after the delay', async () => {
    const [free, used] = ['vol1', 'vol2'].map((v) => directoryPVName(v, NODE_NAME, 'e2e-fs'));
    await cluster.waitForPv(free, { phase: 'Available' });
    await cluster.waitForPv(used, { phase: 'Available' });
    const claim = await cluster.bindClaim(used);
    await cluster.waitForPv(used, { phase: 'Bound' });

    const cleaner = cluster.startAgent('local-volume-provisioner-node-cleanup', 'Deployment');
    // Ready: it holds or can read the Lease, so the waits below time its work, not its start.
    await cleaner.waitReady();
    // The node goes, and its agent with it.
    await agent.stop();
    await cluster.kubectl('delete', 'node', NODE_NAME);

    await cluster.until(() => cluster.pv(free) === undefined, 'the Available PV of the deleted node is deleted', 20_000);
    await cluster.until(() => cluster.get('PersistentVolumeClaim', claim, 'default') === undefined,
      'the claim bound to a PV of the deleted node is deleted', 20_000);
    expect(cleaner.child.exitCode).toBeNull();
  });

  test('every request of the agent and of node cleanup was allowed by the synthesized RBAC (no 403)', () => {
    expect(cluster.denials).toEqual([]);
  });
});
