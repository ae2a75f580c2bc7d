import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { KubeApi, PageRequest } from './api-client';
import { Backoff, BackoffOptions, REFLECTOR_BACKOFF, REFLECTOR_BACKOFF_RESET_MS, resolveBackoff } from './backoff';
import { Clock, systemClock } from './clock';
import { isForbidden, isGone, KubeApiError } from './errors';
import { KubeLogger, silentLogger } from './logger';
import { CallOptions } from './request';

export type ChangeType = 'add' | 'update' | 'delete';

export interface Change<T> {
  readonly type: ChangeType;
  /** The object now; for `delete`, its last known state. */
  readonly object: T;
  /** The object before an `update`. */
  readonly previous?: T;
}

export type ChangeListener<T> = (change: Change<T>) => void;

export interface ReflectorOptions<T extends KubernetesObject> {
  /** Plural resource name, for metrics and messages. */
  readonly resource: string;
  /** Collection URL path to watch, e.g. `/api/v1/persistentvolumes`. */
  readonly watchPath: string;
  readonly labelSelector?: string;
  /**
   * Keeps only the objects it accepts, for a selection the server cannot make (by
   * annotation, say); an object that stops being accepted counts as deleted.
   * @default every object
   */
  readonly accept?: (object: T) => boolean;
  /**
   * Fetches one page of the collection through the KubeApi. A list without a
   * resourceVersion (one object read by name, whose own may be older than the server's
   * watch history) makes the watch start from now, the current objects sent as ADDED.
   */
  readonly list: (page: PageRequest, options: CallOptions) => Promise<KubernetesListObject<T>>;
  /** Turns a watch event's raw object into the form `list` returns. @default as is: both are plain JSON */
  readonly fromWire?: (raw: unknown) => T;
  /** Objects per list page. @default 500 */
  readonly pageSize?: number;
  /** Server-side lifetime of one watch; a new one follows. @default random in [minWatchSeconds, 2 × minWatchSeconds) */
  readonly watchTimeoutSeconds?: number;
  /** The shortest random watch lifetime, as client-go's reflector spreads renewals. @default 300 */
  readonly minWatchSeconds?: number;
  /**
   * Before a list or watch after a failed one (a relist after 410 Gone too), growing while
   * they fail and started over after 2 minutes without a failure. Fields left out are
   * REFLECTOR_BACKOFF's. @default client-go's: 800 ms doubling to 30 s, plus up to 100 % jitter
   */
  readonly backoff?: BackoffOptions;
  /** Source of the backoff's jitter. @default Math.random */
  readonly random?: () => number;
  /** @default silent */
  readonly logger?: KubeLogger;
  /** @default systemClock */
  readonly clock?: Clock;
  /**
   * The watch is an optimisation the caller can do without (reading by name instead): while
   * the server forbids the list or the watch (403), `start()` resolves anyway and `usable()`
   * is false. A 403 is never taken as final: right after an apiserver (re)start its RBAC
   * caches answer 403 to what RBAC grants for a second or two. The reflector asks again on
   * its backoff for `FORBIDDEN_GRACE_MS`, then every `FORBIDDEN_RETRY_MS` (RBAC that really
   * grants no watch, as the Go provisioner's chart), and is usable again once allowed.
   * `whileForbidden` says in the log what the caller does meanwhile.
   * @default - a 403 is retried like any other failure, and start() waits through it
   */
  readonly readsWithoutWatch?: { readonly whileForbidden: string };
}

/** After a first 403, how long it is retried on the ordinary backoff before it is taken for RBAC's answer. */
export const FORBIDDEN_GRACE_MS = 30_000;
/** Once taken for RBAC's answer, how often the server is asked again (one 403 a minute). */
export const FORBIDDEN_RETRY_MS = 60_000;

/** A watch that ends this quickly without an event counts as a failure, so a flapping server is not hammered. */
const SHORT_WATCH_MS = 1000;
/** Past the server-side timeout, a silent watch is presumed dead (half-open connection). */
const WATCH_SILENCE_GRACE_MS = 60_000;

/**
 * Watches failing in a row before the copy is refreshed by a list instead: a server
 * whose watches fail (500, 429, a proxy cutting streams) while its lists work would
 * otherwise leave the copy as old as the last working watch, for as long as that lasts.
 */
const RELIST_AFTER_WATCH_FAILURES = 3;
/** A failed watch also relists once the copy is this old, so its age stays near one backoff period. */
const RELIST_WHEN_OLDER_THAN_MS = 30_000;

/**
 * Keeps a local copy of one collection (cluster-scoped, or one namespace's: objects are
 * keyed by name), selected by label, like
 * client-go's reflector: a paged list, then a watch from the list's resourceVersion.
 * A dropped watch resumes from the last resourceVersion seen; 410 Gone (history
 * compacted) triggers a relist whose differences against the copy become the change
 * events, so no change is lost and none is reported twice.
 */
export class Reflector<T extends KubernetesObject> {
  private readonly store = new Map<string, T>();
  private readonly listeners = new Set<ChangeListener<T>>();
  private readonly backoff: Backoff;
  private readonly logger: KubeLogger;
  private readonly clock: Clock;
  private readonly stopper = new AbortController();
  private resourceVersion = '';
  /** Like client-go: the first list may come from the server's watch cache; after 410 Gone, read consistently. */
  private listFromCache = true;
  private synced = false;
  private running?: Promise<void>;
  private syncWaiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  private closeWatch?: () => void;
  /** True while a watch is open: the copy follows the server. */
  private watching = false;
  /** True once any watch has opened: the copy has followed the server, and is known stale whenever no watch is open. */
  private watched = false;
  /** When the copy was last known current (a list done, or a watch open until then). */
  private currentAt: number;
  private watchFailuresInARow = 0;
  private lastFailure?: string;
  /** When the server began answering 403 to this reflector (readsWithoutWatch), until it allows it again. */
  private forbiddenSince?: number;

  constructor(private readonly api: KubeApi, private readonly options: ReflectorOptions<T>) {
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.backoff = new Backoff(resolveBackoff({ ...REFLECTOR_BACKOFF, ...options.backoff }), options.random,
      { afterMs: REFLECTOR_BACKOFF_RESET_MS, clock: this.clock });
    this.currentAt = this.clock.now();
  }

  /** Starts listing and watching; resolves once the first list is in. */
  start(): Promise<void> {
    this.running ??= this.run();
    return this.waitForSync();
  }

  async stop(): Promise<void> {
    this.stopper.abort(new Error(`${this.options.resource} reflector stopped`));
    this.closeWatch?.();
    for (const w of this.syncWaiters) w.reject(new Error(`${this.options.resource} reflector stopped before its first list`));
    this.syncWaiters = [];
    await this.running;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** True once a watch has been open, whatever it delivered: the server confirmed the copy then. */
  hasWatched(): boolean {
    return this.watched;
  }

  /** True when the copy may be read instead of the server: listed, and not forbidden since (see readsWithoutWatch). */
  usable(): boolean {
    return this.synced && this.forbiddenSince === undefined && !this.stopper.signal.aborted;
  }

  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.stopper.signal.aborted) return Promise.reject(new Error(`${this.options.resource} reflector is stopped`));
    return new Promise((resolve, reject) => this.syncWaiters.push({ resolve, reject }));
  }

  /** The object by its key: its name, or `namespace/name` for a namespaced one (client-go's MetaNamespaceKeyFunc). */
  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /**
   * How long the copy has gone unconfirmed by the server: 0 while a watch is open,
   * else the time since the last list or watch ended, with the failure that keeps it
   * from being refreshed (if any).
   */
  staleness(): { readonly ms: number; readonly lastFailure?: string } {
    if (this.watching) return { ms: 0 };
    return { ms: Math.max(0, this.clock.now() - this.currentAt), lastFailure: this.lastFailure };
  }

  /**
   * Takes in an object this process has just written (the server's answer to a
   * create or update), unless the copy already holds it or a newer state: so what we
   * wrote is known before the watch brings it, even while the watch is failing.
   */
  observe(object: T): void {
    if (!this.accepts(object)) return;
    const known = this.store.get(nameOf(object))?.metadata?.resourceVersion;
    if (known !== undefined && !isNewer(object.metadata?.resourceVersion, known)) return;
    this.upsert(trimmed(object));
  }

  /** Calls `listener` for every add, update and delete from now on; returns the unsubscribe function. */
  onChange(listener: ChangeListener<T>): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private accepts(object: T): boolean {
    return this.options.accept?.(object) ?? true;
  }

  private async run(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      try {
        if (!this.resourceVersion) await this.relist();
        await this.watchOnce();
      } catch (err) {
        if (signal.aborted) break;
        if (isForbidden(err) && this.options.readsWithoutWatch) {
          await this.whileForbidden(err as KubeApiError, signal);
          continue;
        }
        if (isGone(err)) {
          // After a backoff, as every relist: an apiserver restarted with a new watch cache
          // answers 410 to every agent's watch, and relists all at once would meet it together.
          const delayMs = this.backoff.next();
          this.logger.info({ resource: this.options.resource, delayMs: Math.round(delayMs) }, 'watch history expired (410 Gone); relisting');
          this.resourceVersion = '';
          this.listFromCache = false;
          await this.clock.sleep(delayMs, signal).catch(() => {});
          continue;
        }
        this.lastFailure = String(err);
        const delayMs = this.backoff.next();
        this.logger.warn({ resource: this.options.resource, err: String(err), delayMs: Math.round(delayMs) }, 'list/watch failed; retrying');
        await this.clock.sleep(delayMs, signal).catch(() => {});
        if (this.resourceVersion && this.shouldRelistAfterWatchFailure()) {
          this.logger.warn({ resource: this.options.resource, failuresInARow: this.watchFailuresInARow, staleMs: this.staleness().ms },
            'watches keep failing; refreshing the copy by a list');
          this.resourceVersion = '';
          this.listFromCache = false;
        }
      }
    }
  }

  /** A 403 to a reflector that may go without: its readers read by name until the server allows it again (see readsWithoutWatch). */
  private async whileForbidden(err: KubeApiError, signal: AbortSignal): Promise<void> {
    const now = this.clock.now();
    const first = this.forbiddenSince === undefined;
    this.forbiddenSince ??= now;
    this.lastFailure = String(err);
    // The copy may miss changes from here on; the next success relists.
    this.resourceVersion = '';
    for (const w of this.syncWaiters) w.resolve();
    this.syncWaiters = [];
    const settled = now - this.forbiddenSince >= FORBIDDEN_GRACE_MS;
    if (first) {
      this.logger.info({ resource: this.options.resource, err: String(err) },
        `list/watch forbidden (403); ${this.options.readsWithoutWatch!.whileForbidden} meanwhile, and asking again (an apiserver that has just started answers 403 until its RBAC caches sync)`);
    }
    await this.clock.sleep(settled ? FORBIDDEN_RETRY_MS : this.backoff.next(), signal).catch(() => {});
  }

  /** A watch opened: a forbidden spell is over (a list alone is not enough: RBAC may grant list and get, not watch). */
  private allowed(): void {
    if (this.forbiddenSince === undefined) return;
    this.logger.info({ resource: this.options.resource, forbiddenMs: Math.round(this.clock.now() - this.forbiddenSince) }, 'list/watch allowed again; watching');
    this.forbiddenSince = undefined;
  }

  private shouldRelistAfterWatchFailure(): boolean {
    this.watchFailuresInARow++;
    return this.watchFailuresInARow >= RELIST_AFTER_WATCH_FAILURES || this.staleness().ms >= RELIST_WHEN_OLDER_THAN_MS;
  }

  private async relist(): Promise<void> {
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.options.list({
        labelSelector: this.options.labelSelector,
        limit: this.options.pageSize ?? 500,
        continueToken,
        resourceVersion: this.listFromCache && !continueToken ? '0' : undefined,
      }, { signal: this.stopper.signal });
      for (const item of page.items) if (this.accepts(item)) items.push(trimmed(item));
      continueToken = page.metadata?._continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? '';
    } while (continueToken);
    this.replace(items);
    this.resourceVersion = resourceVersion;
    this.currentAt = this.clock.now();
    this.watchFailuresInARow = 0;
    this.lastFailure = undefined;
    // The backoff is not reset here: a relist between failing watches must not make them hammer the server.
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters) w.resolve();
      this.syncWaiters = [];
    }
  }

  /** Makes the store equal to `items`, reporting only what differs. */
  private replace(items: T[]): void {
    const fresh = new Set<string>();
    for (const item of items) {
      fresh.add(nameOf(item));
      this.upsert(item);
    }
    for (const [name, old] of this.store) {
      if (!fresh.has(name)) this.remove(old);
    }
  }

  private upsert(object: T): void {
    const name = nameOf(object);
    const previous = this.store.get(name);
    if (previous && previous.metadata?.resourceVersion === object.metadata?.resourceVersion) return;
    this.store.set(name, object);
    this.emit(previous ? { type: 'update', object, previous } : { type: 'add', object });
  }

  private remove(object: T): void {
    const name = nameOf(object);
    const known = this.store.get(name);
    if (!known) return;
    this.store.delete(name);
    this.emit({ type: 'delete', object: known });
  }

  private emit(change: Change<T>): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.logger.error({ resource: this.options.resource, err: String(err) }, 'change listener threw');
      }
    }
  }

  /** One watch connection, from the current resourceVersion until the server or we end it. */
  private async watchOnce(): Promise<void> {
    const { resource, watchPath, labelSelector } = this.options;
    const min = this.options.minWatchSeconds ?? 300;
    const timeoutSeconds = this.options.watchTimeoutSeconds ?? Math.floor(min + Math.random() * min);
    const connection = new AbortController();
    let failure: unknown;
    const end = (err?: unknown) => {
      failure ??= err;
      connection.abort();
    };
    // Past the server-side timeout, a silent watch is presumed dead (a half-open connection).
    let cancelSilence: (() => void) | undefined;
    const armSilenceTimer = () => {
      cancelSilence?.();
      cancelSilence = this.clock.setTimer(timeoutSeconds * 1000 + WATCH_SILENCE_GRACE_MS,
        () => end(new Error(`${resource} watch silent for longer than its ${timeoutSeconds}s timeout; reconnecting`)));
    };
    const opened = this.clock.now();
    let events = 0;
    this.closeWatch = () => end();
    // stop() may have run before there was a watch to close.
    if (this.stopper.signal.aborted) return;
    armSilenceTimer();
    try {
      await this.api.watch({ resource, path: watchPath, labelSelector, resourceVersion: this.resourceVersion, timeoutSeconds }, (type, raw) => {
        if (connection.signal.aborted) return;
        events++;
        this.watchFailuresInARow = 0;
        armSilenceTimer();
        try {
          this.apply(type, raw);
        } catch (err) {
          end(err);
        }
      }, connection.signal, () => {
        this.watching = true;
        this.watched = true;
        this.allowed();
      });
    } finally {
      if (this.watching) this.currentAt = this.clock.now();
      this.watching = false;
      cancelSilence?.();
      this.closeWatch = undefined;
    }
    if (failure) throw failure;
    if (this.stopper.signal.aborted) return;
    if (events === 0 && this.clock.now() - opened < SHORT_WATCH_MS) {
      throw new Error(`${resource} watch closed after ${Math.round(this.clock.now() - opened)} ms without an event`);
    }
    this.watchFailuresInARow = 0;
    // The backoff is not reset here: it starts over after a healthy period (a watch that
    // ends, at a restart, right after failures keeps the relists that follow spread out).
  }

  /** Applies one watch event to the store. */
  private apply(type: string, raw: unknown): void {
    if (type === 'ERROR') {
      const status = raw as { code?: number; reason?: string; message?: string };
      throw new KubeApiError({ verb: 'watch', resource: this.options.resource }, {
        kind: 'status', code: status.code, reason: status.reason, serverMessage: status.message, attempts: 1,
      });
    }
    const rv = (raw as KubernetesObject).metadata?.resourceVersion;
    if (type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return;
    }
    const object = trimmed(this.options.fromWire ? this.options.fromWire(raw) : raw as T);
    if ((type === 'ADDED' || type === 'MODIFIED') && this.accepts(object)) this.upsert(object);
    // Deleted, or no longer accepted.
    else if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') this.remove(object);
    if (rv) this.resourceVersion = rv;
  }
}

/**
 * What the store keeps: the object without `metadata.managedFields`, the server-side
 * apply bookkeeping that is often the largest part of a small object and that nothing
 * here reads (client-go's informers are told to drop it the same way).
 */
function trimmed<T extends KubernetesObject>(object: T): T {
  if (object.metadata?.managedFields) delete object.metadata.managedFields;
  return object;
}

/**
 * resourceVersions are opaque, and everywhere else here they are only passed back to the
 * server. Only here, to keep our own write rather than an older copy, are two of one object
 * compared: as integers, which etcd's are, as client-go's MutationCache compares them
 * (tools/cache/mutation_cache.go). One that is not an integer is never taken as newer, so
 * the watch's copy wins.
 */
function isNewer(candidate: string | undefined, known: string): boolean {
  return candidate !== undefined && /^\d+$/.test(candidate) && /^\d+$/.test(known) && BigInt(candidate) > BigInt(known);
}

/** The store's key: objects of one name in two namespaces (claims, watched in all of them) are two objects. */
function nameOf(object: KubernetesObject): string {
  const name = object.metadata?.name ?? '';
  return object.metadata?.namespace ? `${object.metadata.namespace}/${name}` : name;
}
