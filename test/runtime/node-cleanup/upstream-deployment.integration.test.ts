/**
 * Upstream's node-cleanup example Deployment with only the image changed
 * (../shared/reference/upstream-deployments.md, section 5): the bin started with
 * its exact args and no subcommand, under exactly its RBAC, enforced by a real
 * apiserver. It deletes the PVs of a gone node of the listed class only, meets
 * no 403, and keeps running. Our own `node-cleanup` subcommand under the same
 * RBAC elects a leader by default: it says it cannot, is not ready, and takes
 * over once the Lease rule is granted.
 */
import * as path from 'node:path';
import type { V1PersistentVolume } from '@kubernetes/client-node';
import { AgentProcess } from '../../support/agent-process';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, makeTempDir } from '../../support/privileged';
import { NODE_CLEANUP_ACCOUNT, NODE_CLEANUP_ARGS, renderNodeCleanupExample } from '../../support/upstream-deployments';
import { eventually } from '../kube/fixtures';

// Each case starts the bin through ts-node and waits for its passes: seconds each on a busy machine.

const UPSTREAM_ARGS = NODE_CLEANUP_ARGS;
const SERVICE_ACCOUNT = NODE_CLEANUP_ACCOUNT;
const USER = `system:serviceaccount:${SERVICE_ACCOUNT.namespace}:${SERVICE_ACCOUNT.name}`;

/** Upstream's rbac.yaml: the ServiceAccount, the ClusterRole and its binding, nothing else. */
const UPSTREAM_RBAC = renderNodeCleanupExample().filter((m) => m.kind !== 'Deployment');

let server: Kubernetes;
const bins: AgentProcess[] = [];
afterEach(async () => {
  for (const bin of bins.splice(0)) if (bin.running) await bin.kill('SIGKILL');
  await server.stop();
});
afterAll(cleanupPrivileged);

interface PVOptions {
  readonly node: string;
  readonly className: string;
  readonly reclaimPolicy?: 'Delete' | 'Retain';
}

async function createPV(name: string, options: PVOptions): Promise<void> {
  await server.create({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    // Annotated as the provisioner that made it annotates it: the PV controller then leaves a Released PV's
    // reclaim to that provisioner instead of failing it for want of an in-tree deleter.
    metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': `local-volume-provisioner-${options.node}` } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: options.className,
      persistentVolumeReclaimPolicy: options.reclaimPolicy ?? 'Delete',
      local: { path: `/mnt/disks/${name}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [options.node] }] }] } },
    },
  });
}

const pvPhase = async (name: string) => (await server.get<V1PersistentVolume>('v1', 'PersistentVolume', name))?.status?.phase;
const pvExists = async (name: string) => await server.get('v1', 'PersistentVolume', name) !== undefined;

/** Binds a claim to the PV and deletes it, so the PV controller makes the PV Released. */
async function release(name: string): Promise<void> {
  await server.bindNewClaim(name, `claim-${name}`);
  await server.delete('v1', 'PersistentVolumeClaim', `claim-${name}`, 'default');
  await eventually(async () => (await pvPhase(name)) === 'Released', `${name} is Released`);
}

/** A cluster with upstream's RBAC, a live node, a gone one, and local PVs of two classes on both. */
async function startCluster(): Promise<string> {
  server = await Kubernetes.start({ controllers: true });
  for (const object of UPSTREAM_RBAC) await server.create(object);
  await server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-here', labels: { 'kubernetes.io/hostname': 'node-here' } } });
  await createPV('nvme-gone-available', { node: 'node-gone', className: 'nvme-ssd-block' });
  await createPV('nvme-gone-released', { node: 'node-gone', className: 'nvme-ssd-block' });
  await createPV('nvme-gone-retained', { node: 'node-gone', className: 'nvme-ssd-block', reclaimPolicy: 'Retain' });
  await createPV('nvme-here', { node: 'node-here', className: 'nvme-ssd-block' });
  await createPV('hand-made-gone', { node: 'node-gone', className: 'hand-made' });
  await createPV('hand-made-gone-released', { node: 'node-gone', className: 'hand-made' });
  await release('nvme-gone-released');
  await release('nvme-gone-retained');
  await release('hand-made-gone-released');
  await eventually(async () => (await Promise.all(['nvme-gone-available', 'nvme-here', 'hand-made-gone'].map(pvPhase))).every((p) => p === 'Available'),
    'the other PVs are Available');
  const kubeconfig = path.join(makeTempDir('lvp-upstream-node-cleanup-'), 'kubeconfig');
  await server.writeKubeconfig(kubeconfig, USER);
  return kubeconfig;
}

/** The bin as the Deployment starts it: no command, the given args; only KUBECONFIG added (there is no in-cluster config here). */
function startBin(args: string[], kubeconfig: string): AgentProcess {
  const bin = AgentProcess.start(args, { KUBECONFIG: kubeconfig }, { containerEnv: true });
  bins.push(bin);
  return bin;
}

/** Every PV the bin should leave alone under upstream's rules. */
const KEPT = ['nvme-gone-retained', 'nvme-here', 'hand-made-gone', 'hand-made-gone-released'];

test('upstream\'s Deployment args and RBAC: the listed class\'s PVs of the gone node are deleted, nothing else, no 403, no exit', async () => {
  const kubeconfig = await startCluster();
  // Upstream listens on :8080; a test must not take a fixed port, so only the address is added.
  const bin = startBin([...UPSTREAM_ARGS, '--listen-address=127.0.0.1:0'], kubeconfig);

  // Ready after its first complete pass, which has looked at every PV.
  await bin.waitReady();
  // Deleted by then, and gone once the PV protection controller lets them go.
  await eventually(async () => !(await pvExists('nvme-gone-available')) && !(await pvExists('nvme-gone-released')), 'the PVs of the gone node are gone');
  for (const name of KEPT) expect([name, await pvExists(name)]).toEqual([name, true]);
  expect(await pvPhase('hand-made-gone-released')).toBe('Released');

  expect(server.denials(USER)).toEqual([]);
  expect(bin.logged('dialect chosen')).toEqual([expect.objectContaining({ command: 'node-cleanup', reason: expect.stringContaining('--storageclass-names') })]);
  expect(bin.errors()).toEqual([]);
  expect(bin.running).toBe(true);
  expect(await bin.stop()).toBe(0);
});

test('our node-cleanup subcommand under upstream\'s RBAC is not ready and says which Lease rule to add; granted it, it leads and cleans', async () => {
  const kubeconfig = await startCluster();
  const bin = startBin(['node-cleanup', ...UPSTREAM_ARGS, '--listen-address=127.0.0.1:0'], kubeconfig);

  const readyz = () => bin.get('/readyz').catch(() => ({ status: 0, body: '' }));
  await eventually(async () => (await readyz()).body.includes('leases'), `/readyz says the Lease is forbidden (log so far:\n${bin.log()})`, 60_000);
  const answer = await readyz();
  expect(answer.status).toBe(503);
  expect(answer.body).toContain('grant get, create and update on leases (coordination.k8s.io) in namespace default, or run one replica with --leader-elect=false');
  expect(bin.logged('not ready: a request is forbidden')).toEqual([expect.objectContaining({ condition: 'lease' })]);
  expect(await pvExists('nvme-gone-available')).toBe(true);

  await server.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'node-cleanup-leases', namespace: 'default' },
    rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
  });
  await server.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'node-cleanup-leases', namespace: 'default' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'node-cleanup-leases' },
    subjects: [{ kind: 'ServiceAccount', ...SERVICE_ACCOUNT }],
  });
  await bin.waitReady();
  await eventually(async () => !(await pvExists('nvme-gone-available')) && !(await pvExists('nvme-gone-released')), `the leader cleans (log so far:\n${bin.log()})`, 60_000);
  for (const name of KEPT) expect([name, await pvExists(name)]).toEqual([name, true]);
  expect(bin.running).toBe(true);
  expect(await bin.stop()).toBe(0);
});
