import {
  AuthorizationV1Api, V1ConfigMap, V1CSIStorageCapacity, V1Node, V1PersistentVolumeClaim, V1StorageClass, V1SubjectAccessReview,
} from '@kubernetes/client-node';
import { DEFAULTS, DEVICES } from './stacks';
import { Manifest, synth } from './support';
import { CLAIM_ROUTING_LEASE } from '../../src/config';
import { PoolBackend } from '../../src/constructs';
import { KubeApi } from '../../src/runtime/kube/api-client';
import { EventRecorder } from '../../src/runtime/kube/event-recorder';
import { LeaderElector } from '../../src/runtime/kube/leader-election';
import { removeNodeTaint } from '../../src/runtime/kube/node-taint';
import { NodePvCache } from '../../src/runtime/kube/pv-cache';
import { Reflector } from '../../src/runtime/kube/reflector';
import { MANAGED_BY_LABEL, type VolumeSnapshotContent } from '../../src/runtime/kube/snapshot-objects';
import { fromWire } from '../../src/runtime/kube/wire';
import { NodeCleanupController } from '../../src/runtime/node-cleanup/node-cleanup-controller';
import { createLogger, ProvisionerMetrics } from '../../src/runtime/observability';
import { eventually } from '../runtime/kube/fixtures';
import { Kubernetes } from '../support/kubernetes';
import { installSnapshotCrds } from '../support/snapshot-controller';

/**
 * The synthesized RBAC, enforced by a real apiserver: the runtime's own API calls and
 * watches, made as the synthesized ServiceAccounts, are allowed, and each rule they rely
 * on is needed (with its verb taken away, the call is denied). Every verb the construct
 * emits has its case here, so no rule is there for nothing.
 *
 * One control plane serves every case: each case gets the synthesized roles (edited as it
 * needs) and bindings under names of its own, bound to ServiceAccounts of its own, and its
 * objects are removed after it.
 */
const NAMESPACE = 'local-volume-provisioner';
const AGENT = `system:serviceaccount:${NAMESPACE}:local-volume-provisioner`;
const NODE_CLEANUP = `system:serviceaccount:${NAMESPACE}:local-volume-provisioner-node-cleanup`;
const LEASE = 'local-volume-provisioner-node-cleanup';
const GUARD = 'local-volume-provisioner-claim-guard';
const ROUTING = 'local-volume-provisioner-claim-routing';

/** Every feature that adds a rule. */
const ALL_FEATURES = synth({
  ...DEFAULTS,
  storageClasses: [...DEFAULTS.storageClasses!, { name: 'local-pool', hostDir: '/mnt/pool', pool: PoolBackend.BTRFS }],
  devices: DEVICES.devices,
  useJobForCleaning: true,
  removeNodeNotReadyTaint: true,
  nodeCleanup: {},
});

type Edit = (role: Manifest) => Manifest;

let server: Kubernetes;
let grants = 0;

beforeAll(async () => {
  // The controllers too: a PV becomes Available, and a bound claim and PV are told apart, by the PV controller.
  server = await Kubernetes.start({ controllers: true });
  await installSnapshotCrds(server);
  for (const m of ALL_FEATURES) if (['Namespace', 'ConfigMap', 'StorageClass'].includes(m.kind)) await server.create(m);
});
afterAll(() => server.stop());

/**
 * The synthesized roles (each through `edit`) and their bindings, under names of this grant's
 * own and bound to ServiceAccounts of its own, in force once this returns. Returns the user
 * name of the grant's copy of a synthesized ServiceAccount user.
 */
async function grant(edit: Edit = (r) => r): Promise<(user: string) => string> {
  const suffix = `-grant-${++grants}`;
  const rbac = server.plane.kubeConfig().makeApiClient(AuthorizationV1Api);
  const checks: V1SubjectAccessReview[] = [];
  for (const m of ALL_FEATURES) {
    if (m.kind === 'Role' || m.kind === 'ClusterRole') {
      await server.create(renamed(edit(m), suffix));
    } else if (m.kind === 'RoleBinding' || m.kind === 'ClusterRoleBinding') {
      const subjects = m.subjects.map((x: Manifest) => ({ ...x, name: `${x.name}${suffix}` }));
      for (const x of subjects) await server.ensure({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: x.name, namespace: x.namespace } });
      await server.create({ ...renamed(m, suffix), roleRef: { ...m.roleRef, name: `${m.roleRef.name}${suffix}` }, subjects });
      // In force once the authorizer allows the first rule of the edited role to each subject.
      const role = edit(ALL_FEATURES.find((r) => r.kind === m.roleRef.kind && r.metadata.name === m.roleRef.name)!);
      const [rule] = role.rules;
      if (!rule) continue;
      for (const x of subjects) {
        checks.push({
          spec: {
            user: `system:serviceaccount:${x.namespace}:${x.name}`,
            groups: ['system:serviceaccounts', 'system:authenticated'],
            resourceAttributes: {
              namespace: m.metadata.namespace,
              verb: rule.verbs[0],
              group: rule.apiGroups[0],
              resource: rule.resources[0],
              name: rule.resourceNames?.[0],
            },
          },
        });
      }
    }
  }
  for (const body of checks) {
    await eventually(async () => (await rbac.createSubjectAccessReview({ body })).status?.allowed === true, `${body.spec.user} is granted its roles`);
  }
  return (user) => `${user}${suffix}`;
}

/** The object under the same name with `suffix`. */
function renamed(m: Manifest, suffix: string): Manifest {
  return { ...m, metadata: { ...m.metadata, name: `${m.metadata.name}${suffix}` } };
}

/** Takes `verb` away from every rule of the roles named `roleName` that covers `resource`. */
function without(roleName: string, verb: string, resource: string): Edit {
  return (role) => role.metadata.name !== roleName ? role : {
    ...role,
    rules: role.rules
      .map((r: Manifest) => (r.resources.includes(resource) ? { ...r, verbs: r.verbs.filter((v: string) => v !== verb) } : r))
      .filter((r: Manifest) => r.verbs.length > 0),
  };
}

const PV = {
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name: 'local-pv-1' },
  spec: {
    capacity: { storage: '1Gi' },
    accessModes: ['ReadWriteOnce'],
    storageClassName: 'fast-disks',
    local: { path: '/mnt/fast-disks/a' },
    nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] }] } },
  },
};
const NODE = { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-1' }, spec: { taints: [{ key: 'sig-storage-local-static-provisioner/agent-not-ready', effect: 'NoSchedule' }] } };
const JOB = {
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: 'cleanup-local-pv-1', namespace: NAMESPACE },
  spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'cleaner', image: 'x', command: ['true'] }] } } },
};
const CLAIM = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data-db-0', namespace: 'default' },
  spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast-disks', resources: { requests: { storage: '1Gi' } } },
};
const EVENT = {
  apiVersion: 'v1',
  kind: 'Event',
  metadata: { name: 'local-pv-1.1', namespace: 'default' },
  involvedObject: { kind: 'PersistentVolume', name: 'local-pv-1' },
  reason: 'ProvisioningSucceeded',
  message: 'created',
  type: 'Normal',
};

interface Case {
  /** The rule the call relies on: role name, verb, resource. */
  readonly role: string;
  readonly verb: string;
  readonly resource: string;
  readonly user: string;
  /** Objects the call expects (created as the administrator). */
  readonly given?: Manifest[];
  /** The call, as `user` (the grant's copy of the case's user). */
  readonly call: (api: KubeApi, user: string) => Promise<unknown>;
}

/** A PV of node-1 carrying our node label, as the node PV cache lists and watches them. */
const LABELLED_PV = { ...PV, metadata: { name: 'local-pv-2', labels: { 'local.storage.k8s.io/node': 'node-1' } } };
const STORAGE_CLASS = { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'added-class' }, provisioner: 'kubernetes.io/no-provisioner' };
const CONFIG_MAP = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'edited-spec', namespace: NAMESPACE }, data: {} };
const CAPACITY = {
  apiVersion: 'storage.k8s.io/v1',
  kind: 'CSIStorageCapacity',
  metadata: { name: 'pool-node-1', namespace: NAMESPACE },
  storageClassName: 'local-pool',
  nodeTopology: { matchLabels: { 'kubernetes.io/hostname': 'node-1' } },
  capacity: '1Gi',
};

/** A content of node-1's volume, as the snapshot controller makes one, and a VolumeSnapshot. */
const CONTENT = {
  apiVersion: 'snapshot.storage.k8s.io/v1',
  kind: 'VolumeSnapshotContent',
  metadata: { name: 'snapcontent-1', labels: { [MANAGED_BY_LABEL]: 'node-1' } },
  spec: {
    driver: 'pool.local-volume-provisioner.io',
    deletionPolicy: 'Delete',
    source: { volumeHandle: 'fc4dcb07-2fde-2a43-9d14-f06589f79398' },
    volumeSnapshotRef: { namespace: 'default', name: 'snap' },
  },
};
const SNAPSHOT = {
  apiVersion: 'snapshot.storage.k8s.io/v1',
  kind: 'VolumeSnapshot',
  metadata: { name: 'snap', namespace: 'default' },
  spec: { source: { persistentVolumeClaimName: 'data-db-0' } },
};

async function contentVersion(): Promise<string> {
  return (await server.get<VolumeSnapshotContent>('snapshot.storage.k8s.io/v1', 'VolumeSnapshotContent', CONTENT.metadata.name))!.metadata!.resourceVersion!;
}

/**
 * Starts a reflector (its list), creates `obj` as the administrator, and waits until the
 * reflector's watch delivers it; a denied watch fails the call.
 */
async function watchDelivers(
  user: string,
  start: () => { start(): Promise<void>; stop(): Promise<void>; get(key: string): unknown },
  obj: Manifest,
): Promise<void> {
  const reflector = start();
  const key = obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
  await reflector.start();
  try {
    await server.create(obj);
    await eventually(async () => reflector.get(key) !== undefined || server.denials(user).length > 0, 'the watch delivers or is denied');
    if (reflector.get(key) === undefined) throw new Error('the watch was denied');
  } finally {
    await reflector.stop();
  }
}

const A = 'local-volume-provisioner';
const CASES: Case[] = [
  { role: A, verb: 'create', resource: 'persistentvolumes', user: AGENT, call: (api) => api.createPersistentVolume(PV) },
  { role: A, verb: 'get', resource: 'persistentvolumes', user: AGENT, given: [PV], call: (api) => api.getPersistentVolume('local-pv-1') },
  { role: A, verb: 'list', resource: 'persistentvolumes', user: AGENT, call: (api) => api.listPersistentVolumes({ labelSelector: 'local.storage.k8s.io/node=node-1' }) },
  {
    role: A,
    verb: 'watch',
    resource: 'persistentvolumes',
    user: AGENT,
    call: (api, user) => watchDelivers(user, () => new NodePvCache(api, { nodeName: 'node-1', backoff: { initialMs: 10, maxMs: 50 } }), LABELLED_PV),
  },
  { role: A, verb: 'patch', resource: 'persistentvolumes', user: AGENT, given: [PV], call: (api) => api.patchPersistentVolumeLabels('local-pv-1', { 'local.storage.k8s.io/node': 'node-1' }) },
  {
    role: A,
    verb: 'delete',
    resource: 'persistentvolumes',
    user: AGENT,
    given: [PV],
    call: async (api) => api.deletePersistentVolume('local-pv-1', (await api.getPersistentVolume('local-pv-1'))!.metadata!.uid!),
  },
  { role: A, verb: 'get', resource: 'storageclasses', user: AGENT, call: (api) => api.getStorageClass('fast-disks') },
  { role: A, verb: 'list', resource: 'storageclasses', user: AGENT, call: (api) => api.listStorageClasses({}) },
  {
    role: A,
    verb: 'watch',
    resource: 'storageclasses',
    user: AGENT,
    // The directory dialect's StorageClass reflector, as StorageClassCache.start() starts it.
    call: (api, user) => watchDelivers(user, () => new Reflector<V1StorageClass>(api, {
      resource: 'storageclasses',
      watchPath: '/apis/storage.k8s.io/v1/storageclasses',
      list: (page, callOptions) => api.listStorageClasses(page, callOptions),
      backoff: { initialMs: 10, maxMs: 50 },
    }), STORAGE_CLASS),
  },
  { role: A, verb: 'get', resource: 'nodes', user: AGENT, given: [NODE], call: (api) => api.getNode('node-1') },
  {
    role: A,
    verb: 'watch',
    resource: 'nodes',
    user: AGENT,
    // The watch of its one Node, as NodeInfoSource.start() and run-devices.ts start it.
    call: (api, user) => watchDelivers(user, () => new Reflector<V1Node>(api, {
      resource: 'nodes',
      watchPath: `/api/v1/nodes?fieldSelector=${encodeURIComponent('metadata.name=node-1')}`,
      list: async () => {
        const node = await api.getNode('node-1');
        return { items: node ? [node] : [], metadata: { resourceVersion: node?.metadata?.resourceVersion } };
      },
      fromWire: (raw) => fromWire<V1Node>(raw, 'V1Node'),
      backoff: { initialMs: 10, maxMs: 50 },
    }), NODE),
  },
  { role: A, verb: 'update', resource: 'nodes', user: AGENT, given: [NODE], call: (api) => removeNodeTaint(api, 'node-1', 'sig-storage-local-static-provisioner/agent-not-ready') },
  // The claim guard, read by name: a missing one answers 404 (the agent's verdict), a forbidden read 403.
  { role: A, verb: 'get', resource: 'validatingadmissionpolicies', user: AGENT, call: (api) => api.getValidatingAdmissionPolicy(GUARD) },
  { role: A, verb: 'get', resource: 'validatingadmissionpolicybindings', user: AGENT, call: (api) => api.getValidatingAdmissionPolicyBinding(GUARD) },
  // The claim routing, read by name as the guard is.
  { role: A, verb: 'get', resource: 'mutatingadmissionpolicies', user: AGENT, call: (api) => api.getMutatingAdmissionPolicy(ROUTING) },
  { role: A, verb: 'get', resource: 'mutatingadmissionpolicybindings', user: AGENT, call: (api) => api.getMutatingAdmissionPolicyBinding(ROUTING) },
  // The Lease on which one agent at a time labels the claims made before the routing (claim-backfill.ts).
  { role: A, verb: 'create', resource: 'leases', user: AGENT, call: async (api) => expectLeads(await routingLeader(api).tryAcquireOrRenew()) },
  { role: A, verb: 'get', resource: 'leases', user: AGENT, call: async (api) => expectLeads(await routingLeader(api).tryAcquireOrRenew()) },
  {
    role: A,
    verb: 'update',
    resource: 'leases',
    user: AGENT,
    call: async (api) => {
      const e = routingLeader(api);
      await e.tryAcquireOrRenew();
      expectLeads(await e.tryAcquireOrRenew());
    },
  },
  { role: A, verb: 'create', resource: 'events', user: AGENT, call: (api) => api.createEvent('default', EVENT) },
  { role: A, verb: 'patch', resource: 'events', user: AGENT, given: [EVENT], call: (api) => api.patchEvent('default', 'local-pv-1.1', { count: 2 }) },
  { role: A, verb: 'list', resource: 'configmaps', user: AGENT, call: (api) => api.listConfigMaps(NAMESPACE, {}) },
  {
    role: A,
    verb: 'watch',
    resource: 'configmaps',
    user: AGENT,
    // The device dialect's reflector, as run-devices.ts starts it.
    call: (api, user) => watchDelivers(user, () => new Reflector<V1ConfigMap>(api, {
      resource: 'configmaps',
      watchPath: `/api/v1/namespaces/${NAMESPACE}/configmaps`,
      list: (page, callOptions) => api.listConfigMaps(NAMESPACE, page, callOptions),
      fromWire: (raw) => fromWire<V1ConfigMap>(raw, 'V1ConfigMap'),
      backoff: { initialMs: 10, maxMs: 50 },
    }), CONFIG_MAP),
  },
  { role: A, verb: 'create', resource: 'jobs', user: AGENT, call: (api) => api.createJob(NAMESPACE, JOB) },
  { role: A, verb: 'get', resource: 'jobs', user: AGENT, given: [JOB], call: (api) => api.getJob(NAMESPACE, 'cleanup-local-pv-1') },
  { role: A, verb: 'delete', resource: 'jobs', user: AGENT, given: [JOB], call: (api) => api.deleteJob(NAMESPACE, 'cleanup-local-pv-1') },
  { role: A, verb: 'list', resource: 'pods', user: AGENT, call: (api) => api.listJobPods(NAMESPACE, 'cleanup-local-pv-1') },
  { role: A, verb: 'list', resource: 'persistentvolumeclaims', user: AGENT, call: (api) => api.listPersistentVolumeClaims({}) },
  // The claim a pool volume was made for, read before the volume is taken for a stray.
  { role: A, verb: 'get', resource: 'persistentvolumeclaims', user: AGENT, given: [CLAIM], call: (api) => api.getPersistentVolumeClaim('default', 'data-db-0') },
  {
    role: A,
    verb: 'watch',
    resource: 'persistentvolumeclaims',
    user: AGENT,
    call: (api, user) => watchDelivers(user, () => new Reflector<V1PersistentVolumeClaim>(api, {
      resource: 'persistentvolumeclaims',
      watchPath: '/api/v1/persistentvolumeclaims',
      list: (page, options) => api.listPersistentVolumeClaims(page, options),
      fromWire: (raw) => fromWire<V1PersistentVolumeClaim>(raw, 'V1PersistentVolumeClaim'),
      backoff: { initialMs: 10, maxMs: 50 },
    }), CLAIM),
  },
  {
    role: A,
    verb: 'patch',
    resource: 'persistentvolumeclaims',
    user: AGENT,
    given: [CLAIM],
    call: async (api) => api.patchPersistentVolumeClaimAnnotations('default', 'data-db-0',
      (await server.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', 'data-db-0', 'default'))!.metadata!.resourceVersion!,
      { 'volume.kubernetes.io/selected-node': null }),
  },
  {
    role: A,
    verb: 'patch',
    resource: 'persistentvolumeclaims/status',
    user: AGENT,
    given: [CLAIM],
    call: async (api) => api.patchPersistentVolumeClaimStatus('default', 'data-db-0',
      (await server.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', 'data-db-0', 'default'))!.metadata!.resourceVersion!,
      { allocatedResourceStatuses: null }),
  },
  { role: A, verb: 'get', resource: 'csistoragecapacities', user: AGENT, call: (api) => api.getStorageCapacity(NAMESPACE, CAPACITY.metadata.name) },
  { role: A, verb: 'list', resource: 'csistoragecapacities', user: AGENT, call: (api) => api.listStorageCapacities(NAMESPACE, {}) },
  { role: A, verb: 'create', resource: 'csistoragecapacities', user: AGENT, call: (api) => api.createStorageCapacity(NAMESPACE, CAPACITY) },
  {
    role: A,
    verb: 'update',
    resource: 'csistoragecapacities',
    user: AGENT,
    given: [CAPACITY],
    call: async (api) => api.replaceStorageCapacity(NAMESPACE, {
      ...CAPACITY,
      capacity: '2Gi',
      metadata: { ...CAPACITY.metadata, resourceVersion: (await server.get<V1CSIStorageCapacity>('storage.k8s.io/v1', 'CSIStorageCapacity', CAPACITY.metadata.name, NAMESPACE))!.metadata!.resourceVersion },
    }),
  },
  { role: A, verb: 'delete', resource: 'csistoragecapacities', user: AGENT, given: [CAPACITY], call: (api) => api.deleteStorageCapacity(NAMESPACE, CAPACITY.metadata.name) },
  { role: A, verb: 'get', resource: 'volumesnapshotcontents', user: AGENT, given: [CONTENT], call: (api) => api.getVolumeSnapshotContent(CONTENT.metadata.name) },
  { role: A, verb: 'list', resource: 'volumesnapshotcontents', user: AGENT, call: (api) => api.listVolumeSnapshotContents({ labelSelector: `${MANAGED_BY_LABEL}=node-1` }) },
  {
    role: A,
    verb: 'watch',
    resource: 'volumesnapshotcontents',
    user: AGENT,
    call: (api, user) => watchDelivers(user, () => new Reflector<VolumeSnapshotContent>(api, {
      resource: 'volumesnapshotcontents',
      watchPath: '/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents',
      labelSelector: `${MANAGED_BY_LABEL}=node-1`,
      list: (page, options) => api.listVolumeSnapshotContents(page, options),
      backoff: { initialMs: 10, maxMs: 50 },
    }), CONTENT),
  },
  {
    role: A,
    verb: 'patch',
    resource: 'volumesnapshotcontents',
    user: AGENT,
    given: [CONTENT],
    call: async (api) => api.patchVolumeSnapshotContentFinalizers(CONTENT.metadata.name, await contentVersion(), []),
  },
  {
    role: A,
    verb: 'patch',
    resource: 'volumesnapshotcontents/status',
    user: AGENT,
    given: [CONTENT],
    call: async (api) => api.patchVolumeSnapshotContentStatus(CONTENT.metadata.name, await contentVersion(), { readyToUse: false }),
  },
  { role: A, verb: 'get', resource: 'volumesnapshots', user: AGENT, given: [SNAPSHOT], call: (api) => api.getVolumeSnapshot('default', SNAPSHOT.metadata.name) },
  { role: LEASE, verb: 'list', resource: 'nodes', user: NODE_CLEANUP, call: (api) => api.listNodes({}) },
  { role: LEASE, verb: 'list', resource: 'persistentvolumes', user: NODE_CLEANUP, call: (api) => api.listPersistentVolumes({}) },
  { role: LEASE, verb: 'get', resource: 'persistentvolumes', user: NODE_CLEANUP, given: [PV], call: (api) => api.getPersistentVolume('local-pv-1') },
  {
    role: LEASE,
    verb: 'delete',
    resource: 'persistentvolumes',
    user: NODE_CLEANUP,
    given: [PV],
    call: async (api) => api.deletePersistentVolume('local-pv-1', (await api.getPersistentVolume('local-pv-1'))!.metadata!.uid!),
  },
  {
    role: LEASE,
    verb: 'patch',
    resource: 'persistentvolumes',
    user: NODE_CLEANUP,
    given: [PV],
    // The agent's cleanup finalizer removed from a deleted PV of a gone node (removeCleanupFinalizer's request).
    call: async (api) => api.patchPersistentVolumeMetadata('local-pv-1', (await api.getPersistentVolume('local-pv-1'))!.metadata!.resourceVersion!, { finalizers: [] }),
  },
  { role: LEASE, verb: 'create', resource: 'events', user: NODE_CLEANUP, call: (api) => api.createEvent('default', EVENT) },
  { role: LEASE, verb: 'get', resource: 'persistentvolumeclaims', user: NODE_CLEANUP, given: [CLAIM], call: (api) => api.getPersistentVolumeClaim('default', 'data-db-0') },
  {
    role: LEASE,
    verb: 'delete',
    resource: 'persistentvolumeclaims',
    user: NODE_CLEANUP,
    given: [CLAIM],
    call: async (api) => api.deletePersistentVolumeClaim('default', 'data-db-0', (await api.getPersistentVolumeClaim('default', 'data-db-0'))!.metadata!.uid!),
  },
  { role: LEASE, verb: 'get', resource: 'leases', user: NODE_CLEANUP, call: async (api) => expectLeads(await leader(api).tryAcquireOrRenew()) },
  {
    role: LEASE,
    verb: 'create',
    resource: 'leases',
    user: NODE_CLEANUP,
    call: async (api) => expectLeads(await leader(api).tryAcquireOrRenew()),
  },
  {
    role: LEASE,
    verb: 'update',
    resource: 'leases',
    user: NODE_CLEANUP,
    call: async (api) => {
      const e = leader(api);
      await e.tryAcquireOrRenew();
      expectLeads(await e.tryAcquireOrRenew());
    },
  },
];

function leader(api: KubeApi): LeaderElector {
  return new LeaderElector(api, { namespace: NAMESPACE, name: LEASE, identity: 'node-cleanup-0' });
}
function routingLeader(api: KubeApi): LeaderElector {
  return new LeaderElector(api, { namespace: NAMESPACE, name: CLAIM_ROUTING_LEASE, identity: 'node-1' });
}
function expectLeads(leads: boolean): void {
  // tryAcquireOrRenew never throws; make a lost election a failed call.
  if (!leads) throw new Error('not elected');
}

/** Every object a case may make, removed after it (finalizers first) so the next case starts from the same cluster. */
const MADE = [PV, LABELLED_PV, NODE, JOB, CLAIM, EVENT, STORAGE_CLASS, CONFIG_MAP, CAPACITY, CONTENT, SNAPSHOT,
  { ...PV, metadata: { name: 'local-pv-bound' } }, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEASE, namespace: NAMESPACE } },
  { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: CLAIM_ROUTING_LEASE, namespace: NAMESPACE } }];

afterEach(async () => {
  for (const m of MADE) {
    const { apiVersion, kind, metadata: { name, namespace } } = m as Manifest;
    if (await server.get(apiVersion, kind, name, namespace) === undefined) continue;
    await server.patch(apiVersion, kind, name, { metadata: { finalizers: null } }, namespace);
    await server.delete(apiVersion, kind, name, namespace);
    await eventually(async () => await server.get(apiVersion, kind, name, namespace) === undefined, `${kind} ${name} is gone`);
  }
});

async function run(c: Case, edit?: Edit): Promise<{ error?: unknown; denials: string[] }> {
  const userOf = await grant(edit);
  const user = userOf(c.user);
  for (const obj of c.given ?? []) await server.create(obj);
  const api = new KubeApi(await server.kubeConfigOf(user), { maxAttempts: 1 });
  let error: unknown;
  await c.call(api, user).catch((e: unknown) => {
    error = e;
  });
  return { error, denials: server.denials(user).map((d) => `${d.verb} ${d.resource}`) };
}

describe.each(CASES.map((c) => [`${c.verb} ${c.resource} (${c.user.split(':').pop()})`, c] as const))('%s', (_name, c) => {
  test('is allowed by the synthesized roles', async () => {
    const { error, denials } = await run(c);
    expect(denials).toEqual([]);
    expect(error).toBeUndefined();
  });

  test('is denied without that rule', async () => {
    const { denials } = await run(c, without(c.role, c.verb, c.resource));
    expect(denials).toContain(`${c.verb} ${c.resource}`);
  });
});

test('every verb the construct emits, with every feature on, has a case above, and every case a rule', () => {
  const emitted = ALL_FEATURES
    .filter((m) => m.kind === 'Role' || m.kind === 'ClusterRole')
    .flatMap((role) => role.rules.flatMap((r: Manifest) => r.resources.flatMap((res: string) => r.verbs.map((v: string) => `${role.metadata.name}: ${v} ${res}`))));
  const covered = CASES.map((c) => `${c.role}: ${c.verb} ${c.resource}`);
  expect([...new Set(emitted)].sort()).toEqual([...new Set(covered)].sort());
});

test('the node-cleanup Role reads and renews only its own Lease', async () => {
  const user = (await grant())(NODE_CLEANUP);
  const other = new LeaderElector(new KubeApi(await server.kubeConfigOf(user), { maxAttempts: 1 }),
    { namespace: NAMESPACE, name: 'someone-elses-lease', identity: 'node-cleanup-0' });
  expect(await other.tryAcquireOrRenew()).toBe(false);
  expect(server.denials(user).map((d) => `${d.verb} ${d.resource}/${d.name}`)).toContain('get leases/someone-elses-lease');
});

test('the agent cannot delete claims or touch node cleanup\'s Lease', async () => {
  const user = (await grant())(AGENT);
  const api = new KubeApi(await server.kubeConfigOf(user), { maxAttempts: 1 });
  await api.deletePersistentVolumeClaim('default', 'data-db-0', 'uid').catch(() => undefined);
  expect(await leader(api).tryAcquireOrRenew()).toBe(false);
  expect(server.denials(user).map((d) => `${d.verb} ${d.resource}`)).toEqual(expect.arrayContaining(['delete persistentvolumeclaims', 'get leases']));
});

test('node cleanup, as its ServiceAccount, elects itself and deletes a PV and a claim of a gone node with no 403', async () => {
  const user = (await grant())(NODE_CLEANUP);
  await server.create(PV);
  await server.create({ ...PV, metadata: { name: 'local-pv-bound' }, spec: { ...PV.spec, local: { path: '/mnt/fast-disks/b' } } });
  await server.create(CLAIM);
  await server.bindClaim('local-pv-bound', { namespace: 'default', name: 'data-db-0' });
  await eventually(async () => (await server.get('v1', 'PersistentVolume', 'local-pv-1'))?.status?.phase === 'Available', 'local-pv-1 is Available');
  const api = new KubeApi(await server.kubeConfigOf(user), { maxAttempts: 1 });
  let clock = 0;
  const events = new EventRecorder(api, { component: 'cleanup-controller' });
  const controller = new NodeCleanupController(api, new ProvisionerMetrics({ version: 'test', processMetrics: false }),
    createLogger({ level: 'fatal' }), events, { storageClassNames: ['fast-disks'], pvcDeletionDelayMs: 1000 }, () => clock);

  expect(await leader(api).tryAcquireOrRenew()).toBe(true);
  expect((await controller.pass()).deletedPVs).toEqual(['local-pv-1']);
  clock += 1000;
  expect((await controller.pass()).deletedClaims).toEqual(['default/data-db-0']);
  await events.flush();
  expect(server.denials(user)).toEqual([]);
});
