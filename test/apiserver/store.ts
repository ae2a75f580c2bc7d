/**
 * The in-memory object store: one table per resource, one global monotonic
 * resourceVersion (as etcd's revision), and a bounded history of changes that
 * serves watches and consistent reads at an older resourceVersion.
 *
 * Stored objects are never mutated; each entry keeps its JSON text so lists and
 * watches serialize by concatenation instead of re-encoding every object.
 */
import { ResourceType } from './resources';

export interface Entry {
  readonly key: string;
  /** The object; treat as read-only (clone with `cloneObject` before changing). */
  readonly obj: any;
  /** The object as JSON, with kind and apiVersion. */
  readonly json: string;
  /** The object as JSON as a list item: built-in kinds omit kind and apiVersion. */
  readonly itemJson: string;
  readonly rv: number;
}

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface Change {
  readonly rv: number;
  readonly type: ChangeType;
  readonly resource: ResourceType;
  /** The state after the change; for DELETED the last state, stamped with the deletion's resourceVersion. */
  readonly entry: Entry;
  /** The state before the change (absent for ADDED). */
  readonly prev?: Entry;
}

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function cloneObject<T = any>(e: Entry): T {
  return JSON.parse(e.json);
}

function makeEntry(r: ResourceType, obj: any, rv: number): Entry {
  const { kind: _k, apiVersion: _a, ...rest } = obj;
  rest.metadata = { ...rest.metadata, resourceVersion: String(rv) };
  const itemJson = JSON.stringify(rest);
  const head = `{"kind":${JSON.stringify(obj.kind)},"apiVersion":${JSON.stringify(obj.apiVersion)}`;
  const json = itemJson === '{}' ? `${head}}` : `${head},${itemJson.slice(1)}`;
  return {
    key: objectKey(rest.metadata.namespace, rest.metadata.name),
    obj: { kind: obj.kind, apiVersion: obj.apiVersion, ...rest },
    json,
    itemJson: r.custom ? json : itemJson,
    rv,
  };
}

class Table {
  readonly entries = new Map<string, Entry>();
  private sorted: string[] | undefined;

  set(e: Entry, isNew: boolean): void {
    this.entries.set(e.key, e);
    if (isNew) this.sorted = undefined;
  }

  delete(key: string): void {
    this.entries.delete(key);
    this.sorted = undefined;
  }

  /** Keys in etcd order (sorted), cached until a key is added or removed. */
  keys(): string[] {
    this.sorted ??= [...this.entries.keys()].sort();
    return this.sorted;
  }
}

export interface StoreOptions {
  /** How many changes the history keeps for watches and older reads. @default 10000 */
  readonly historyLimit?: number;
}

export class Store {
  private readonly tables = new Map<ResourceType, Table>();
  private history: Change[] = [];
  private readonly historyLimit: number;
  private readonly listeners = new Set<(c: Change) => void>();
  private revision = 1;
  /** Changes with a resourceVersion at or below this are gone from the history. */
  private compactedThrough = 0;

  constructor(options: StoreOptions = {}) {
    this.historyLimit = options.historyLimit ?? 10000;
  }

  /** The current resourceVersion (the last one assigned). */
  get resourceVersion(): number {
    return this.revision;
  }

  /** The oldest resourceVersion a watch can start from. */
  get oldestWatchable(): number {
    return this.compactedThrough;
  }

  private table(r: ResourceType): Table {
    let t = this.tables.get(r);
    if (!t) {
      t = new Table();
      this.tables.set(r, t);
    }
    return t;
  }

  get(r: ResourceType, namespace: string | undefined, name: string): Entry | undefined {
    return this.table(r).entries.get(objectKey(namespace, name));
  }

  /** Current entries in key order, optionally of one namespace. */
  list(r: ResourceType, namespace?: string): Entry[] {
    const t = this.table(r);
    const out: Entry[] = [];
    const prefix = namespace ? `${namespace}/` : undefined;
    for (const k of t.keys()) {
      if (prefix && !k.startsWith(prefix)) continue;
      out.push(t.entries.get(k)!);
    }
    return out;
  }

  /**
   * Entries in key order as they were at resourceVersion `rv`, rebuilt from the
   * history; undefined when the history no longer reaches back that far.
   */
  listAt(r: ResourceType, rv: number, namespace?: string): Entry[] | undefined {
    if (rv >= this.revision) return this.list(r, namespace);
    if (rv < this.compactedThrough) return undefined;
    const t = this.table(r);
    const state = new Map(t.entries);
    for (let i = this.history.length - 1; i >= 0 && this.history[i].rv > rv; i--) {
      const c = this.history[i];
      if (c.resource !== r) continue;
      if (c.type === 'ADDED') state.delete(c.entry.key);
      else state.set(c.entry.key, c.prev!);
    }
    const prefix = namespace ? `${namespace}/` : undefined;
    return [...state.keys()].filter((k) => !prefix || k.startsWith(prefix)).sort().map((k) => state.get(k)!);
  }

  /** All entries of every resource (for controllers and RBAC). */
  all(r: ResourceType): Iterable<Entry> {
    return this.table(r).entries.values();
  }

  /** Stores a new object, stamping the next resourceVersion. */
  create(r: ResourceType, obj: any): Entry {
    const e = makeEntry(r, obj, ++this.revision);
    this.table(r).set(e, true);
    this.record({ rv: e.rv, type: 'ADDED', resource: r, entry: e });
    return e;
  }

  /** Replaces an existing object, stamping the next resourceVersion. */
  update(r: ResourceType, prev: Entry, obj: any): Entry {
    const e = makeEntry(r, obj, ++this.revision);
    this.table(r).set(e, false);
    this.record({ rv: e.rv, type: 'MODIFIED', resource: r, entry: e, prev });
    return e;
  }

  /** Removes an object; the DELETED change carries its last state at a new resourceVersion. */
  delete(r: ResourceType, prev: Entry): Entry {
    const e = makeEntry(r, prev.obj, ++this.revision);
    this.table(r).delete(prev.key);
    this.record({ rv: e.rv, type: 'DELETED', resource: r, entry: e, prev });
    return e;
  }

  /** Changes after `rv`, or undefined when the history no longer reaches back that far. */
  changesSince(rv: number): Change[] | undefined {
    if (rv < this.compactedThrough) return undefined;
    let lo = 0;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.history[mid].rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.history.slice(lo);
  }

  /** Drops the whole history, as an etcd compaction does: older resourceVersions become 410 Gone. */
  compact(): void {
    this.history = [];
    this.compactedThrough = this.revision;
  }

  subscribe(listener: (c: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private record(c: Change): void {
    this.history.push(c);
    if (this.history.length > this.historyLimit * 1.25) {
      const drop = this.history.length - this.historyLimit;
      this.compactedThrough = this.history[drop - 1].rv;
      this.history = this.history.slice(drop);
    }
    for (const l of this.listeners) l(c);
  }
}
