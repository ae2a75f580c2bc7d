/**
 * Two `local-volume-provisioner node-cleanup` processes, as two replicas of the
 * Deployment, against a real control plane: one leader acts, and when it is killed
 * (kill -9, no chance to release the Lease) the other takes over once the Lease
 * expires.
 */
import * as path from 'node:path';
import type { V1Lease } from '@kubernetes/client-node';
import { NODE_CLEANUP_LEASE } from '../../../src/config';
import { AgentProcess } from '../../support/agent-process';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, makeTempDir } from '../../support/privileged';
import { eventually } from '../kube/fixtures';

// The Lease lasts 15 s: a takeover after kill -9 takes up to about 20 s; starting two
// bins through ts-node takes tens of seconds on a busy machine.

let server: Kubernetes;
const bins: AgentProcess[] = [];
afterEach(async () => {
  for (const bin of bins.splice(0)) if (bin.running) await bin.kill('SIGKILL');
  await server.reset();
});
afterAll(cleanupPrivileged);

function startReplica(kubeconfig: string, identity: string): AgentProcess {
  const bin = AgentProcess.start(['node-cleanup', '--listen-address', '127.0.0.1:0', '--stale-pv-discovery-interval', '200ms', '--storageclass-names', 'local-fast'], {
    KUBECONFIG: kubeconfig,
    MY_NAMESPACE: 'default',
    POD_NAME: identity,
  });
  bins.push(bin);
  return bin;
}

/** An Available local PV pinned to a node that does not exist. */
async function createPVOfGoneNode(name: string): Promise<void> {
  await server.create({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'local-fast',
      local: { path: `/mnt/disks/${name}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['gone-node'] }] }] } },
    },
  });
}

const holder = async () => (await server.get<V1Lease>('coordination.k8s.io/v1', 'Lease', NODE_CLEANUP_LEASE, 'default'))?.spec?.holderIdentity;
const pvExists = async (name: string) => await server.get('v1', 'PersistentVolume', name) !== undefined;
const deletedBy = (bin: AgentProcess, pv: string) => bin.logged('deleted PV of a gone node').some((r) => r.pv === pv);

test('of two replicas one leader deletes PVs of gone nodes, and the other takes over when the leader is killed', async () => {
  server = await Kubernetes.forSuite({ controllers: true });
  const kubeconfig = path.join(makeTempDir('lvp-node-cleanup-'), 'kubeconfig');
  await server.writeKubeconfig(kubeconfig);
  const replicas = { a: startReplica(kubeconfig, 'replica-a'), b: startReplica(kubeconfig, 'replica-b') };
  const log = () => `replica-a:\n${replicas.a.log()}\nreplica-b:\n${replicas.b.log()}`;

  await eventually(async () => (await holder()) !== undefined && (await holder()) !== '', `a replica holds the Lease (log so far:\n${log()})`, 60_000);
  const leaderId = (await holder())!;
  const [leader, follower] = leaderId === 'replica-a' ? [replicas.a, replicas.b] : [replicas.b, replicas.a];

  await createPVOfGoneNode('pv-first');
  await eventually(async () => !(await pvExists('pv-first')) && deletedBy(leader, 'pv-first'), `the leader deletes pv-first (log so far:\n${log()})`, 60_000);
  expect(follower.logged('deleted PV of a gone node')).toEqual([]);
  expect(await holder()).toBe(leaderId);

  await leader.kill('SIGKILL');
  await createPVOfGoneNode('pv-second');
  await eventually(async () => !(await pvExists('pv-second')) && deletedBy(follower, 'pv-second'),
    `the other replica takes over and deletes pv-second (log so far:\n${log()})`, 40_000);
  expect(await holder()).not.toBe(leaderId);

  expect(await follower.kill('SIGTERM')).toBe(0);
  // A replica stopped on purpose hands the Lease back at once.
  expect(await holder()).toBe('');
});
