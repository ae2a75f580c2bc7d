import type {
  CoreV1Event, KubernetesListObject, KubernetesObject, V1ConfigMap, V1ConfigMapList, V1Job, V1Lease, V1Node, V1NodeList, V1PodList,
  V1CSIStorageCapacity, V1CSIStorageCapacityList, V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeClaimList, V1PersistentVolumeList,
  V1SelfSubjectAccessReview, V1StorageClass, V1ValidatingAdmissionPolicy, V1ValidatingAdmissionPolicyBinding, V1beta1MutatingAdmissionPolicy,
  V1beta1MutatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { isNotFound } from './errors';
import { HttpRequest, HttpTransport, QueryValue, WatchEventHandler } from './http-transport';
import { KubeConfigData } from './kubeconfig';
import { CallOptions, KubeRequester, KubeRequesterOptions } from './request';
import { RequestTarget } from './request-target';
import { SNAPSHOT_API, VolumeSnapshot, VolumeSnapshotContent, VolumeSnapshotContentStatus } from './snapshot-objects';

/** One page of a list: `limit` objects at most, and where the next page starts. */
export interface PageRequest {
  readonly labelSelector?: string;
  /** `0` lets the server answer from its watch cache (cheap, maybe slightly stale); unset reads consistently. First page only. */
  readonly resourceVersion?: string;
  readonly limit?: number;
  readonly continueToken?: string;
}

/** One watch of a collection, from a resourceVersion on. */
export interface WatchRequest {
  /** Plural resource name, for metrics and messages. */
  readonly resource: string;
  /** Collection path, e.g. `/api/v1/persistentvolumes`; may carry a field selector. */
  readonly path: string;
  readonly labelSelector?: string;
  /** Where to start; '' starts from now, the current objects sent first as ADDED. */
  readonly resourceVersion: string;
  /** The server ends the watch after this long. */
  readonly timeoutSeconds: number;
}

const MERGE_PATCH = 'application/merge-patch+json';

/** Where a resource lives: the API group's path prefix and whether it is namespaced. */
const CORE = '/api/v1';
const STORAGE = '/apis/storage.k8s.io/v1';
const BATCH = '/apis/batch/v1';
const COORDINATION = '/apis/coordination.k8s.io/v1';
const ADMISSION = '/apis/admissionregistration.k8s.io/v1';

/** `/api/v1/namespaces/ns/configmaps/name`; namespace and name are left out when undefined. */
function resourcePath(group: string, resource: string, namespace?: string, name?: string): string {
  const ns = namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`;
  return `${group}${ns}/${resource}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
}

/**
 * The API calls the runtime makes, each a few lines: a target (for metrics, retries and
 * messages) and an HTTP request, sent through the KubeRequester (rate limit, retries,
 * timeout, metrics). Objects are plain JSON as the server sends them: timestamps are
 * RFC 3339 strings, whatever the generated types say. A read of a missing object
 * answers undefined; every other failure is a KubeApiError.
 */
export class KubeApi {
  readonly requester: KubeRequester;
  private readonly transport: HttpTransport;

  /**
   * `kubeConfig`: ours (loadKubeConfig), or any object of the same shape, such as client-node's KubeConfig.
   * `options.transport`: the connection(s) to share with other KubeApis of the same kubeconfig (each has its own rate limit).
   */
  constructor(readonly kubeConfig: KubeConfigData, options: KubeRequesterOptions & { readonly transport?: HttpTransport } = {}) {
    this.requester = new KubeRequester(options);
    this.transport = options.transport ?? new HttpTransport(kubeConfig);
  }

  /** Closes the connections kept open for reuse (shutdown), a shared transport's too. */
  close(): void {
    this.transport.close();
  }

  // PersistentVolumes

  getPersistentVolume(name: string): Promise<V1PersistentVolume | undefined> {
    return this.read({ verb: 'get', resource: 'persistentvolumes', name }, resourcePath(CORE, 'persistentvolumes', undefined, name));
  }

  listPersistentVolumes(page: PageRequest, options?: CallOptions): Promise<V1PersistentVolumeList> {
    return this.list({ verb: 'list', resource: 'persistentvolumes' }, resourcePath(CORE, 'persistentvolumes'), page, options);
  }

  createPersistentVolume(pv: V1PersistentVolume): Promise<V1PersistentVolume> {
    return this.send({ verb: 'create', resource: 'persistentvolumes', name: pv.metadata?.name },
      { method: 'POST', path: resourcePath(CORE, 'persistentvolumes'), body: pv });
  }

  /**
   * Deletes the PV only if it is still the object `uid` and, when given, still at
   * `resourceVersion` (else 409 Conflict). A finalizer may keep it, terminating, a while.
   */
  async deletePersistentVolume(name: string, uid: string, resourceVersion?: string): Promise<void> {
    await this.send({ verb: 'delete', resource: 'persistentvolumes', name },
      { method: 'DELETE', path: resourcePath(CORE, 'persistentvolumes', undefined, name), body: { preconditions: { uid, resourceVersion } } });
  }

  /**
   * Sets the PV's finalizers, and sets (string) or removes (null) annotations, only if
   * it is still at `resourceVersion` (else 409 Conflict): a JSON merge patch that
   * carries the resourceVersion is an optimistic-concurrency update.
   */
  patchPersistentVolumeMetadata(name: string, resourceVersion: string, change: {
    readonly finalizers?: readonly string[];
    readonly annotations?: Readonly<Record<string, string | null>>;
  }): Promise<V1PersistentVolume> {
    return this.send({ verb: 'patch', resource: 'persistentvolumes', name },
      { method: 'PATCH', path: resourcePath(CORE, 'persistentvolumes', undefined, name), body: { metadata: { resourceVersion, ...change } }, contentType: MERGE_PATCH });
  }

  /** Sets the PV's capacity (a resize) only if it is still at `resourceVersion`. */
  patchPersistentVolumeCapacity(name: string, resourceVersion: string, storage: string): Promise<V1PersistentVolume> {
    return this.send({ verb: 'patch', resource: 'persistentvolumes', name },
      {
        method: 'PATCH',
        path: resourcePath(CORE, 'persistentvolumes', undefined, name),
        body: { metadata: { resourceVersion }, spec: { capacity: { storage } } },
        contentType: MERGE_PATCH,
      });
  }

  /** Sets (string) or removes (null) labels with a JSON merge patch, leaving the others alone. */
  patchPersistentVolumeLabels(name: string, labels: Record<string, string | null>): Promise<V1PersistentVolume> {
    return this.send({ verb: 'patch', resource: 'persistentvolumes', name },
      { method: 'PATCH', path: resourcePath(CORE, 'persistentvolumes', undefined, name), body: { metadata: { labels } }, contentType: MERGE_PATCH });
  }

  /** Sets (string) or removes (null) annotations with a JSON merge patch, leaving the others alone. */
  patchPersistentVolumeAnnotations(name: string, annotations: Record<string, string | null>): Promise<V1PersistentVolume> {
    return this.send({ verb: 'patch', resource: 'persistentvolumes', name },
      { method: 'PATCH', path: resourcePath(CORE, 'persistentvolumes', undefined, name), body: { metadata: { annotations } }, contentType: MERGE_PATCH });
  }

  /**
   * Asks whether clearing the PV's claimRef would be accepted, without changing anything (a
   * server-side dry run, which runs admission): how the agent proves the claim guard is in
   * force. Resolves when it would be accepted; a refusal is a KubeApiError.
   */
  async dryRunClearClaimRef(name: string): Promise<void> {
    await this.send({ verb: 'patch', resource: 'persistentvolumes', name },
      { method: 'PATCH', path: resourcePath(CORE, 'persistentvolumes', undefined, name), query: { dryRun: 'All' }, body: { spec: { claimRef: null } }, contentType: MERGE_PATCH });
  }

  // Nodes

  getNode(name: string): Promise<V1Node | undefined> {
    return this.read({ verb: 'get', resource: 'nodes', name }, resourcePath(CORE, 'nodes', undefined, name));
  }

  listNodes(page: PageRequest, options?: CallOptions): Promise<V1NodeList> {
    return this.list({ verb: 'list', resource: 'nodes' }, resourcePath(CORE, 'nodes'), page, options);
  }

  /** A full update; fails with 409 when `node.metadata.resourceVersion` is stale. */
  replaceNode(node: V1Node): Promise<V1Node> {
    const name = node.metadata!.name!;
    return this.send({ verb: 'update', resource: 'nodes', name }, { method: 'PUT', path: resourcePath(CORE, 'nodes', undefined, name), body: node });
  }

  // StorageClasses, ConfigMaps

  getStorageClass(name: string): Promise<V1StorageClass | undefined> {
    return this.read({ verb: 'get', resource: 'storageclasses', name }, resourcePath(STORAGE, 'storageclasses', undefined, name));
  }

  listStorageClasses(page: PageRequest, options?: CallOptions): Promise<KubernetesListObject<V1StorageClass>> {
    return this.list({ verb: 'list', resource: 'storageclasses' }, resourcePath(STORAGE, 'storageclasses'), page, options);
  }

  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
    return this.read({ verb: 'get', resource: 'configmaps', namespace, name }, resourcePath(CORE, 'configmaps', namespace, name));
  }

  listConfigMaps(namespace: string, page: PageRequest, options?: CallOptions): Promise<V1ConfigMapList> {
    return this.list({ verb: 'list', resource: 'configmaps', namespace }, resourcePath(CORE, 'configmaps', namespace), page, options);
  }

  // PersistentVolumeClaims

  getPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
    return this.read({ verb: 'get', resource: 'persistentvolumeclaims', namespace, name },
      resourcePath(CORE, 'persistentvolumeclaims', namespace, name));
  }

  /** Claims in every namespace (the pool classes' claims may be anywhere). */
  listPersistentVolumeClaims(page: PageRequest, options?: CallOptions): Promise<V1PersistentVolumeClaimList> {
    return this.list({ verb: 'list', resource: 'persistentvolumeclaims' }, resourcePath(CORE, 'persistentvolumeclaims'), page, options);
  }

  /**
   * Sets (string) or removes (null) the claim's annotations only if it is still at
   * `resourceVersion` (else 409 Conflict): a claim given back to the scheduler must be
   * the one that was judged not to fit.
   */
  patchPersistentVolumeClaimAnnotations(namespace: string, name: string, resourceVersion: string,
    annotations: Readonly<Record<string, string | null>>): Promise<V1PersistentVolumeClaim> {
    return this.send({ verb: 'patch', resource: 'persistentvolumeclaims', namespace, name },
      { method: 'PATCH', path: resourcePath(CORE, 'persistentvolumeclaims', namespace, name), body: { metadata: { resourceVersion, annotations } }, contentType: MERGE_PATCH });
  }

  /** Sets (or, null, removes) the claim's labels only if it is still at `resourceVersion`: a JSON merge patch. */
  patchPersistentVolumeClaimLabels(namespace: string, name: string, resourceVersion: string,
    labels: Readonly<Record<string, string | null>>): Promise<V1PersistentVolumeClaim> {
    return this.send({ verb: 'patch', resource: 'persistentvolumeclaims', namespace, name },
      { method: 'PATCH', path: resourcePath(CORE, 'persistentvolumeclaims', namespace, name), body: { metadata: { resourceVersion, labels } }, contentType: MERGE_PATCH });
  }

  /**
   * Sets the claim's status fields (a resize's outcome) only if it is still at
   * `resourceVersion`: a JSON merge patch of the status subresource, as a resizer writes it.
   */
  patchPersistentVolumeClaimStatus(namespace: string, name: string, resourceVersion: string, status: object): Promise<V1PersistentVolumeClaim> {
    return this.send({ verb: 'patch', resource: 'persistentvolumeclaims/status', namespace, name },
      {
        method: 'PATCH',
        path: `${resourcePath(CORE, 'persistentvolumeclaims', namespace, name)}/status`,
        body: { metadata: { resourceVersion }, status },
        contentType: MERGE_PATCH,
      });
  }

  /** Deletes the claim only if its UID is still `uid` (else 409 Conflict). */
  deletePersistentVolumeClaim(namespace: string, name: string, uid: string): Promise<unknown> {
    return this.send({ verb: 'delete', resource: 'persistentvolumeclaims', namespace, name },
      { method: 'DELETE', path: resourcePath(CORE, 'persistentvolumeclaims', namespace, name), body: { preconditions: { uid } } });
  }

  // CSIStorageCapacity: what a node's pools can still give, for the scheduler

  getStorageCapacity(namespace: string, name: string): Promise<V1CSIStorageCapacity | undefined> {
    return this.read({ verb: 'get', resource: 'csistoragecapacities', namespace, name }, resourcePath(STORAGE, 'csistoragecapacities', namespace, name));
  }

  /** One page; the capacity objects of one node are few (one per pool class). */
  listStorageCapacities(namespace: string, page: PageRequest): Promise<V1CSIStorageCapacityList> {
    return this.list({ verb: 'list', resource: 'csistoragecapacities', namespace }, resourcePath(STORAGE, 'csistoragecapacities', namespace), page);
  }

  createStorageCapacity(namespace: string, capacity: V1CSIStorageCapacity): Promise<V1CSIStorageCapacity> {
    return this.send({ verb: 'create', resource: 'csistoragecapacities', namespace, name: capacity.metadata?.name },
      { method: 'POST', path: resourcePath(STORAGE, 'csistoragecapacities', namespace), body: capacity });
  }

  /** A full update; 409 when `capacity.metadata.resourceVersion` is stale. */
  replaceStorageCapacity(namespace: string, capacity: V1CSIStorageCapacity): Promise<V1CSIStorageCapacity> {
    const name = capacity.metadata!.name!;
    return this.send({ verb: 'update', resource: 'csistoragecapacities', namespace, name },
      { method: 'PUT', path: resourcePath(STORAGE, 'csistoragecapacities', namespace, name), body: capacity });
  }

  async deleteStorageCapacity(namespace: string, name: string): Promise<void> {
    try {
      await this.send({ verb: 'delete', resource: 'csistoragecapacities', namespace, name },
        { method: 'DELETE', path: resourcePath(STORAGE, 'csistoragecapacities', namespace, name) });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  // Snapshots: the agent is its own driver's snapshotter (snapshot-objects.ts)

  /** The resources an API group version serves; undefined when the server does not serve it (its CRDs not installed). */
  apiResources(groupVersionPath: string): Promise<{ resources?: Array<{ name: string }> } | undefined> {
    return this.read({ verb: 'get', resource: 'apiresources', name: groupVersionPath }, groupVersionPath);
  }

  getVolumeSnapshot(namespace: string, name: string): Promise<VolumeSnapshot | undefined> {
    return this.read({ verb: 'get', resource: 'volumesnapshots', namespace, name }, resourcePath(SNAPSHOT_API, 'volumesnapshots', namespace, name));
  }

  getVolumeSnapshotContent(name: string): Promise<VolumeSnapshotContent | undefined> {
    return this.read({ verb: 'get', resource: 'volumesnapshotcontents', name }, resourcePath(SNAPSHOT_API, 'volumesnapshotcontents', undefined, name));
  }

  listVolumeSnapshotContents(page: PageRequest, options?: CallOptions): Promise<KubernetesListObject<VolumeSnapshotContent>> {
    return this.list({ verb: 'list', resource: 'volumesnapshotcontents' }, resourcePath(SNAPSHOT_API, 'volumesnapshotcontents'), page, options);
  }

  /**
   * Sets the content's status fields (a JSON merge patch of its status subresource, where the
   * sidecar writes them) only if it is still at `resourceVersion`; null removes a field.
   */
  patchVolumeSnapshotContentStatus(name: string, resourceVersion: string,
    status: { readonly [K in keyof VolumeSnapshotContentStatus]: VolumeSnapshotContentStatus[K] | null }): Promise<VolumeSnapshotContent> {
    return this.send({ verb: 'patch', resource: 'volumesnapshotcontents/status', name }, {
      method: 'PATCH',
      path: `${resourcePath(SNAPSHOT_API, 'volumesnapshotcontents', undefined, name)}/status`,
      body: { metadata: { resourceVersion }, status },
      contentType: MERGE_PATCH,
    });
  }

  /** Sets the content's finalizers only if it is still at `resourceVersion`. */
  patchVolumeSnapshotContentFinalizers(name: string, resourceVersion: string, finalizers: readonly string[]): Promise<VolumeSnapshotContent> {
    return this.send({ verb: 'patch', resource: 'volumesnapshotcontents', name }, {
      method: 'PATCH',
      path: resourcePath(SNAPSHOT_API, 'volumesnapshotcontents', undefined, name),
      body: { metadata: { resourceVersion, finalizers } },
      contentType: MERGE_PATCH,
    });
  }

  // Jobs

  createJob(namespace: string, job: V1Job): Promise<V1Job> {
    return this.send({ verb: 'create', resource: 'jobs', namespace, name: job.metadata?.name },
      { method: 'POST', path: resourcePath(BATCH, 'jobs', namespace), body: job });
  }

  getJob(namespace: string, name: string): Promise<V1Job | undefined> {
    return this.read({ verb: 'get', resource: 'jobs', namespace, name }, resourcePath(BATCH, 'jobs', namespace, name));
  }

  /** The pods of a Job (its `job-name` label), to read how its container ended. */
  listJobPods(namespace: string, jobName: string): Promise<V1PodList> {
    return this.send({ verb: 'list', resource: 'pods', namespace },
      { method: 'GET', path: resourcePath(CORE, 'pods', namespace), query: { labelSelector: `job-name=${jobName}` } });
  }

  /** Deletes the Job and, in the background, its Pods. False when it was already gone. */
  async deleteJob(namespace: string, name: string): Promise<boolean> {
    try {
      await this.send({ verb: 'delete', resource: 'jobs', namespace, name },
        { method: 'DELETE', path: resourcePath(BATCH, 'jobs', namespace, name), query: { propagationPolicy: 'Background' } });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  // Leases

  getLease(namespace: string, name: string, options?: CallOptions): Promise<V1Lease | undefined> {
    return this.read({ verb: 'get', resource: 'leases', namespace, name }, resourcePath(COORDINATION, 'leases', namespace, name), options);
  }

  createLease(namespace: string, lease: V1Lease, options?: CallOptions): Promise<V1Lease> {
    return this.send({ verb: 'create', resource: 'leases', namespace, name: lease.metadata?.name },
      { method: 'POST', path: resourcePath(COORDINATION, 'leases', namespace), body: lease }, options);
  }

  /** A full update; fails with 409 when `lease.metadata.resourceVersion` is stale. */
  replaceLease(namespace: string, lease: V1Lease, options?: CallOptions): Promise<V1Lease> {
    const name = lease.metadata!.name!;
    return this.send({ verb: 'update', resource: 'leases', namespace, name },
      { method: 'PUT', path: resourcePath(COORDINATION, 'leases', namespace, name), body: lease }, options);
  }

  // The claim guard (an admission policy and its binding), read by name

  getValidatingAdmissionPolicy(name: string): Promise<V1ValidatingAdmissionPolicy | undefined> {
    return this.read({ verb: 'get', resource: 'validatingadmissionpolicies', name }, resourcePath(ADMISSION, 'validatingadmissionpolicies', undefined, name));
  }

  getValidatingAdmissionPolicyBinding(name: string): Promise<V1ValidatingAdmissionPolicyBinding | undefined> {
    return this.read({ verb: 'get', resource: 'validatingadmissionpolicybindings', name },
      resourcePath(ADMISSION, 'validatingadmissionpolicybindings', undefined, name));
  }

  /** admissionregistration.k8s.io/v1 (Kubernetes 1.36+): client-node's types are of v1beta1, whose fields this client reads are the same. */
  getMutatingAdmissionPolicy(name: string): Promise<V1beta1MutatingAdmissionPolicy | undefined> {
    return this.read({ verb: 'get', resource: 'mutatingadmissionpolicies', name }, resourcePath(ADMISSION, 'mutatingadmissionpolicies', undefined, name));
  }

  getMutatingAdmissionPolicyBinding(name: string): Promise<V1beta1MutatingAdmissionPolicyBinding | undefined> {
    return this.read({ verb: 'get', resource: 'mutatingadmissionpolicybindings', name },
      resourcePath(ADMISSION, 'mutatingadmissionpolicybindings', undefined, name));
  }

  // Authorization

  /** Whether this client may `verb` the `resource` (of `group`, cluster-wide), by a SelfSubjectAccessReview. */
  async canI(verb: string, resource: string, group = ''): Promise<boolean> {
    const review = await this.send<V1SelfSubjectAccessReview>({ verb: 'create', resource: 'selfsubjectaccessreviews' }, {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb, resource, group } } },
    });
    return review.status?.allowed === true;
  }

  // Events (core/v1)

  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    return this.send({ verb: 'create', resource: 'events', namespace, name: event.metadata?.name },
      { method: 'POST', path: resourcePath(CORE, 'events', namespace), body: event });
  }

  patchEvent(namespace: string, name: string, patch: object): Promise<CoreV1Event> {
    return this.send({ verb: 'patch', resource: 'events', namespace, name },
      { method: 'PATCH', path: resourcePath(CORE, 'events', namespace, name), body: patch, contentType: MERGE_PATCH });
  }

  // Watches

  /**
   * Watches a collection until the server ends the watch (resolves) or it fails
   * (a KubeApiError when the server refused it, e.g. 410 Gone or 403). Opening it takes
   * a rate-limit token and counts as one request; `signal` ends it quietly. `onOpen` is
   * called once the server has accepted it.
   */
  watch(request: WatchRequest, onEvent: WatchEventHandler, signal: AbortSignal, onOpen?: () => void): Promise<void> {
    return this.requester.stream({ verb: 'watch', resource: request.resource }, signal, (counted) => this.transport.watch({
      method: 'GET',
      path: request.path,
      query: {
        watch: 'true',
        labelSelector: request.labelSelector,
        // None: from now, the current objects first as ADDED.
        resourceVersion: request.resourceVersion || undefined,
        allowWatchBookmarks: 'true',
        timeoutSeconds: request.timeoutSeconds,
      },
      signal,
    }, onEvent, () => {
      counted();
      onOpen?.();
    }));
  }

  private send<T>(target: RequestTarget, request: Omit<HttpRequest, 'signal'>, options?: CallOptions): Promise<T> {
    return this.requester.call(target, (signal) => this.transport.request<T>({ ...request, signal }), options);
  }

  private async read<T>(target: RequestTarget, path: string, options?: CallOptions): Promise<T | undefined> {
    try {
      return await this.send<T>(target, { method: 'GET', path }, options);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** One page; the list's `metadata.continue` is given as `_continue`, the generated types' name for it. */
  private async list<L extends KubernetesListObject<KubernetesObject>>(target: RequestTarget, path: string, page: PageRequest, options?: CallOptions):
  Promise<L> {
    const query: Record<string, QueryValue> = {
      labelSelector: page.labelSelector, limit: page.limit, continue: page.continueToken, resourceVersion: page.resourceVersion,
    };
    const list = await this.send<L & { metadata?: { continue?: string } }>(target, { method: 'GET', path, query }, options);
    if (list.metadata?.continue) list.metadata._continue = list.metadata.continue;
    return list;
  }
}
