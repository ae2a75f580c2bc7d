/**
 * This node's Node object, read at start (waiting for it if the kubelet has not
 * registered it yet) and re-read at most once a minute, so label changes reach
 * new PVs (nodeLabelsForPV) without a GET on every pass.
 */
import { KubeApi } from '../kube/api-client';
import { Logger } from '../observability';
import { NodeInfo, nodeInfoOf } from '../pv';

export class NodeInfoSource {
  private cached: { at: number; info: NodeInfo } | undefined;

  constructor(
    private readonly api: KubeApi,
    private readonly nodeName: string,
    private readonly logger: Logger,
    private readonly maxAgeMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async get(): Promise<NodeInfo> {
    if (this.cached && this.now() - this.cached.at < this.maxAgeMs) return this.cached.info;
    for (let attempt = 0; ; attempt++) {
      const node = await this.api.getNode(this.nodeName).catch((e: Error) => {
        // Keep serving the last known Node through an API hiccup.
        if (this.cached) return undefined;
        throw e;
      });
      if (node) {
        this.cached = { at: this.now(), info: nodeInfoOf(node) };
        return this.cached.info;
      }
      if (this.cached) return this.cached.info;
      if (attempt === 0) {
        this.logger.warn({ node: this.nodeName }, `Node "${this.nodeName}" does not exist (yet); check that MY_NODE_NAME is this node's name. Waiting for it.`);
      }
      await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** attempt, 30_000)));
    }
  }
}
