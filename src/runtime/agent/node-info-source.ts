/**
 * This node's Node object, read at start (waiting for it if the kubelet has not
 * registered it yet). Once started it is watched (a metadata.name field selector), so
 * label changes reach new PVs (nodeLabelsForPV) with no request while nothing changes.
 * Where RBAC grants no `watch` on nodes (the Go provisioner's Helm chart: get and
 * update), it is re-read at most once a minute instead.
 *
 * A copy that was watched and no longer is (an apiserver restarted, its watches forbidden
 * until its RBAC caches sync) is known stale: the Node may have changed meanwhile, so it
 * is read again by name on every get() until the watch is back, and a read that fails is
 * retried, for a while, before the last copy is served: a PV is made with the labels its
 * Node has, not those it had.
 */
import type { V1Node } from '@kubernetes/client-node';
import { KubeApi } from '../kube/api-client';
import { Backoff, resolveBackoff } from '../kube/backoff';
import { Reflector } from '../kube/reflector';
import { Logger } from '../observability';
import { NodeInfo, nodeInfoOf } from '../pv';

/** How long a known-stale copy waits for a read by name that keeps failing before it is served anyway. */
const STALE_READ_WAIT_MS = 10_000;

export class NodeInfoSource {
  private cached: { at: number; info: NodeInfo } | undefined;
  private reflector?: Reflector<V1Node>;
  /** The watched Node and its NodeInfo, recomputed only when the Node changes; kept once the watch stops (then known stale). */
  private watched?: { node: V1Node; info: NodeInfo };
  private stopped = false;

  constructor(
    private readonly api: KubeApi,
    private readonly nodeName: string,
    private readonly logger: Logger,
    private readonly maxAgeMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Watches the Node from now on; resolves once it has been read (at once, reading periodically, where watching is forbidden). */
  async start(): Promise<void> {
    if (this.reflector) return;
    this.reflector = new Reflector<V1Node>(this.api, {
      resource: 'nodes',
      watchPath: `/api/v1/nodes?fieldSelector=${encodeURIComponent(`metadata.name=${this.nodeName}`)}`,
      // One Node, read by name: `get` is all RBAC must grant besides `watch`. Its own
      // resourceVersion may be older than the server's watch history (410 Gone, again and
      // again), so the list gives none: the watch starts from now, with the Node as ADDED.
      list: async () => {
        const node = await this.api.getNode(this.nodeName);
        return { items: node ? [node] : [], metadata: {} };
      },
      logger: this.logger,
      readsWithoutWatch: { whileForbidden: `re-reading Node "${this.nodeName}" at most once a minute` },
    });
    // A Node the open watch delivered is the last one known, though get() never read it while the watch was open: once the
    // watch is lost, it is served only where the Node cannot be read again.
    this.reflector.onChange((change) => {
      if (this.reflector?.staleness().ms === 0 && change.type !== 'delete') this.watched = { node: change.object, info: nodeInfoOf(change.object) };
    });
    await this.reflector.start().catch(() => {});
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reflector?.stop();
  }

  async get(): Promise<NodeInfo> {
    const watched = this.fromWatch();
    if (watched) return watched;
    // A copy once watched and no longer (changed meanwhile or not) is known stale: read again, never served on age alone.
    const knownStale = this.reflector?.hasWatched() === true;
    if (!knownStale && this.cached && this.now() - this.cached.at < this.maxAgeMs) return this.cached.info;
    const backoff = new Backoff(resolveBackoff({ initialMs: 250, maxMs: 2000 }));
    const since = this.now();
    for (let attempt = 0; ; attempt++) {
      const last = this.cached?.info ?? this.watched?.info;
      let node: V1Node | undefined;
      try {
        node = await this.api.getNode(this.nodeName);
      } catch (e) {
        // Serve the last known Node through an API hiccup; a known-stale one only once the server has had time to answer.
        if (last === undefined) throw e;
        if (!knownStale || this.now() - since >= STALE_READ_WAIT_MS) {
          if (knownStale) this.logger.warn({ node: this.nodeName, err: String(e) }, 'the Node cannot be read again; its last known labels are used');
          return last;
        }
        await new Promise((r) => setTimeout(r, backoff.next()));
        continue;
      }
      if (node) {
        this.cached = { at: this.now(), info: nodeInfoOf(node) };
        return this.cached.info;
      }
      if (last) return last;
      if (attempt === 0) {
        this.logger.warn({ node: this.nodeName }, `Node "${this.nodeName}" does not exist (yet); check that MY_NODE_NAME is this node's name. Waiting for it.`);
      }
      await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** attempt, 30_000)));
    }
  }

  /** The watched copy while a watch is open (a copy kept through a watch that failed may miss changes). */
  private fromWatch(): NodeInfo | undefined {
    if (!this.reflector?.usable() || this.stopped || this.reflector.staleness().ms > 0) return undefined;
    const node = this.reflector.get(this.nodeName);
    if (!node) return undefined;
    if (this.watched?.node !== node) this.watched = { node, info: nodeInfoOf(node) };
    return this.watched.info;
  }
}
