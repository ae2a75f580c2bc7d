/**
 * Kubernetes for a test suite: a real control plane of its own (control-plane.ts) and a
 * fault proxy in front of its apiserver (fault-proxy.ts). The code under test talks to the
 * proxy (`url`, `kubeConfig()`), so its requests are counted and can be failed; the test's
 * own set-up and checks (`create`, `get`, `list`, ...) go straight to the apiserver as the
 * administrator, neither counted nor faulted.
 *
 * Each suite (test file) has a control plane of its own, started on first use (about 3 s)
 * and stopped after its last test (forSuite), so suites running side by side never share
 * cluster-scoped objects (PVs, StorageClasses, Nodes) or the controllers acting on them. Its
 * tests share it one after the other; reset() returns it to its first state between them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  ApiException, BatchV1Api, CoreV1Api, KubeConfig, KubernetesObject, KubernetesObjectApi, PatchStrategy, V1Job, V1Node, V1PersistentVolume,
  V1PersistentVolumeClaim, V1Pod,
} from '@kubernetes/client-node';
import { ADMIN_TOKEN, ControlPlane, ControlPlaneOptions, Denial } from './control-plane';
import { FaultProxy } from './fault-proxy';

export type { Denial } from './control-plane';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;

const SERVICE_ACCOUNT_USER = /^system:serviceaccount:([^:]+):([^:]+)$/;

/** What reset() removes, in this order: admission policies, what uses storage, then the storage, then its classes and nodes. */
const RESET_KINDS: Array<[apiVersion: string, kind: string]> = [
  ['admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicyBinding'], ['admissionregistration.k8s.io/v1', 'ValidatingAdmissionPolicy'],
  ['batch/v1', 'Job'], ['v1', 'Pod'], ['v1', 'PersistentVolumeClaim'], ['v1', 'Event'], ['v1', 'ConfigMap'], ['coordination.k8s.io/v1', 'Lease'],
  ['v1', 'PersistentVolume'], ['storage.k8s.io/v1', 'StorageClass'], ['storage.k8s.io/v1', 'CSIStorageCapacity'], ['storage.k8s.io/v1', 'CSIDriver'],
  ['v1', 'Node'],
];
/** Objects the apiserver and controllers make for themselves, which reset() leaves. */
const SYSTEM_OBJECT = (o: KubernetesObject) => o.metadata?.name === 'kube-root-ca.crt' || o.metadata?.namespace === 'kube-system';

let suitePlane: { options: ControlPlaneOptions; started: Promise<Kubernetes> } | undefined;
// Registered as each test file loads this module: the suite's control plane goes with the suite.
if (typeof afterAll === 'function') {
  afterAll(async () => {
    const plane = suitePlane;
    suitePlane = undefined;
    await (await plane?.started.catch(() => undefined))?.stop();
  });
}

export class Kubernetes {
  /**
   * The control plane of this suite (test file): started on first use, stopped after the
   * suite's last test. A test using it calls reset() when done. Every use in a suite must
   * ask for the same options.
   */
  static forSuite(options: ControlPlaneOptions = {}): Promise<Kubernetes> {
    if (suitePlane === undefined) {
      suitePlane = { options, started: Kubernetes.start(options) };
    } else if (JSON.stringify(suitePlane.options) !== JSON.stringify(options)) {
      throw new Error(`this suite's control plane was started with ${JSON.stringify(suitePlane.options)}, not ${JSON.stringify(options)}`);
    }
    return suitePlane.started;
  }

  /** A control plane of the caller's own, which it stops. */
  static async start(options: ControlPlaneOptions = {}): Promise<Kubernetes> {
    const plane = await ControlPlane.start(options);
    try {
      const file = (name: string) => path.join(plane.dir, name);
      const proxy = await FaultProxy.start(plane.url, { caFile: file('ca.crt'), certFile: file('serving.crt'), keyFile: file('serving.key') });
      return new Kubernetes(plane, proxy, (options.controllers ?? false) || (options.nodes ?? false));
    } catch (e) {
      await plane.stop();
      throw e;
    }
  }

  private readonly objects: KubernetesObjectApi;
  readonly core: CoreV1Api;

  private constructor(readonly plane: ControlPlane, readonly proxy: FaultProxy,
    /** Whether kube-controller-manager and kube-scheduler run (binding, Jobs, garbage collection). */
    readonly controllers: boolean) {
    this.objects = KubernetesObjectApi.makeApiClient(plane.kubeConfig());
    this.core = plane.kubeConfig().makeApiClient(CoreV1Api);
  }

  /** The proxy's URL: where the code under test finds the apiserver. */
  get url(): string {
    return this.proxy.url;
  }

  /** Latency, injected failures, ended watches, an outage (the proxy). */
  get faults(): FaultProxy {
    return this.proxy;
  }

  /** Requests and response bytes per verb and resource through the proxy. */
  get counters(): FaultProxy {
    return this.proxy;
  }

  /** Watches open through the proxy. */
  get openWatches(): number {
    return this.proxy.openWatches;
  }

  /** As an etcd compaction does to a client behind: every watch ends, and one from before now gets 410 Expired. */
  async compact(): Promise<void> {
    const now = await this.core.listNamespace({ limit: 1 });
    this.proxy.compact(now.metadata!.resourceVersion!);
  }

  /** A kubeconfig through the proxy, as the administrator or (given a bearer token) as that token's owner. */
  kubeConfig(token = ADMIN_TOKEN): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'test', server: this.url, caData: fs.readFileSync(path.join(this.plane.dir, 'ca.crt')).toString('base64') }],
      users: [{ name: 'user', token }],
      contexts: [{ name: 'test', cluster: 'test', user: 'user' }],
      currentContext: 'test',
    });
    return kc;
  }

  /** A kubeconfig through the proxy as `user`: `admin`, or a ServiceAccount's user name (its account is made if missing). */
  async kubeConfigOf(user: string): Promise<KubeConfig> {
    return this.kubeConfig(await this.tokenFor(user));
  }

  /** Writes kubeConfigOf(user) to `file`, for a process such as the agent or kubectl. */
  async writeKubeconfig(file: string, user = 'admin'): Promise<void> {
    fs.writeFileSync(file, (await this.kubeConfigOf(user)).exportConfig());
  }

  /**
   * A real bearer token of `user`: the administrator's static one for `admin`, a TokenRequest's
   * for `system:serviceaccount:<namespace>:<name>` (the namespace and account made if missing).
   */
  async tokenFor(user: string): Promise<string> {
    if (user === 'admin') return ADMIN_TOKEN;
    const account = SERVICE_ACCOUNT_USER.exec(user);
    if (!account) throw new Error(`test Kubernetes issues tokens for admin and ServiceAccounts only, not ${user}`);
    const [, namespace, name] = account;
    await this.ensure({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await this.ensure({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
    return this.plane.serviceAccountToken(namespace, name);
  }

  /**
   * Creates an object as the administrator, through the apiserver's defaulting, admission and
   * validation. A Node is made as a kubelet's would look once ready (see createNode).
   */
  async create<T = Loose>(obj: object): Promise<T> {
    if ((obj as KubernetesObject).kind === 'Node') return await this.createNode(obj as V1Node) as T;
    return await this.objects.create(obj as KubernetesObject) as T;
  }

  /**
   * A fake Node (no kubelet) as it looks once ready: the not-ready taint that admission puts
   * on every new Node (TaintNodesByCondition) taken off again unless `node` asks for it, and
   * some capacity and allocatable (unless given) for the scheduler to fit pods on.
   */
  async createNode(node: V1Node): Promise<V1Node> {
    const name = node.metadata!.name!;
    const wanted = node.spec?.taints ?? [];
    await this.core.createNode({ body: node });
    // The controllers write to a new Node at once too (annotations, status): each change is made on a fresh read.
    await onConflictAgain(async () => {
      const read = await this.core.readNode({ name });
      if ((read.spec?.taints ?? []).length === wanted.length) return read;
      return this.core.replaceNode({ name, body: { ...read, spec: { ...read.spec, taints: wanted } } });
    });
    if (node.status?.allocatable !== undefined) return this.core.readNode({ name });
    const resources = { 'cpu': '8', 'memory': '32Gi', 'pods': '110', 'ephemeral-storage': '100Gi' };
    return onConflictAgain(async () => {
      const read = await this.core.readNode({ name });
      return this.core.replaceNodeStatus({ name, body: { ...read, status: { ...read.status, capacity: resources, allocatable: resources } } });
    });
  }

  /** Creates the object unless one of its name exists. */
  async ensure(obj: KubernetesObject): Promise<void> {
    await this.objects.create(obj).catch((e: unknown) => {
      if (!(e instanceof ApiException && e.code === 409)) throw e;
    });
  }

  /** Reads an object, or undefined when there is none. */
  async get<T = Loose>(apiVersion: string, kind: string, name: string, namespace?: string): Promise<T | undefined> {
    try {
      return await this.objects.read({ apiVersion, kind, metadata: { name, namespace } }) as T;
    } catch (e) {
      if (e instanceof ApiException && e.code === 404) return undefined;
      throw e;
    }
  }

  /** Lists objects of a kind (in one namespace, or all). */
  async list<T = Loose>(apiVersion: string, kind: string, namespace?: string): Promise<T[]> {
    return (await this.objects.list(apiVersion, kind, namespace)).items as T[];
  }

  /**
   * Deletes an object as `kubectl delete` does (finalizers hold it); a missing one is no error.
   * `gracePeriodSeconds: 0` deletes a pod at once, as `--force` does: no kubelet here ends it.
   */
  async delete(apiVersion: string, kind: string, name: string, namespace?: string, gracePeriodSeconds?: number): Promise<void> {
    try {
      await this.objects.delete({ apiVersion, kind, metadata: { name, namespace } }, undefined, undefined, gracePeriodSeconds);
    } catch (e) {
      if (!(e instanceof ApiException && e.code === 404)) throw e;
    }
  }

  /** Replaces an object (its resourceVersion a precondition when it carries one). */
  async replace<T = Loose>(obj: object): Promise<T> {
    return await this.objects.replace(obj as KubernetesObject) as T;
  }

  /** Merge-patches an object as `kubectl patch --type merge` does. */
  async patch<T = Loose>(apiVersion: string, kind: string, name: string, patch: object, namespace?: string): Promise<T> {
    const obj = { apiVersion, kind, ...patch, metadata: { ...(patch as KubernetesObject).metadata, name, namespace } } as KubernetesObject;
    return await this.objects.patch(obj, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch) as T;
  }

  /**
   * Binds an existing claim and a volume as the PV controller does, in its order: the PV's
   * claimRef, the PV's phase, the claim's volumeName, the claim's phase. Each write is made
   * again on a fresh read after a conflict (the real binder may be writing them too).
   */
  async bindClaim(pvName: string, claim: { namespace: string; name: string }): Promise<void> {
    const { namespace, name } = claim;
    const pvc = (await this.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, namespace))!;
    const claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace, name, uid: pvc.metadata!.uid };
    const pv = await onConflictAgain(async () => {
      const read = await this.core.readPersistentVolume({ name: pvName });
      const referred = await this.core.replacePersistentVolume({ name: pvName, body: { ...read, spec: { ...read.spec, claimRef } } });
      return this.core.replacePersistentVolumeStatus({ name: pvName, body: { ...referred, status: { ...referred.status, phase: 'Bound' } } });
    });
    await onConflictAgain(async () => {
      const read = await this.core.readNamespacedPersistentVolumeClaim({ name, namespace });
      const body = { ...read, spec: { ...read.spec, volumeName: pvName } };
      const named = await this.core.replaceNamespacedPersistentVolumeClaim({ name, namespace, body });
      return this.core.replaceNamespacedPersistentVolumeClaimStatus({
        name,
        namespace,
        body: { ...named, status: { ...named.status, phase: 'Bound', accessModes: pv.spec!.accessModes, capacity: pv.spec!.capacity } },
      });
    });
  }

  /**
   * A user's new claim in `default` for this very PV (`volumeName`), bound to it: by the real
   * PV binder when the controllers run (awaited), else as bindClaim() does. Returns the
   * claim's name. (A claim made without volumeName would be the binder's to match with any
   * Available PV that fits, before a test could bind it.)
   */
  async bindNewClaim(pvName: string, claimName: string): Promise<string> {
    const pv = (await this.get<V1PersistentVolume>('v1', 'PersistentVolume', pvName))!;
    await this.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: claimName, namespace: 'default' },
      spec: {
        accessModes: pv.spec!.accessModes,
        resources: { requests: { storage: pv.spec!.capacity!.storage } },
        storageClassName: pv.spec!.storageClassName,
        volumeMode: pv.spec!.volumeMode,
        ...(this.controllers ? { volumeName: pvName } : {}),
      },
    });
    if (!this.controllers) {
      await this.bindClaim(pvName, { namespace: 'default', name: claimName });
      return claimName;
    }
    const deadline = Date.now() + 30_000;
    const bound = async () => (await this.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', claimName, 'default'))?.status?.phase === 'Bound';
    while (!await bound()) {
      if (Date.now() > deadline) throw new Error(`claim ${claimName} is not Bound to PV ${pvName} after 30 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return claimName;
  }

  /**
   * Ends a Job as kubelet would end its pod (needs the controllers): the pod the Job
   * controller made is marked Succeeded (or Failed, with `message`), and the Job controller
   * completes the Job.
   */
  async finishJob(namespace: string, jobName: string, outcome: 'Complete' | 'Failed', message = ''): Promise<void> {
    const podOf = async () => (await this.core.listNamespacedPod({ namespace, labelSelector: `job-name=${jobName}` })).items[0] as V1Pod | undefined;
    const deadline = Date.now() + 30_000;
    let pod = await podOf();
    for (; pod === undefined; pod = await podOf()) {
      if (Date.now() > deadline) throw new Error(`Job ${namespace}/${jobName} has no pod after 30 s: is the controller manager running?`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const succeeded = outcome === 'Complete';
    const now = new Date();
    const [container] = pod.spec!.containers;
    const name = pod.metadata!.name!;
    // The scheduler and the Job controller write the new pod too: the status goes on a fresh read.
    await onConflictAgain(async () => this.core.replaceNamespacedPodStatus({
      name,
      namespace,
      body: {
        ...(pod = await this.core.readNamespacedPod({ name, namespace })),
        status: {
          ...pod.status,
          phase: succeeded ? 'Succeeded' : 'Failed',
          containerStatuses: [{
            name: container.name,
            image: container.image!,
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: succeeded ? 0 : 1, reason: succeeded ? 'Completed' : 'Error', message, startedAt: now, finishedAt: now } },
          }],
        },
      },
    }));
  }

  /** The Job as it is now, or undefined. */
  async job(namespace: string, name: string): Promise<V1Job | undefined> {
    return this.plane.kubeConfig().makeApiClient(BatchV1Api).readNamespacedJob({ name, namespace }).catch(() => undefined);
  }

  /** Requests the apiserver refused with 403 (its audit log), each kind once, optionally only `user`'s. */
  denials(user?: string): Denial[] {
    return this.plane.denials(user);
  }

  /**
   * Returns the cluster to its first state for the suite's next test: every object of
   * RESET_KINDS removed (finalizers first, as nothing else would remove ours), paused
   * controllers resumed, the proxy's faults and counts forgotten.
   */
  async reset(): Promise<void> {
    this.plane.resumeControllers();
    this.proxy.reset();
    for (const [apiVersion, kind] of RESET_KINDS) {
      for (const o of (await this.list<KubernetesObject>(apiVersion, kind)).filter((x) => !SYSTEM_OBJECT(x))) {
        const { name, namespace } = o.metadata!;
        const unfinalized = { metadata: { finalizers: null } };
        if ((o.metadata?.finalizers ?? []).length > 0) await this.patch(apiVersion, kind, name!, unfinalized, namespace).catch(notFound);
        await this.objects.delete({ apiVersion, kind, metadata: { name, namespace } }, undefined, undefined, 0, undefined, 'Background').catch(notFound);
      }
    }
    for (const [apiVersion, kind] of RESET_KINDS) {
      // The control plane's own recorders write an Event again when the one they update was deleted (client-go's
      // correlator creates a deduplicated event whose patch found it gone), seconds later under load: deleted once.
      if (kind === 'Event') continue;
      const deadline = Date.now() + 30_000;
      let left = (await this.list<KubernetesObject>(apiVersion, kind)).filter((x) => !SYSTEM_OBJECT(x));
      for (; left.length > 0; left = (await this.list<KubernetesObject>(apiVersion, kind)).filter((x) => !SYSTEM_OBJECT(x))) {
        if (Date.now() > deadline) throw new Error(`reset: ${left.length} ${kind} objects still there after 30 s: ${left.map((x) => x.metadata?.name).join(', ')}`);
        // A finalizer added meanwhile (a controller's) is taken off too.
        for (const o of left.filter((x) => (x.metadata?.finalizers ?? []).length > 0)) {
          await this.patch(apiVersion, kind, o.metadata!.name!, { metadata: { finalizers: null } }, o.metadata!.namespace).catch(notFound);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  /** Stops and starts the real kube-apiserver again, as an upgrade or a crash would. */
  async restart(): Promise<void> {
    await this.plane.restartApiServer();
  }

  async stop(): Promise<void> {
    await this.proxy.stop();
    await this.plane.stop();
  }
}

/** Swallows a 404: what was to go is gone already. */
function notFound(e: unknown): void {
  if (!(e instanceof ApiException && e.code === 404)) throw e;
}

/** Runs `write` again (it reads afresh) while the apiserver answers 409 Conflict. */
async function onConflictAgain<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (e) {
      if (!(e instanceof ApiException && e.code === 409) || attempt === 20) throw e;
    }
  }
}
