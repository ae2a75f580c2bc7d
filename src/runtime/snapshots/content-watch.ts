/**
 * This node's VolumeSnapshotContents, listed and watched once the snapshot API is served:
 * those the snapshot controller labelled with this node (MANAGED_BY_LABEL), so a content
 * written anywhere else in the cluster costs the agent nothing. A cluster without the
 * snapshot CRDs is asked again every 5 minutes (one request), not watched in vain.
 */
import type { KubeApi } from '../kube/api-client';
import { isNotFound } from '../kube/errors';
import { ChangeListener, Reflector } from '../kube/reflector';
import { MANAGED_BY_LABEL, SNAPSHOT_API, type VolumeSnapshotContent } from '../kube/snapshot-objects';
import type { Runner } from '../lifecycle/runners';
import type { Logger } from '../observability';

const API_CHECK_PERIOD_MS = 5 * 60_000;

export class ContentWatch implements Runner {
  private reflector?: Reflector<VolumeSnapshotContent>;
  private timer?: NodeJS.Timeout;
  private readonly listeners: Array<ChangeListener<VolumeSnapshotContent>> = [];
  private stopped = false;

  constructor(private readonly api: KubeApi, private readonly nodeName: string, private readonly logger: Logger) {}

  /** Resolves at once: the contents are listed beside the rest of the start. */
  async start(): Promise<void> {
    void this.check();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.reflector?.stop();
  }

  /** The contents as last listed and watched; none before. */
  list(): VolumeSnapshotContent[] {
    return this.reflector?.list() ?? [];
  }

  /** Whether the list is the server's now (listed, watched, allowed). */
  usable(): boolean {
    return this.reflector?.usable() ?? false;
  }

  onChange(listener: ChangeListener<VolumeSnapshotContent>): void {
    this.listeners.push(listener);
  }

  private async check(): Promise<void> {
    if (this.stopped) return;
    try {
      if (await this.api.apiResources(SNAPSHOT_API)) {
        this.watch();
        return;
      }
      this.logger.info({}, 'the snapshot API (snapshot.storage.k8s.io/v1) is not served: no snapshot is taken until it is (asked again in 5 minutes)');
    } catch (err) {
      if (!isNotFound(err)) this.logger.warn({ err: (err as Error).message }, 'could not ask whether the snapshot API is served; asked again in 5 minutes');
    }
    this.timer = setTimeout(() => void this.check(), API_CHECK_PERIOD_MS);
    this.timer.unref();
  }

  private watch(): void {
    const reflector = new Reflector<VolumeSnapshotContent>(this.api, {
      resource: 'volumesnapshotcontents',
      watchPath: `${SNAPSHOT_API}/volumesnapshotcontents`,
      labelSelector: `${MANAGED_BY_LABEL}=${this.nodeName}`,
      list: (page, options) => this.api.listVolumeSnapshotContents(page, options),
      readsWithoutWatch: { whileForbidden: 'no snapshot is taken or deleted' },
      logger: this.logger,
    });
    reflector.onChange((change) => {
      for (const listener of this.listeners) listener(change);
    });
    this.reflector = reflector;
    reflector.start().catch(() => undefined); // rejected only when stopped before its first list
  }
}
