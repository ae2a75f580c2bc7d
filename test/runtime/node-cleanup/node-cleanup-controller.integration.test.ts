/**
 * The node-cleanup controller against a real control plane with the real client: PVs of
 * deleted nodes, claims bound to them after the delay, and PVs that go with their Node
 * through the real garbage collector.
 */
import type { CoreV1Event, V1Node, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { EventRecorder } from '../../../src/runtime/kube/event-recorder';
import { NodeCleanupController, NodeCleanupSettings } from '../../../src/runtime/node-cleanup/node-cleanup-controller';
import { createLogger, ProvisionerMetrics } from '../../../src/runtime/observability';
import { nodeInfoOf, nodeOwnerReference } from '../../../src/runtime/pv';
import { Kubernetes } from '../../support/kubernetes';
import { eventually } from '../kube/fixtures';

const DELAY_MS = 60_000;
/** The node agent's finalizer on a PV whose volume still needs cleaning. */
const CLEANUP_FINALIZER = 'local.storage.k8s.io/cleanup';
const OPTED_IN = 'local-fast';

let server: Kubernetes;
let clock: number;
let metrics: ProvisionerMetrics;

beforeEach(async () => {
  server = await Kubernetes.forSuite({ controllers: true });
  clock = 1_000_000;
  metrics = new ProvisionerMetrics({ version: 'test', processMetrics: false });
});
afterEach(async () => {
  await server.reset();
});

/** The real client, with a hook run right after each claim is read (to change the cluster at that moment). */
class HookedApi extends KubeApi {
  afterClaimRead: () => void | Promise<void> = () => {};

  override async getPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
    const claim = await super.getPersistentVolumeClaim(namespace, name);
    await this.afterClaimRead();
    return claim;
  }
}
let api: HookedApi;
let events: EventRecorder;

function controller(settings: Partial<NodeCleanupSettings> = {}): NodeCleanupController {
  api = new HookedApi(server.kubeConfig(), { maxAttempts: 1 });
  events = new EventRecorder(api, { component: 'cleanup-controller' });
  return new NodeCleanupController(api, metrics, createLogger({ level: 'fatal' }), events, {
    storageClassNames: [OPTED_IN],
    pvcDeletionDelayMs: DELAY_MS,
    ...settings,
  }, () => clock);
}

/** The value of one series, written as the exposition writes it (name{labels}), or undefined. */
async function metricValue(series: string): Promise<number | undefined> {
  const line = (await metrics.exposition()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

function createNode(name: string, hostname = name): Promise<V1Node> {
  return server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': hostname } } });
}

interface PVOptions {
  /** Hostnames of the affinity term; null for a zone term instead (a local PV must have affinity). */
  readonly hostnames?: string[] | null;
  readonly reclaimPolicy?: 'Delete' | 'Retain';
  readonly className?: string;
  /** A hostPath PV instead of a local one. */
  readonly hostPath?: boolean;
  readonly ownerNode?: V1Node;
  readonly controller?: boolean;
  readonly finalizers?: string[];
}

function createPV(name: string, options: PVOptions = {}): Promise<V1PersistentVolume> {
  const hostnames = options.hostnames === undefined ? ['node-1'] : options.hostnames;
  const requirement = hostnames
    ? { key: 'kubernetes.io/hostname', operator: 'In', values: hostnames }
    : { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-a'] };
  return server.create({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      // As a provisioner annotates its PVs: the PV controller then leaves a Released PV's reclaim to it.
      annotations: { 'pv.kubernetes.io/provisioned-by': 'local-volume-provisioner-node-1' },
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
      ...(options.ownerNode ? { ownerReferences: [nodeOwnerReference(nodeInfoOf(options.ownerNode), { controller: options.controller })] } : {}),
    },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: options.className ?? OPTED_IN,
      persistentVolumeReclaimPolicy: options.reclaimPolicy ?? 'Delete',
      ...(options.hostPath ? { hostPath: { path: `/mnt/disks/${name}` } } : { local: { path: `/mnt/disks/${name}` } }),
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [requirement] }] } },
    },
  });
}

/** A user's claim for the PV, bound to it by the PV binder (both Bound). */
async function bindNewClaim(pvName: string, claimName = `claim-${pvName}`): Promise<V1PersistentVolumeClaim> {
  await server.bindNewClaim(pvName, claimName);
  const bound = async () => (await server.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', claimName, 'default'))?.status?.phase === 'Bound'
    && await pvPhase(pvName) === 'Bound';
  await eventually(bound, `${claimName} and ${pvName} are Bound`);
  return (await server.get('v1', 'PersistentVolumeClaim', claimName, 'default'))!;
}

/** Binds a claim, then deletes it: the PV controller makes the PV Released. */
async function releasePV(pvName: string): Promise<void> {
  const claim = await bindNewClaim(pvName);
  await server.delete('v1', 'PersistentVolumeClaim', claim.metadata!.name!, 'default');
  await eventually(async () => await pvPhase(pvName) === 'Released', `${pvName} is Released`);
}

const pvPhase = async (name: string) => (await server.get<V1PersistentVolume>('v1', 'PersistentVolume', name))?.status?.phase;
const pvExists = async (name: string) => await server.get('v1', 'PersistentVolume', name) !== undefined;
/** The claim still exists and is not being deleted. */
const claimKept = async (name: string) => {
  const c = await server.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, 'default');
  return c !== undefined && !c.metadata?.deletionTimestamp;
};

async function waitAvailable(...names: string[]): Promise<void> {
  await eventually(async () => (await Promise.all(names.map(pvPhase))).every((phase) => phase === 'Available'), `${names.join(', ')} Available`);
}

describe('PVs of a deleted node', () => {
  test('an Available PV of a deleted node is deleted', async () => {
    await createPV('pv-gone');
    await waitAvailable('pv-gone');

    const result = await controller().pass();

    expect(result.deletedPVs).toEqual(['pv-gone']);
    // Gone once the PV protection controller has taken its finalizer off.
    await eventually(async () => !(await pvExists('pv-gone')), 'pv-gone is gone');
    expect(await metrics.exposition()).toMatch(/phase="Available"\} 1/);
  });

  test('a deleted PV is said with StaleVolumeDeleted on it, from upstream\'s source cleanup-controller', async () => {
    await createPV('pv-gone');
    await waitAvailable('pv-gone');

    await controller().pass();
    await events.flush();

    const said = (await server.list<CoreV1Event>('v1', 'Event', 'default')).filter((e) => e.reason === 'StaleVolumeDeleted');
    expect(said).toEqual([expect.objectContaining({
      type: 'Normal', involvedObject: expect.objectContaining({ kind: 'PersistentVolume', name: 'pv-gone' }), source: { component: 'cleanup-controller' },
    })]);
    expect(said[0].message).toMatch(/^node ".+" no longer exists; PV deleted$/);
  });

  test('a Released PV with reclaim policy Delete of a deleted node is deleted', async () => {
    await createPV('pv-released');
    await releasePV('pv-released');

    expect((await controller().pass()).deletedPVs).toEqual(['pv-released']);
    await eventually(async () => !(await pvExists('pv-released')), 'pv-released is gone');
  });

  test('a Released PV with reclaim policy Retain of a deleted node is kept', async () => {
    await createPV('pv-retained', { reclaimPolicy: 'Retain' });
    await releasePV('pv-retained');

    expect((await controller().pass()).deletedPVs).toEqual([]);
    expect(await pvPhase('pv-retained')).toBe('Released');
  });

  test('a Bound PV of a deleted node is kept (its claim decides)', async () => {
    await createPV('pv-bound', { className: 'not-opted-in' });
    await bindNewClaim('pv-bound');

    expect(await controller().pass()).toEqual({ deletedPVs: [], deletedClaims: [], denied: [] });
    expect(await pvPhase('pv-bound')).toBe('Bound');
  });

  test('the PVs of a node that exists are kept', async () => {
    await createNode('node-1');
    await createPV('pv-here');
    await waitAvailable('pv-here');

    expect((await controller().pass()).deletedPVs).toEqual([]);
    expect(await pvExists('pv-here')).toBe(true);
  });

  test('a node exists when a Node carries its name as hostname label, though named otherwise', async () => {
    await createNode('ip-10-0-0-1', 'node-1');
    await createPV('pv-by-hostname');
    await waitAvailable('pv-by-hostname');

    expect((await controller().pass()).deletedPVs).toEqual([]);
  });

  test('a PV whose affinity names no hostname (a zone) is never deleted: its node is unknown, not gone', async () => {
    await createPV('pv-anywhere', { hostnames: null });
    await waitAvailable('pv-anywhere');

    expect((await controller().pass()).deletedPVs).toEqual([]);
    expect(await pvExists('pv-anywhere')).toBe(true);
  });

  test('a local PV of a StorageClass that has not opted in is kept, Available or Released (hand-made local PVs)', async () => {
    await createPV('pv-hand-made', { className: 'hand-made' });
    await createPV('pv-hand-made-released', { className: 'hand-made' });
    await releasePV('pv-hand-made-released');
    await waitAvailable('pv-hand-made');

    expect((await controller().pass()).deletedPVs).toEqual([]);
    expect(await pvExists('pv-hand-made')).toBe(true);
    expect(await pvPhase('pv-hand-made-released')).toBe('Released');
  });

  test('with no StorageClass opted in, no PV is deleted', async () => {
    await createPV('pv-gone');
    await waitAvailable('pv-gone');

    expect((await controller({ storageClassNames: [] }).pass()).deletedPVs).toEqual([]);
    expect(await pvExists('pv-gone')).toBe(true);
  });

  test('a Released PV carrying the agent\'s cleanup finalizer is deleted and the finalizer removed: it goes, its volume left to its node\'s record', async () => {
    await createPV('pv-dirty', { finalizers: [CLEANUP_FINALIZER] });
    await releasePV('pv-dirty');

    expect((await controller().pass()).deletedPVs).toEqual(['pv-dirty']);
    await eventually(async () => !(await pvExists('pv-dirty')), 'the PV is gone');
    expect(await metricValue('local_volume_node_cleanup_persistentvolume_finalizer_removed_total{succeeded="true"}')).toBe(1);
  });

  test('where node cleanup may not patch PVs (upstream\'s RBAC), such a PV is said to stay Terminating, not counted deleted', async () => {
    await createPV('pv-dirty', { finalizers: [CLEANUP_FINALIZER] });
    await releasePV('pv-dirty');
    server.faults.failNext({ verb: 'patch', resource: 'persistentvolumes', code: 403 });

    const result = await controller().pass();
    expect(result.deletedPVs).toEqual([]);
    expect(result.denied).toEqual([expect.stringContaining('403')]);
    const pv = await server.get<V1PersistentVolume>('v1', 'PersistentVolume', 'pv-dirty');
    expect(pv?.metadata?.deletionTimestamp).toBeDefined();
    expect(pv?.metadata?.finalizers).toContain(CLEANUP_FINALIZER);
    expect(await metricValue('local_volume_node_cleanup_persistentvolume_finalizer_removed_total{succeeded="false"}')).toBe(1);
  });

  test('a PV that is not local is never deleted', async () => {
    await createPV('pv-hostpath', { hostPath: true });
    await waitAvailable('pv-hostpath');

    expect((await controller().pass()).deletedPVs).toEqual([]);
    expect(await pvExists('pv-hostpath')).toBe(true);
  });
});

describe('claims bound to local PVs of a deleted node', () => {
  test('are kept until the node has been gone for the delay, then deleted', async () => {
    await createPV('pv-1');
    await bindNewClaim('pv-1');
    const nodeCleanup = controller();

    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    clock += DELAY_MS - 1;
    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-1')).toBe(true);

    clock += 1;
    expect((await nodeCleanup.pass()).deletedClaims).toEqual(['default/claim-pv-1']);
    expect(await claimKept('claim-pv-1')).toBe(false);
  });

  test('a deleted claim is said with StaleClaimDeleted on it, naming its PV and node', async () => {
    await createPV('pv-1');
    await bindNewClaim('pv-1');
    const nodeCleanup = controller();
    await nodeCleanup.pass();
    clock += DELAY_MS;
    await nodeCleanup.pass();
    await events.flush();

    const said = (await server.list<CoreV1Event>('v1', 'Event', 'default')).filter((e) => e.reason === 'StaleClaimDeleted');
    expect(said).toEqual([expect.objectContaining({ involvedObject: expect.objectContaining({ kind: 'PersistentVolumeClaim', name: 'claim-pv-1' }) })]);
    expect(said[0].message).toMatch(/^PV "pv-1" is on node ".+", which no longer exists; claim deleted$/);
  });

  test('a node that comes back within the delay saves its claims, and a later absence starts the delay over', async () => {
    await createPV('pv-1');
    await bindNewClaim('pv-1');
    const nodeCleanup = controller();
    await nodeCleanup.pass();

    clock += DELAY_MS / 2;
    await createNode('node-1');
    await nodeCleanup.pass();
    clock += DELAY_MS;
    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);

    await server.delete('v1', 'Node', 'node-1');
    clock += 1;
    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-1')).toBe(true);
  });

  test('on a PV pinned to several hosts, the delay counts from when the last of them went', async () => {
    await createNode('node-b');
    await createPV('pv-a', { hostnames: ['node-a'] });
    await createPV('pv-ab', { hostnames: ['node-a', 'node-b'] });
    await bindNewClaim('pv-ab');
    const nodeCleanup = controller();
    await nodeCleanup.pass();
    clock += DELAY_MS;
    await server.delete('v1', 'Node', 'node-b');
    await nodeCleanup.pass();

    clock += DELAY_MS - 1;
    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    clock += 1;
    expect((await nodeCleanup.pass()).deletedClaims).toEqual(['default/claim-pv-ab']);
  });

  test('are kept when their StorageClass has not opted in', async () => {
    await createPV('pv-other', { className: 'not-opted-in' });
    await bindNewClaim('pv-other');
    const nodeCleanup = controller();
    await nodeCleanup.pass();
    clock += DELAY_MS;

    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-other')).toBe(true);
  });

  test('are never looked at when no StorageClass opted in', async () => {
    await createPV('pv-1');
    await bindNewClaim('pv-1');
    const nodeCleanup = controller({ storageClassNames: [] });
    await nodeCleanup.pass();
    clock += DELAY_MS;

    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-1')).toBe(true);
  });

  test('a claim recreated under the same name (another UID) is not the one the PV is bound to, and is kept', async () => {
    await createPV('pv-1');
    await bindNewClaim('pv-1');
    const nodeCleanup = controller();
    await nodeCleanup.pass();
    // The claim is replaced behind the PV's back: same name, new UID, not bound to it. With the
    // PV controller lagging, the PV still says Bound: only the UID tells the claims apart.
    await server.plane.pauseControllers();
    await server.delete('v1', 'PersistentVolumeClaim', 'claim-pv-1', 'default');
    // Its protection finalizer is the paused controller manager's to remove: an admin does it here.
    await server.patch('v1', 'PersistentVolumeClaim', 'claim-pv-1', { metadata: { finalizers: null } }, 'default');
    await eventually(async () => await server.get('v1', 'PersistentVolumeClaim', 'claim-pv-1', 'default') === undefined, 'the claim is gone');
    const stalePv = (await server.get<V1PersistentVolume>('v1', 'PersistentVolume', 'pv-1'))!;
    await server.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'claim-pv-1', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: OPTED_IN, resources: { requests: { storage: '1Gi' } }, volumeName: 'pv-1' },
    });
    expect((await server.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', 'claim-pv-1', 'default'))!.metadata!.uid).not.toBe(stalePv.spec!.claimRef!.uid);
    expect(stalePv.status!.phase).toBe('Bound');
    clock += DELAY_MS;

    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-1')).toBe(true);
  });

  test('the PV is re-read after its claim: a PV bound to another claim meanwhile keeps the first claim', async () => {
    await createPV('pv-1');
    await bindNewClaim('pv-1');
    const nodeCleanup = controller();
    await nodeCleanup.pass();
    clock += DELAY_MS;
    await server.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'claim-other', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: OPTED_IN, resources: { requests: { storage: '1Gi' } } },
    });
    // Between the pass's list and its decision, the PV is bound to another claim.
    api.afterClaimRead = async () => {
      api.afterClaimRead = () => {};
      await server.bindClaim('pv-1', { namespace: 'default', name: 'claim-other' });
    };

    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-1')).toBe(true);
  });

  test('a claim bound to a PV that is not local is kept', async () => {
    await createPV('pv-hostpath', { hostPath: true });
    await bindNewClaim('pv-hostpath');
    const nodeCleanup = controller();
    await nodeCleanup.pass();
    clock += DELAY_MS;

    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-hostpath')).toBe(true);
  });

  test('a claim bound to a PV whose affinity names no hostname is kept', async () => {
    await createPV('pv-anywhere', { hostnames: null });
    await bindNewClaim('pv-anywhere');
    const nodeCleanup = controller();
    await nodeCleanup.pass();
    clock += DELAY_MS;

    expect((await nodeCleanup.pass()).deletedClaims).toEqual([]);
    expect(await claimKept('claim-pv-anywhere')).toBe(true);
  });
});

describe('PVs with a Node ownerReference', () => {
  test('go with their Node through the garbage collector (directory setPVOwnerRef and the device dialect\'s controller reference)', async () => {
    const node = await createNode('node-1');
    const other = await createNode('node-2');
    await createPV('pv-directory', { ownerNode: node });
    await createPV('pv-device', { ownerNode: node, controller: true });
    await createPV('pv-of-node-2', { hostnames: ['node-2'], ownerNode: other });

    await server.delete('v1', 'Node', 'node-1');

    await eventually(async () => !(await pvExists('pv-directory')) && !(await pvExists('pv-device')), 'the PVs of node-1 are collected');
    expect(await pvExists('pv-of-node-2')).toBe(true);
  });

  test('are collected even when their Node was recreated under the same name (the owner UID is gone)', async () => {
    const node = await createNode('node-1');
    await createPV('pv-directory', { ownerNode: node });
    await server.delete('v1', 'Node', 'node-1');
    await createNode('node-1');

    await eventually(async () => !(await pvExists('pv-directory')), 'the PV of the earlier node-1 is collected');
  });
});
