import {
  AuthorizationV1Api, BatchV1Api, CoordinationV1Api, CoreV1Api, CoreV1Event, KubeConfig, PatchStrategy, StorageV1Api,
  V1ConfigMap, V1ConfigMapList, V1Job, V1Lease, V1Node, V1NodeList, V1PersistentVolume, V1PersistentVolumeClaim,
  V1PersistentVolumeList, V1StorageClass,
} from '@kubernetes/client-node';
import { isNotFound } from './errors';
import { CallOptions, KubeRequester, KubeRequesterOptions } from './request';

/** One page of a list: `limit` objects at most, and where the next page starts. */
export interface PageRequest {
  readonly labelSelector?: string;
  /** `0` lets the server answer from its watch cache (cheap, maybe slightly stale); unset reads consistently. First page only. */
  readonly resourceVersion?: string;
  readonly limit?: number;
  readonly continueToken?: string;
}

/**
 * The API calls the runtime makes, each one a thin typed wrapper that goes through the
 * KubeRequester (rate limit, retries, timeout, metrics). A read of a missing object
 * answers undefined; every other failure is a KubeApiError.
 */
export class KubeApi {
  readonly requester: KubeRequester;
  private readonly core: CoreV1Api;
  private readonly batch: BatchV1Api;
  private readonly storage: StorageV1Api;
  private readonly coordination: CoordinationV1Api;
  private readonly authorization: AuthorizationV1Api;

  constructor(readonly kubeConfig: KubeConfig, options: KubeRequesterOptions = {}) {
    this.requester = new KubeRequester(options);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.batch = kubeConfig.makeApiClient(BatchV1Api);
    this.storage = kubeConfig.makeApiClient(StorageV1Api);
    this.coordination = kubeConfig.makeApiClient(CoordinationV1Api);
    this.authorization = kubeConfig.makeApiClient(AuthorizationV1Api);
  }

  /** Closes the connections kept open for reuse (shutdown). */
  close(): void {
    this.requester.close();
  }

  // PersistentVolumes

  getPersistentVolume(name: string): Promise<V1PersistentVolume | undefined> {
    return orUndefined(this.requester.call({ verb: 'get', resource: 'persistentvolumes', name },
      (o) => this.core.readPersistentVolume({ name }, o)));
  }

  listPersistentVolumes(page: PageRequest, options?: CallOptions): Promise<V1PersistentVolumeList> {
    return this.requester.call({ verb: 'list', resource: 'persistentvolumes' }, (o) => this.core.listPersistentVolume({
      labelSelector: page.labelSelector, limit: page.limit, _continue: page.continueToken, resourceVersion: page.resourceVersion,
    }, o), options);
  }

  createPersistentVolume(pv: V1PersistentVolume): Promise<V1PersistentVolume> {
    return this.requester.call({ verb: 'create', resource: 'persistentvolumes', name: pv.metadata?.name },
      (o) => this.core.createPersistentVolume({ body: pv }, o));
  }

  /**
   * Deletes the PV only if it is still the object `uid` and, when given, still at
   * `resourceVersion` (else 409 Conflict). A finalizer may keep it, terminating, a while.
   */
  async deletePersistentVolume(name: string, uid: string, resourceVersion?: string): Promise<void> {
    await this.requester.call({ verb: 'delete', resource: 'persistentvolumes', name },
      (o) => this.core.deletePersistentVolume({ name, body: { preconditions: { uid, resourceVersion } } }, o));
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
    return this.requester.call({ verb: 'patch', resource: 'persistentvolumes', name },
      (o) => this.core.patchPersistentVolume({ name, body: { metadata: { resourceVersion, ...change } } }, o),
      { contentType: PatchStrategy.MergePatch });
  }

  /** Sets (string) or removes (null) labels with a JSON merge patch, leaving the others alone. */
  patchPersistentVolumeLabels(name: string, labels: Record<string, string | null>): Promise<V1PersistentVolume> {
    return this.requester.call({ verb: 'patch', resource: 'persistentvolumes', name },
      (o) => this.core.patchPersistentVolume({ name, body: { metadata: { labels } } }, o),
      { contentType: PatchStrategy.MergePatch });
  }

  /** Sets (string) or removes (null) annotations with a JSON merge patch, leaving the others alone. */
  patchPersistentVolumeAnnotations(name: string, annotations: Record<string, string | null>): Promise<V1PersistentVolume> {
    return this.requester.call({ verb: 'patch', resource: 'persistentvolumes', name },
      (o) => this.core.patchPersistentVolume({ name, body: { metadata: { annotations } } }, o),
      { contentType: PatchStrategy.MergePatch });
  }

  // Nodes

  getNode(name: string): Promise<V1Node | undefined> {
    return orUndefined(this.requester.call({ verb: 'get', resource: 'nodes', name }, (o) => this.core.readNode({ name }, o)));
  }

  listNodes(page: PageRequest, options?: CallOptions): Promise<V1NodeList> {
    return this.requester.call({ verb: 'list', resource: 'nodes' }, (o) => this.core.listNode({
      labelSelector: page.labelSelector, limit: page.limit, _continue: page.continueToken, resourceVersion: page.resourceVersion,
    }, o), options);
  }

  /** A full update; fails with 409 when `node.metadata.resourceVersion` is stale. */
  replaceNode(node: V1Node): Promise<V1Node> {
    const name = node.metadata!.name!;
    return this.requester.call({ verb: 'update', resource: 'nodes', name }, (o) => this.core.replaceNode({ name, body: node }, o));
  }

  // StorageClasses, ConfigMaps

  getStorageClass(name: string): Promise<V1StorageClass | undefined> {
    return orUndefined(this.requester.call({ verb: 'get', resource: 'storageclasses', name },
      (o) => this.storage.readStorageClass({ name }, o)));
  }

  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
    return orUndefined(this.requester.call({ verb: 'get', resource: 'configmaps', namespace, name },
      (o) => this.core.readNamespacedConfigMap({ namespace, name }, o)));
  }

  listConfigMaps(namespace: string, page: PageRequest, options?: CallOptions): Promise<V1ConfigMapList> {
    return this.requester.call({ verb: 'list', resource: 'configmaps', namespace }, (o) => this.core.listNamespacedConfigMap({
      namespace, labelSelector: page.labelSelector, limit: page.limit, _continue: page.continueToken, resourceVersion: page.resourceVersion,
    }, o), options);
  }

  // PersistentVolumeClaims

  getPersistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
    return orUndefined(this.requester.call({ verb: 'get', resource: 'persistentvolumeclaims', namespace, name },
      (o) => this.core.readNamespacedPersistentVolumeClaim({ namespace, name }, o)));
  }

  /** Deletes the claim only if its UID is still `uid` (else 409 Conflict). */
  deletePersistentVolumeClaim(namespace: string, name: string, uid: string): Promise<unknown> {
    return this.requester.call({ verb: 'delete', resource: 'persistentvolumeclaims', namespace, name },
      (o) => this.core.deleteNamespacedPersistentVolumeClaim({ namespace, name, body: { preconditions: { uid } } }, o));
  }

  // Jobs

  createJob(namespace: string, job: V1Job): Promise<V1Job> {
    return this.requester.call({ verb: 'create', resource: 'jobs', namespace, name: job.metadata?.name },
      (o) => this.batch.createNamespacedJob({ namespace, body: job }, o));
  }

  getJob(namespace: string, name: string): Promise<V1Job | undefined> {
    return orUndefined(this.requester.call({ verb: 'get', resource: 'jobs', namespace, name },
      (o) => this.batch.readNamespacedJob({ namespace, name }, o)));
  }

  /** Deletes the Job and, in the background, its Pods. False when it was already gone. */
  async deleteJob(namespace: string, name: string): Promise<boolean> {
    try {
      await this.requester.call({ verb: 'delete', resource: 'jobs', namespace, name },
        (o) => this.batch.deleteNamespacedJob({ namespace, name, propagationPolicy: 'Background' }, o));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  // Leases

  getLease(namespace: string, name: string, options?: CallOptions): Promise<V1Lease | undefined> {
    return orUndefined(this.requester.call({ verb: 'get', resource: 'leases', namespace, name },
      (o) => this.coordination.readNamespacedLease({ namespace, name }, o), options));
  }

  createLease(namespace: string, lease: V1Lease, options?: CallOptions): Promise<V1Lease> {
    return this.requester.call({ verb: 'create', resource: 'leases', namespace, name: lease.metadata?.name },
      (o) => this.coordination.createNamespacedLease({ namespace, body: lease }, o), options);
  }

  /** A full update; fails with 409 when `lease.metadata.resourceVersion` is stale. */
  replaceLease(namespace: string, lease: V1Lease, options?: CallOptions): Promise<V1Lease> {
    const name = lease.metadata!.name!;
    return this.requester.call({ verb: 'update', resource: 'leases', namespace, name },
      (o) => this.coordination.replaceNamespacedLease({ namespace, name, body: lease }, o), options);
  }

  // Authorization

  /** Whether this client may `verb` the `resource` (of `group`, cluster-wide), by a SelfSubjectAccessReview. */
  async canI(verb: string, resource: string, group = ''): Promise<boolean> {
    const review = await this.requester.call({ verb: 'create', resource: 'selfsubjectaccessreviews' },
      (o) => this.authorization.createSelfSubjectAccessReview({
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: { verb, resource, group } } },
      }, o));
    return review.status?.allowed === true;
  }

  // Events (core/v1)

  createEvent(namespace: string, event: CoreV1Event): Promise<CoreV1Event> {
    return this.requester.call({ verb: 'create', resource: 'events', namespace, name: event.metadata?.name },
      (o) => this.core.createNamespacedEvent({ namespace, body: event }, o));
  }

  patchEvent(namespace: string, name: string, patch: object): Promise<CoreV1Event> {
    return this.requester.call({ verb: 'patch', resource: 'events', namespace, name },
      (o) => this.core.patchNamespacedEvent({ namespace, name, body: patch }, o),
      { contentType: PatchStrategy.MergePatch });
  }
}

async function orUndefined<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
