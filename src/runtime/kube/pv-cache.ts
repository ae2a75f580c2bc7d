import type { V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { BackoffOptions } from './backoff';
import { KubeLogger } from './logger';
import { ChangeListener, Reflector } from './reflector';
import { NODE_LABEL } from '../well-known';

/**
 * A copy unconfirmed for longer is reported stale. Failing watches are replaced by a
 * list after three in a row or once the copy is 30 s old, after that failure's backoff
 * (at most 60 s: 30 s and its jitter, reached after about a minute of failures), so only
 * a server whose watches have failed for a minute or more, or whose lists fail too, gets here.
 */
export const STALE_AFTER_MS = 60_000;

export interface NodePvCacheOptions {
  /** This node: only PVs labelled `local.storage.k8s.io/node=<nodeName>` are listed and watched. */
  readonly nodeName: string;
  /**
   * Where this node's older PVs cannot be given our node label (RBAC grants no patch on
   * PVs, as with the Go provisioner's chart): every PV is listed and watched, and those
   * with our node label, or without any and accepted by this, are kept, as the Go
   * provisioner's own cache does (its memory and traffic then grow with the cluster).
   * @default - the server selects by our node label
   */
  readonly unlabelled?: (pv: V1PersistentVolume) => boolean;
  /** PVs per list page. @default 500 */
  readonly pageSize?: number;
  /** Server-side lifetime of one watch. @default random in [minWatchSeconds, 2 × minWatchSeconds) */
  readonly watchTimeoutSeconds?: number;
  /** The shortest random watch lifetime (the directory dialect's `minResyncPeriod`). @default 300 */
  readonly minWatchSeconds?: number;
  /** Between failed lists or watches. */
  readonly backoff?: BackoffOptions;
  readonly logger?: KubeLogger;
}

/**
 * This node's PVs, kept current by a list and watch that the API server filters by our
 * node label: memory and traffic grow with this node's volumes, not the cluster's
 * (unless `unlabelled` is given). Also indexes them by `spec.local.path` for the
 * duplicate-path guard.
 */
export class NodePvCache {
  private readonly reflector: Reflector<V1PersistentVolume>;
  private readonly byPath = new Map<string, Set<string>>();
  private changes = 0;

  /** Whether a PV is one of this node's. */
  private readonly belongs: (pv: V1PersistentVolume) => boolean;

  constructor(api: KubeApi, options: NodePvCacheOptions) {
    const { nodeName, unlabelled } = options;
    const labelled = (pv: V1PersistentVolume) => pv.metadata?.labels?.[NODE_LABEL] === nodeName;
    this.belongs = unlabelled
      ? (pv) => labelled(pv) || (pv.metadata?.labels?.[NODE_LABEL] === undefined && unlabelled(pv))
      : labelled;
    this.reflector = new Reflector<V1PersistentVolume>(api, {
      resource: 'persistentvolumes',
      watchPath: '/api/v1/persistentvolumes',
      ...(unlabelled ? { accept: this.belongs } : { labelSelector: nodeLabelSelector(nodeName) }),
      list: (page, callOptions) => api.listPersistentVolumes(page, callOptions),
      pageSize: options.pageSize,
      watchTimeoutSeconds: options.watchTimeoutSeconds,
      minWatchSeconds: options.minWatchSeconds,
      backoff: options.backoff,
      logger: options.logger,
    });
    this.reflector.onChange(({ type, object, previous }) => {
      this.changes++;
      if (previous) this.unindex(previous);
      if (type === 'delete') this.unindex(object); else this.index(object);
    });
  }

  /** Starts the list and watch; resolves once the first list is in. */
  start(): Promise<void> {
    return this.reflector.start();
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  /**
   * Why the copy cannot be trusted to be current, when it has gone unconfirmed by the
   * server (no list, no open watch) for longer than `thresholdMs`; undefined while it is fresh.
   */
  staleReason(thresholdMs = STALE_AFTER_MS): string | undefined {
    const { ms, lastFailure } = this.reflector.staleness();
    if (ms <= thresholdMs) return undefined;
    return `this node's PV cache is ${Math.round(ms / 1000)}s old (no list or watch of persistentvolumes has worked since${lastFailure ? `; last failure: ${lastFailure}` : ''})`;
  }

  get(name: string): V1PersistentVolume | undefined {
    return this.reflector.get(name);
  }

  list(): V1PersistentVolume[] {
    return this.reflector.list();
  }

  /** Changes with every add, update and delete: two equal revisions mean the same PVs, each as it was. */
  get revision(): number {
    return this.changes;
  }

  /** Takes in a PV of this node we have just created or changed (see Reflector.observe). */
  observe(pv: V1PersistentVolume): void {
    if (this.belongs(pv)) this.reflector.observe(pv);
  }

  /** PVs of this node whose `spec.local.path` is `path`. */
  findByLocalPath(path: string): V1PersistentVolume[] {
    return [...this.byPath.get(path) ?? []].map((name) => this.reflector.get(name)!).filter(Boolean);
  }

  /** Called for every add, update and delete (including those a relist discovers); returns the unsubscribe function. */
  onChange(listener: ChangeListener<V1PersistentVolume>): () => void {
    return this.reflector.onChange(listener);
  }

  private index(pv: V1PersistentVolume): void {
    const path = pv.spec?.local?.path;
    if (!path) return;
    let names = this.byPath.get(path);
    if (!names) this.byPath.set(path, names = new Set());
    names.add(pv.metadata!.name!);
  }

  private unindex(pv: V1PersistentVolume): void {
    const path = pv.spec?.local?.path;
    const names = path ? this.byPath.get(path) : undefined;
    if (!names) return;
    names.delete(pv.metadata!.name!);
    if (names.size === 0) this.byPath.delete(path!);
  }
}

/** `local.storage.k8s.io/node=<node>` */
export function nodeLabelSelector(nodeName: string): string {
  return `${NODE_LABEL}=${nodeName}`;
}
