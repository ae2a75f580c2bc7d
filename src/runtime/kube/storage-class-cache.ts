import type { V1StorageClass } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { Clock, systemClock } from './clock';

export interface StorageClassCacheOptions {
  /** How long an answer (found or not found) is reused. @default 30000 */
  readonly ttlMs?: number;
  /** @default systemClock */
  readonly clock?: Clock;
}

/**
 * StorageClasses read through a short TTL: a discovery pass every few seconds on every
 * node costs one GET per class per TTL, and a class created or changed is seen within it.
 * Concurrent reads of the same class share one request.
 */
export class StorageClassCache {
  private readonly ttlMs: number;
  private readonly clock: Clock;
  private readonly entries = new Map<string, { at: number; value: Promise<V1StorageClass | undefined> }>();

  constructor(private readonly api: KubeApi, options: StorageClassCacheOptions = {}) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.clock = options.clock ?? systemClock;
  }

  /** The StorageClass, or undefined when it does not exist. */
  get(name: string): Promise<V1StorageClass | undefined> {
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

  /** Forgets everything, e.g. after a config reload names other classes. */
  clear(): void {
    this.entries.clear();
  }
}
