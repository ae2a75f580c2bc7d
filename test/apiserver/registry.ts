/**
 * The generic registry: what the real server does between decoding a request and
 * writing to storage — namespace lifecycle, name generation, defaulting,
 * validation, resourceVersion preconditions, status subresource rules,
 * generation, finalizers and graceful deletion. HTTP-free, so tests and
 * controllers can call it directly.
 */
import { randomUUID } from 'node:crypto';
import { applyCreateDefaults, applyDefaults } from './defaults';
import { decodeFields } from './fields';
import { ResourceType, findResource, groupVersion } from './resources';
import { ApiError, STALE_OBJECT, alreadyExists, badRequest, conflict, forbidden, notFound } from './status';
import { Entry, Store, cloneObject } from './store';
import { validateObject } from './validation';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE';

/** A mutating admission step (for example the PV protection finalizer). */
export type AdmissionHook = (r: ResourceType, obj: any, op: Operation, prev?: any) => void;

export interface DeleteOptions {
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  readonly preconditions?: { uid?: string; resourceVersion?: string };
  readonly dryRun?: boolean;
}

export interface WriteOptions {
  /** `status` to write through the status subresource. */
  readonly subresource?: string;
  readonly dryRun?: boolean;
  /** What to do with fields the kind does not have. @default 'Warn' */
  readonly fieldValidation?: 'Strict' | 'Warn' | 'Ignore';
  /** Receives warnings for the response's Warning header. */
  readonly warnings?: string[];
}

export const NAMESPACES = findResource('v1', 'namespaces')!;

/** Namespaces the NamespaceLifecycle admission plugin protects from deletion. */
const IMMORTAL_NAMESPACES = ['default', 'kube-system', 'kube-public'];

/** RFC 3339 with second precision, as metav1.Time serializes. */
export function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

function generateSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i++) s += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
  return s;
}

const withoutMetaAndStatus = (o: any) => {
  const { metadata: _m, status: _s, ...rest } = o;
  return JSON.stringify(rest);
};

/** Decodes as the real server: unknown fields dropped (400 under Strict, a warning under Warn), times re-encoded. */
function handleUnknownFields(r: ResourceType, obj: any, options: WriteOptions): void {
  const unknown = decodeFields(r, obj);
  if (!unknown.length || options.fieldValidation === 'Ignore') return;
  if (options.fieldValidation === 'Strict') {
    throw badRequest(`strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`);
  }
  options.warnings?.push(...unknown.map((f) => `unknown field "${f}"`));
}

/** Whether two values serialize to the same JSON, whatever their key order. */
function sameJson(a: any, b: any): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  const keys = (o: any) => Object.keys(o).filter((k) => o[k] !== undefined);
  const ka = keys(a);
  return ka.length === keys(b).length && ka.every((k) => sameJson(a[k], b[k]));
}

export class Registry {
  private readonly hooks: AdmissionHook[] = [];
  /** Whether the garbage collector runs (it removes the orphan and foregroundDeletion finalizers). */
  garbageCollection = true;

  constructor(readonly store: Store) {}

  addAdmissionHook(hook: AdmissionHook): void {
    this.hooks.push(hook);
  }

  get(r: ResourceType, namespace: string | undefined, name: string): Entry {
    const e = this.store.get(r, r.namespaced ? namespace : undefined, name);
    if (!e) throw notFound(r, name);
    return e;
  }

  private checkNamespace(r: ResourceType, namespace: string | undefined, name: string): void {
    if (!r.namespaced) return;
    if (!namespace) throw badRequest('an empty namespace may not be set during creation');
    const ns = this.store.get(NAMESPACES, undefined, namespace!);
    if (!ns) throw notFound(NAMESPACES, namespace!);
    if (ns.obj.metadata.deletionTimestamp) {
      throw forbidden(r, name, `unable to create new content in namespace ${namespace} because it is being terminated`);
    }
  }

  private normalizeBody(r: ResourceType, body: any, namespace: string | undefined): any {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: the body is not a JSON object`);
    }
    const gv = groupVersion(r);
    if (body.apiVersion !== undefined && body.apiVersion !== gv) {
      throw badRequest(`the API version in the data (${body.apiVersion}) does not match the expected API version (${gv})`);
    }
    if (body.kind !== undefined && body.kind !== r.kind) {
      throw badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: the kind in the data (${body.kind}) does not match the expected kind`);
    }
    const { kind: _k, apiVersion: _a, metadata, ...rest } = body;
    const meta = { ...(metadata ?? {}) };
    if (r.namespaced) {
      if (meta.namespace && namespace && meta.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      meta.namespace = namespace ?? meta.namespace;
    } else {
      delete meta.namespace;
    }
    return { kind: r.kind, apiVersion: gv, metadata: meta, ...rest };
  }

  create(r: ResourceType, namespace: string | undefined, body: any, options: WriteOptions = {}): Entry {
    const obj = this.normalizeBody(r, body, namespace);
    handleUnknownFields(r, obj, options);
    const meta = obj.metadata;
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${generateSuffix()}`;
    this.checkNamespace(r, meta.namespace, meta.name ?? '');
    // etcd3's store refuses this (a 500 in the real server); an unparsable value is ignored there too.
    if (/^[1-9]\d*$/.test(String(meta.resourceVersion ?? ''))) {
      throw new ApiError(500, 'InternalError', 'resourceVersion should not be set on objects to be created');
    }
    for (const f of ['resourceVersion', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink']) delete meta[f];
    meta.uid = randomUUID();
    meta.creationTimestamp = now();
    if (r.tracksGeneration) meta.generation = 1;
    else delete meta.generation;
    if (r.hasStatus && r.kind !== 'Node') delete obj.status;
    applyDefaults(r, obj);
    applyCreateDefaults(r, obj);
    for (const h of this.hooks) h(r, obj, 'CREATE');
    validateObject(r, obj);
    if (this.store.get(r, meta.namespace, meta.name)) throw alreadyExists(r, meta.name);
    if (options.dryRun) return { key: '', obj, json: JSON.stringify(obj), itemJson: JSON.stringify(obj), rv: this.store.resourceVersion };
    return this.store.create(r, obj);
  }

  /** PUT: replaces the object (or only its status with `subresource: 'status'`). */
  update(r: ResourceType, namespace: string | undefined, name: string, body: any, options: WriteOptions = {}): Entry {
    const next = this.normalizeBody(r, body, r.namespaced ? namespace : undefined);
    if (next.metadata.name !== undefined && next.metadata.name !== name) {
      throw badRequest(`the name of the object (${next.metadata.name}) does not match the name on the URL (${name})`);
    }
    next.metadata.name = name;
    const prev = this.get(r, namespace, name);
    return this.replace(r, prev, next, options);
  }

  /** Applies a change computed from the stored object; used by PUT and PATCH. */
  replace(r: ResourceType, prev: Entry, candidate: any, options: WriteOptions = {}): Entry {
    const old = prev.obj;
    const name = old.metadata.name;
    const wantRv = candidate.metadata?.resourceVersion;
    if (wantRv !== undefined && wantRv !== '' && wantRv !== old.metadata.resourceVersion) {
      throw conflict(r, name, STALE_OBJECT);
    }
    handleUnknownFields(r, candidate, options);
    let next: any;
    if (options.subresource === 'status') {
      next = { ...cloneObject(prev), status: candidate.status };
    } else {
      next = candidate;
      const m = next.metadata;
      for (const f of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'namespace', 'generation']) {
        if (old.metadata[f] === undefined) delete m[f];
        else m[f] = old.metadata[f];
      }
      if (r.hasStatus) {
        if (old.status === undefined) delete next.status;
        else next.status = old.status;
      }
      if (old.metadata.deletionTimestamp) {
        const had = new Set(old.metadata.finalizers ?? []);
        const added = (m.finalizers ?? []).filter((f: string) => !had.has(f));
        if (added.length) {
          throw new ApiError(422, 'Invalid', `${r.kind} "${name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f: string) => JSON.stringify(f)).join(', ')}}`);
        }
      }
      applyDefaults(r, next);
      if (r.tracksGeneration && withoutMetaAndStatus(next) !== withoutMetaAndStatus(old)) {
        m.generation = (old.metadata.generation ?? 0) + 1;
      }
      for (const h of this.hooks) h(r, next, 'UPDATE', old);
    }
    next.metadata.resourceVersion = old.metadata.resourceVersion;
    validateObject(r, next, old);
    // As etcd3's GuaranteedUpdate: an update that changes nothing is not written (key order does not count).
    if (options.dryRun || sameJson(next, prev.obj)) return prev;
    if (next.metadata.deletionTimestamp && !this.hasFinalizers(next)) {
      return this.store.delete(r, this.store.update(r, prev, next));
    }
    return this.store.update(r, prev, next);
  }

  private hasFinalizers(obj: any): boolean {
    return (obj.metadata.finalizers?.length ?? 0) > 0 || (obj.kind === 'Namespace' && (obj.spec?.finalizers?.length ?? 0) > 0);
  }

  /**
   * DELETE: objects with finalizers get a deletionTimestamp and stay until the
   * finalizers are gone; others go at once. `deleted` tells which happened.
   */
  delete(r: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): { entry: Entry; deleted: boolean } {
    const prev = this.get(r, namespace, name);
    if (r === NAMESPACES && IMMORTAL_NAMESPACES.includes(name)) {
      throw forbidden(r, name, 'this namespace may not be deleted');
    }
    const meta = prev.obj.metadata;
    const pre = options.preconditions ?? {};
    if (pre.uid && pre.uid !== meta.uid) {
      throw conflict(r, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${meta.uid}`);
    }
    if (pre.resourceVersion && pre.resourceVersion !== meta.resourceVersion) {
      throw conflict(r, name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${meta.resourceVersion}`);
    }
    const next = cloneObject(prev);
    const policy = options.propagationPolicy ?? r.defaultPropagation;
    if (this.garbageCollection && !meta.deletionTimestamp) {
      const extra = policy === 'Orphan' ? 'orphan' : policy === 'Foreground' ? 'foregroundDeletion' : undefined;
      if (extra && !(next.metadata.finalizers ?? []).includes(extra)) next.metadata.finalizers = [...(next.metadata.finalizers ?? []), extra];
    }
    if (this.hasFinalizers(next)) {
      if (meta.deletionTimestamp || options.dryRun) return { entry: prev, deleted: false };
      next.metadata.deletionTimestamp = now();
      next.metadata.deletionGracePeriodSeconds = 0;
      if (r.tracksGeneration) next.metadata.generation = (meta.generation ?? 0) + 1;
      if (r.kind === 'Namespace') next.status = { ...next.status, phase: 'Terminating' };
      return { entry: this.store.update(r, prev, next), deleted: false };
    }
    if (options.dryRun) return { entry: prev, deleted: true };
    return { entry: this.store.delete(r, prev), deleted: true };
  }
}
