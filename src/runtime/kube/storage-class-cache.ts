import type { V1StorageClass } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { BackoffOptions } from './backoff';
import { Clock, systemClock } from './clock';
import { KubeLogger } from './logger';
import { Reflector } from './reflector';

export interface StorageClassCacheOptions {
  /** Without a watch: how long an answer (found or not found) is reused. @default 30000 */
  readonly ttlMs?: number;
  /** Between failed lists or watches. */
  readonly backoff?: BackoffOptions;
  readonly logger?: KubeLogger;
  /** @default systemClock */
  readonly clock?: Clock;
}

/**
 * StorageClasses as discovery reads them on every pass. Once started, every
 * StorageClass is listed and watched (a cluster has few), so reads send no request and a
 * change is seen at once. Without start(), or where RBAC forbids listing or watching
 * StorageClasses (`get` only), each class is read by name at most once per TTL;
 * concurrent reads of the same class share one request.
 */
export class StorageClassCache {
  private readonly ttlMs: number;
  private readonly clock: Clock;
  private readonly entries = new Map<string, { at: number; value: Promise<V1StorageClass | undefined> }>();
  private readonly listeners = new Set<() => void>();
  private reflector?: Reflector<V1StorageClass>;
  private stopped = false;

  constructor(private readonly api: KubeApi, private readonly options: StorageClassCacheOptions = {}) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
  }

  /** Lists and watches every StorageClass; resolves once listed, or at once (reading by name) when that is forbidden. */
  async start(): Promise<void> {
    if (this.reflector) return;
    const reflector = new Reflector<V1StorageClass>(this.api, {
      resource: 'storageclasses',
      watchPath: '/apis/storage.k8s.io/v1/storageclasses',
      list: (page, callOptions) => this.api.listStorageClasses(page, callOptions),
      backoff: this.options.backoff,
      logger: this.options.logger,
      readsWithoutWatch: { whileForbidden: 'reading each StorageClass by name' },
    });
    this.reflector = reflector;
    reflector.onChange(() => {
      for (const listener of this.listeners) listener();
    });
    // While forbidden (readsWithoutWatch) or stopped, reads go by name.
    await reflector.start().catch(() => {});
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reflector?.stop();
  }

  /** Calls `listener` when a watched StorageClass is added, changed or deleted; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The StorageClass, or undefined when it does not exist. */
  get(name: string): Promise<V1StorageClass | undefined> {
    if (this.reflector?.usable() && !this.stopped) return Promise.resolve(this.reflector.get(name));
    const now = this.clock.now();
    const entry = this.entries.get(name);
    if (entry && now - entry.at < this.ttlMs) return entry.value;
    const value = this.api.getStorageClass(name);
    this.entries.set(name, { at: now, value });
    // A failed read is not an answer: the next get asks again.
    value.catch(() => {
      if (this.entries.get(name)?.value === value) this.entries.delete(name);
    });
    return value;
  }

  /** Forgets everything read by name, e.g. after a config reload names other classes. */
  clear(): void {
    this.entries.clear();
  }
}
