/**
 * A whole directory-dialect controller against a real control plane (test/support/kubernetes.ts:
 * apiserver, PV binder and the other controllers), for the integration tests next to this
 * file: a Node and StorageClasses in the cluster,
 * a temporary discovery directory per class (the tests put real bind mounts and
 * loop devices in them), and the runtime's real parts wired as run-directory.ts
 * wires them (KubeApi, NodePvCache, EventRecorder, ProvisionerMetrics, process
 * table, Deleter, DirectoryController).
 */
import * as path from 'node:path';
import { CoreV1Event, V1PersistentVolume, V1Taint } from '@kubernetes/client-node';
import { ClassConfigInput, ProvisionerConfig, ProvisionerConfigInput, resolveProvisionerConfig } from '../../../src/config';
import { NodeInfoSource } from '../../../src/runtime/agent/node-info-source';
import { BackoffPolicy, ReclaimMode } from '../../../src/runtime/cleanup';
import { mountTableReader } from '../../../src/runtime/discovery';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { StorageClassCache } from '../../../src/runtime/kube/storage-class-cache';
import { directoryPVName, NodeInfo, provisionerName } from '../../../src/runtime/pv';
import { DirectoryController, DirectoryPassResult } from '../../../src/runtime/static/directory-controller';
import { PROVISIONED_BY_ANNOTATION } from '../../../src/runtime/well-known';
import { AgentParts } from '../../support/agent-parts';
import { Kubernetes } from '../../support/kubernetes';
import { cachedPvText, pvGone, pvIs, PvState } from '../../support/persistent-volumes';
import { makeTempDir } from '../../support/privileged';
import { eventually } from '../kube/fixtures';

export { eventually };

export const NODE_NAME = 'worker-1';
/** The Node's `kubernetes.io/hostname` label differs from its name, as on some clouds. */
export const NODE_HOSTNAME = 'worker-1.example.internal';
export const JOB_NAMESPACE = 'local-storage';
export const JOB_IMAGE = 'registry.example/local-volume-provisioner:test';

export interface StorageClassSpec {
  /** @default Delete (by leaving the field unset, as nil means Delete) */
  readonly reclaimPolicy?: 'Delete' | 'Retain';
  readonly mountOptions?: string[];
}

/** A class of the fixture: its config entry (hostDir and mountDir made up when absent) and its StorageClass. */
export interface FixtureClass extends Partial<ClassConfigInput> {
  /** The StorageClass object; false for none. @default {} */
  readonly storageClass?: StorageClassSpec | false;
}

export interface FixtureOptions {
  /** @default { 'local-fs': {} } */
  readonly classes?: Record<string, FixtureClass>;
  /** Top-level configuration keys besides storageClassMap. */
  readonly config?: Omit<ProvisionerConfigInput, 'storageClassMap'>;
  /** Extra labels of the Node. */
  readonly nodeLabels?: Record<string, string>;
  /** Backoff of failed cleanups. @default 200 ms, at most 1 s */
  readonly backoff?: BackoffPolicy;
  /** Reuse this cluster (and its state) instead of the suite's; the fixture leaves it as it is. */
  readonly server?: Kubernetes;
  /** Write the Node, the namespace and the StorageClasses. @default true unless `server` is given */
  readonly seed?: boolean;
  /** Reuse these discovery directories (class name to mountDir). */
  readonly mountDirs?: Record<string, string>;
  /** Runs before the cache starts (e.g. the adoption pass, as run-directory.ts does). */
  readonly beforeCacheStart?: (fx: ControllerFixture) => Promise<void>;
  /** How PVs are held. @default 'finalizer' */
  readonly mode?: ReclaimMode;
  /** The node's volume record, kept by an earlier agent of this node (a restart). @default a new directory */
  readonly stateDir?: string;
}

export class ControllerFixture extends AgentParts {
  /** Takes the suite's cluster (unless given), writes the Node and StorageClasses, starts the cache. */
  static async start(options: FixtureOptions = {}): Promise<ControllerFixture> {
    const server = options.server ?? await Kubernetes.forSuite({ controllers: true });
    // Whatever an earlier test of the suite left (one that failed before its stop()) is gone first.
    if (!options.server) await server.reset();
    const classes = options.classes ?? { 'local-fs': {} };
    const seed = options.seed ?? !options.server;
    const dirs: Record<string, string> = {};
    const storageClassMap: Record<string, ClassConfigInput> = {};
    for (const [name, { storageClass, ...entry }] of Object.entries(classes)) {
      const mountDir = entry.mountDir ?? options.mountDirs?.[name] ?? makeTempDir(`lvp-${name}-`);
      dirs[name] = mountDir;
      storageClassMap[name] = { hostDir: `/mnt/host/${name}`, ...entry, mountDir };
      if (seed && storageClass !== false) await createStorageClass(server, name, storageClass ?? {});
    }
    if (seed) await seedCluster(server, options.nodeLabels);
    const resolved = resolveProvisionerConfig({ ...options.config, storageClassMap });
    if (!resolved.ok) throw new Error(`fixture config is invalid: ${JSON.stringify(resolved.errors)}`);
    const fx = new ControllerFixture(server, resolved.config, dirs, !options.server,
      options.backoff ?? { initialMs: 200, maxMs: 1000 }, options.mode ?? 'finalizer', options.stateDir);
    await options.beforeCacheStart?.(fx);
    await fx.cache.start();
    return fx;
  }

  readonly controller: DirectoryController;
  readonly nodes: NodeInfoSource;

  private constructor(
    readonly server: Kubernetes,
    readonly config: ProvisionerConfig,
    /** Class name to its discovery directory (mountDir). */
    readonly dirs: Record<string, string>,
    private readonly ownsServer: boolean,
    backoff: BackoffPolicy,
    mode: ReclaimMode,
    stateDir: string | undefined,
  ) {
    // Quick retries, and a rate limit that never makes a test wait (the default, 20 QPS, is for real clusters).
    super(new KubeApi(server.kubeConfig(), { qps: 1000, burst: 1000, backoff: { initialMs: 5, maxMs: 50 } }), NODE_NAME,
      {
        maxConcurrent: config.maxConcurrentCleanups,
        timeoutMs: config.cleanupTimeout,
        stallTimeoutMs: config.cleanupStallTimeout,
        backoff,
        mode,
        stateDir,
      });
    this.nodes = new NodeInfoSource(this.api, NODE_NAME, this.logger, 0);
    this.controller = new DirectoryController({
      api: this.api,
      mode: this.mode,
      cache: this.cache,
      storageClasses: new StorageClassCache(this.api, { ttlMs: 0 }),
      events: this.events,
      metrics: this.metrics,
      logger: this.logger,
      deleter: this.deleter,
      keeper: this.keeper,
      readMountTable: mountTableReader(),
      namespace: JOB_NAMESPACE,
      jobContainerImage: JOB_IMAGE,
      jobPollIntervalMs: 20,
    });
  }

  /** One controller pass with the fixture's configuration. */
  async pass(config: ProvisionerConfig = this.config): Promise<DirectoryPassResult> {
    return this.controller.pass(config, await this.node());
  }

  node(): Promise<NodeInfo> {
    return this.nodes.get();
  }

  async provisionerName(): Promise<string> {
    const node = await this.node();
    return provisionerName(node.name, node.uid, this.config.useNodeNameOnly);
  }

  /** Waits until the failed cleanup of this PV UID may start again (its backoff has passed). */
  async waitForRetry(pvUid: string): Promise<void> {
    const retryAt = this.table.get(pvUid)?.retryAt;
    if (retryAt === undefined) throw new Error(`no failed cleanup of PV UID ${pvUid} is backing off`);
    await new Promise((r) => setTimeout(r, Math.max(0, retryAt - Date.now()) + 10));
  }

  pvName(className: string, entry: string): string {
    return directoryPVName(entry, NODE_NAME, className);
  }

  /** The PV as the cluster has it now. */
  serverPv(name: string): Promise<V1PersistentVolume | undefined> {
    return this.server.get('v1', 'PersistentVolume', name);
  }

  /** Every PV in the cluster, by name. */
  async serverPvNames(): Promise<string[]> {
    return (await this.server.list<V1PersistentVolume>('v1', 'PersistentVolume')).map((p) => p.metadata!.name!).sort();
  }

  /** Events written so far (after the recorder's queue drains), optionally of one reason. */
  async recordedEvents(reason?: string): Promise<CoreV1Event[]> {
    await this.events.flush();
    // The agent's own: the controller manager writes Events about PVs too, with no host.
    return (await this.server.list<CoreV1Event>('v1', 'Event', 'default'))
      .filter((e) => e.source?.host === NODE_NAME && (reason === undefined || e.reason === reason));
  }

  /** Waits until the cache agrees with `condition`. */
  async waitForCache(condition: (pvs: V1PersistentVolume[]) => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
    await eventually(() => condition(this.cache.list()), what, timeoutMs);
  }

  /** Waits until the cache holds this PV (any UID, or not `notUid`). */
  async waitForPv(name: string, options: PvState = {}): Promise<V1PersistentVolume> {
    await this.waitForCache(() => pvIs(this.cache.get(name), options), cachedPvText(name, options));
    return this.cache.get(name)!;
  }

  async waitForPvGone(name: string, uid?: string): Promise<void> {
    await this.waitForCache(() => pvGone(this.cache.get(name), uid), `PV ${name}${uid ? ` (UID ${uid})` : ''} is gone from the cache`);
  }

  /** A user's new claim for the PV, which the PV binder binds to it. Returns the claim's name. */
  bind(pvName: string, claimName = `claim-${pvName}`): Promise<string> {
    return this.server.bindNewClaim(pvName, claimName);
  }

  /** Binds a claim to the PV, deletes the claim, and waits until the cache sees the PV Released. */
  async release(pvName: string, beforeDelete?: () => void | Promise<void>): Promise<V1PersistentVolume> {
    const claim = await this.bind(pvName);
    await this.waitForPv(pvName, { phase: 'Bound' });
    await beforeDelete?.();
    await this.core.deleteNamespacedPersistentVolumeClaim({ name: claim, namespace: 'default' });
    return this.waitForPv(pvName, { phase: 'Released' });
  }

  /** Stops cleanups and the cache, and resets the suite's cluster when the fixture took it. */
  async stop(): Promise<void> {
    await this.stopParts();
    if (this.ownsServer) await this.server.reset();
  }
}

/** This node and the Job namespace. */
export async function seedCluster(server: Kubernetes, nodeLabels: Record<string, string> = {}, taints: V1Taint[] = []): Promise<void> {
  await server.create({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_HOSTNAME, ...nodeLabels } },
    ...(taints.length > 0 ? { spec: { taints } } : {}),
  });
  await server.ensure({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: JOB_NAMESPACE } });
}

export async function createStorageClass(server: Kubernetes, name: string, spec: StorageClassSpec): Promise<void> {
  await server.create({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: 'kubernetes.io/no-provisioner',
    volumeBindingMode: 'WaitForFirstConsumer',
    ...(spec.reclaimPolicy ? { reclaimPolicy: spec.reclaimPolicy } : {}),
    ...(spec.mountOptions ? { mountOptions: spec.mountOptions } : {}),
  });
}

/**
 * A PV of the `local-fs` class on this node, as a provisioner wrote it: with
 * `labels` when given (the Go static provisioner writes none), 1Gi, Filesystem.
 */
export function localFsPv(name: string, localPath: string, provisioner: string, labels?: Record<string, string>): V1PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, ...(labels ? { labels } : {}), annotations: { [PROVISIONED_BY_ANNOTATION]: provisioner } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'local-fs',
      volumeMode: 'Filesystem',
      local: { path: localPath },
      nodeAffinity: {
        required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_HOSTNAME] }] }] },
      },
    },
  };
}

/** `dir/entry`. */
export function entryPath(dir: string, entry: string): string {
  return path.join(dir, entry);
}
