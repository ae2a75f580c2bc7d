/**
 * HTTP routing: turns a request into request attributes (verb, resource,
 * namespace, name, subresource) the way the real server's request-info resolver
 * does, authenticates, authorizes, applies injected faults, serves it from the
 * registry or the watch hub, and counts requests and bytes.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { Authenticator, UserInfo } from './auth';
import { Counters } from './counters';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, versionInfo } from './discovery';
import { Faults } from './faults';
import { openApiDocument, openApiRoot, openApiV2 } from './openapi';
import { jsonPatch, mergePatch, patchSchemaFor, strategicMergePatch } from './patch';
import { RbacAuthorizer, RequestAttributes } from './rbac';
import { DeleteOptions, Registry } from './registry';
import { ResourceType, findResource, groupVersion } from './resources';
import { parseFieldSelector, parseLabelSelector, pinnedName } from './selectors';
import { ApiError, badRequest, forbidden, gone, methodNotAllowed, noSuchPath, unsupportedMediaType } from './status';
import { Entry, Store, cloneObject } from './store';
import { IncludeObject, renderTable, wantsTable } from './table';
import { WatchHub } from './watch';

export interface ServerContext {
  readonly store: Store;
  readonly registry: Registry;
  readonly hub: WatchHub;
  readonly faults: Faults;
  readonly counters: Counters;
  readonly auth: Authenticator;
  /** Present when RBAC is enforced. */
  readonly rbac?: RbacAuthorizer;
  /** host:port, for the `/api` document. */
  serverAddress(): string;
}

interface ResourceRequest extends RequestAttributes {
  readonly type: ResourceType;
  readonly resource: string;
  readonly collection: boolean;
}

/** One resource request being served. */
interface Call {
  readonly rr: ResourceRequest;
  readonly q: URLSearchParams;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly body: Buffer;
  /** Counter key: verb and resource(/subresource). */
  readonly count: [string, string];
}

const SUBRESOURCES = new Set(['status', 'finalize']);

/** Resolves `/api/v1/...` and `/apis/<g>/<v>/...` into request attributes; undefined for other paths. */
function resolve(method: string, parts: string[], query: URLSearchParams): ResourceRequest | 'unknown' | undefined {
  let gv: string;
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    gv = parts[1];
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    gv = `${parts[1]}/${parts[2]}`;
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && !(rest.length === 3 && SUBRESOURCES.has(rest[2]))) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource, ...extra] = rest;
  const type = findResource(gv, resource);
  if (!type || extra.length || (subresource && !SUBRESOURCES.has(subresource))) return 'unknown';
  if (subresource === 'status' && !type.hasStatus) return 'unknown';
  if (subresource === 'finalize' && type.kind !== 'Namespace') return 'unknown';
  if (!type.namespaced && namespace !== undefined) return 'unknown';
  const collection = name === undefined;
  const watch = query.get('watch') === 'true' || query.get('watch') === '1';
  // Namespaced resources are served across namespaces only for list and watch.
  if (type.namespaced && namespace === undefined && !(collection && method === 'GET')) return 'unknown';
  const verb = {
    GET: collection ? (watch ? 'watch' : 'list') : 'get',
    POST: 'create',
    PUT: 'update',
    PATCH: 'patch',
    DELETE: collection ? 'deletecollection' : 'delete',
  }[method];
  if (!verb) return 'unknown';
  return { type, verb, apiGroup: type.group, resource, subresource, namespace: type.namespaced ? namespace : undefined, name, collection };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolveBody(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseJson(buf: Buffer): any {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e: any) {
    throw badRequest(`error decoding request body: ${e.message}`);
  }
}

/**
 * An object body (create, update): JSON or YAML. Protobuf, which typed
 * client-go clientsets send (e.g. `kubectl create configmap`), is not decoded
 * here and gets the 415 a server without that codec answers.
 */
function parseObjectBody(req: IncomingMessage, buf: Buffer): any {
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0].trim();
  if (type === 'application/json' || type === '') return parseJson(buf);
  if (type === 'application/yaml') {
    try {
      return parseYaml(buf.toString('utf8'));
    } catch (e: any) {
      throw badRequest(`error decoding request body: ${e.message}`);
    }
  }
  throw unsupportedMediaType(['application/json', 'application/yaml']);
}

/** The continue token the real server issues (base64 JSON of version, rv and start key). */
function encodeContinue(rv: number, startKey: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${startKey}\u0000` })).toString('base64');
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
    if (t.v !== 'meta.k8s.io/v1' || typeof t.rv !== 'number' || typeof t.start !== 'string') throw new Error();
    return { rv: t.rv, start: t.start };
  } catch {
    throw badRequest('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  }
}

const EXPIRED_CONTINUE = 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

export class HttpHandler {
  constructor(private readonly ctx: ServerContext) {}

  private send(res: ServerResponse, code: number, body: string, count?: [string, string], headers: Record<string, string | number> = {}): void {
    const buf = Buffer.from(body, 'utf8');
    if (count) this.ctx.counters.bytes(count[0], count[1], buf.length);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': buf.length, 'Cache-Control': 'no-cache, private', ...headers });
    res.end(buf);
  }

  private sendError(res: ServerResponse, err: ApiError, count?: [string, string]): void {
    const headers: Record<string, string | number> = {};
    if (err.details?.retryAfterSeconds !== undefined) headers['Retry-After'] = err.details.retryAfterSeconds;
    this.send(res, err.code, JSON.stringify(err.toStatus()), count, headers);
  }

  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.serve(req, res).catch((e) => {
      const err = e instanceof ApiError ? e : new ApiError(500, 'InternalError', `Internal error occurred: ${e?.message ?? e}`);
      if (!res.headersSent) this.sendError(res, err);
      else res.destroy();
    });
  };

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const parts = url.pathname.split('/').filter(Boolean);
    const user = this.ctx.auth.authenticate(req);
    const rr = resolve(method, parts, url.searchParams);
    if (rr === undefined || rr === 'unknown') {
      const attrs: RequestAttributes = { verb: method.toLowerCase(), path: url.pathname };
      this.authorize(user, attrs);
      return this.serveNonResource(rr, req, url.pathname, parts, res);
    }
    const label = rr.subresource ? `${rr.resource}/${rr.subresource}` : rr.resource;
    this.ctx.counters.request(rr.verb, label);
    const count: [string, string] = [rr.verb, label];
    try {
      this.authorize(user, rr);
      if (this.ctx.faults.latency > 0) await new Promise((r) => setTimeout(r, this.ctx.faults.latency));
      const fault = this.ctx.faults.take(rr.verb, label);
      if (fault) throw fault;
      const body = method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE' ? await readBody(req) : Buffer.alloc(0);
      await this.serveResource({ rr, q: url.searchParams, req, res, body, count });
    } catch (e) {
      if (!(e instanceof ApiError) || res.headersSent) throw e;
      this.sendError(res, e, count);
    }
  }

  private authorize(user: UserInfo, a: RequestAttributes): void {
    const rbac = this.ctx.rbac;
    if (!rbac || rbac.allows(user, a)) return;
    const why = rbac.deny(user, a);
    if (a.path !== undefined) throw new ApiError(403, 'Forbidden', `forbidden: ${why}`, {});
    const rr = a as ResourceRequest;
    throw forbidden(rr.type, a.name, why);
  }

  private serveNonResource(rr: 'unknown' | undefined, req: IncomingMessage, path: string, parts: string[], res: ServerResponse): void {
    const method = req.method ?? 'GET';
    if (rr === 'unknown' || method !== 'GET') {
      this.sendError(res, method !== 'GET' && rr === undefined ? methodNotAllowed() : noSuchPath());
      return;
    }
    if (path === '/openapi/v2') {
      const { body, contentType } = openApiV2((req.headers.accept ?? '').includes('protobuf'));
      res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': body.length });
      res.end(body);
      return;
    }
    if (['/healthz', '/livez', '/readyz'].includes(path)) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return;
    }
    const doc = this.discoveryDocument(path, parts);
    if (doc) this.send(res, 200, JSON.stringify(doc));
    else this.sendError(res, noSuchPath());
  }

  /** The discovery, version or OpenAPI document at `path`, if any. */
  private discoveryDocument(path: string, parts: string[]): object | undefined {
    const p = path.replace(/\/$/, '');
    if (p === '/api') return apiVersions(this.ctx.serverAddress());
    if (p === '/apis') return apiGroupList();
    if (p === '/version') return versionInfo();
    if (p === '/openapi/v3') return openApiRoot();
    if (p.startsWith('/openapi/v3/')) return openApiDocument(p.slice('/openapi/v3/'.length));
    if (parts[0] === 'api' && parts.length === 2) return apiResourceList(parts[1]);
    if (parts[0] === 'apis' && parts.length === 2) return apiGroup(parts[1]);
    if (parts[0] === 'apis' && parts.length === 3) return apiResourceList(`${parts[1]}/${parts[2]}`);
    return undefined;
  }

  private async serveResource(call: Call): Promise<void> {
    const { rr, q, req, res, body, count } = call;
    const { registry } = this.ctx;
    const r = rr.type;
    const dryRun = q.getAll('dryRun').includes('All');
    const warnings: string[] = [];
    const fv = q.get('fieldValidation');
    if (fv !== null && !['Strict', 'Warn', 'Ignore'].includes(fv)) {
      throw badRequest(`fieldValidation: Unsupported value: "${fv}": supported values: "Ignore", "Strict", "Warn"`);
    }
    const write = { dryRun, warnings, fieldValidation: (fv ?? 'Warn') as 'Strict' | 'Warn' | 'Ignore' };
    const reply = (code: number, e: Entry) => this.send(res, code, e.json, count, warningHeader(warnings));
    switch (rr.verb) {
      case 'get': {
        const e = registry.get(r, rr.namespace, rr.name!);
        if (!wantsTable(req.headers.accept)) return reply(200, e);
        return this.send(res, 200, renderTable(r, [e], includeObject(q), { resourceVersion: e.obj.metadata.resourceVersion }), count);
      }
      case 'list': return this.list(call);
      case 'watch': return this.watch(call);
      case 'create': {
        if (rr.name !== undefined) throw methodNotAllowed();
        return reply(201, registry.create(r, rr.namespace, parseObjectBody(req, body), write));
      }
      case 'update': {
        const sub = rr.subresource === 'finalize' ? 'finalize' : rr.subresource;
        if (sub === 'finalize') {
          const candidate = parseObjectBody(req, body);
          const prev = registry.get(r, undefined, rr.name!);
          const next = { ...cloneObject(prev), spec: { ...prev.obj.spec, finalizers: candidate.spec?.finalizers ?? [] } };
          return reply(200, registry.replace(r, prev, next, write));
        }
        return reply(200, registry.update(r, rr.namespace, rr.name!, parseObjectBody(req, body), { ...write, subresource: sub }));
      }
      case 'patch': {
        const prev = registry.get(r, rr.namespace, rr.name!);
        const patched = this.applyPatch(r, req.headers['content-type'] ?? '', prev, parseJson(body));
        return reply(200, registry.replace(r, prev, patched, { ...write, subresource: rr.subresource }));
      }
      case 'delete': {
        const options = deleteOptions(q, body);
        const { entry, deleted } = registry.delete(r, rr.namespace, rr.name!, { ...options, dryRun });
        if (!deleted || r.returnsDeletedObject) return reply(200, entry);
        return this.send(res, 200, JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Success',
          details: { name: rr.name, ...(r.group ? { group: r.group } : {}), kind: r.resource, uid: entry.obj.metadata.uid },
        }), count);
      }
      case 'deletecollection': {
        const options = deleteOptions(q, body);
        const matches = this.predicate(r, q);
        const items: string[] = [];
        for (const e of this.ctx.store.list(r, rr.namespace)) {
          if (!matches(e.obj)) continue;
          items.push(registry.delete(r, e.obj.metadata.namespace, e.obj.metadata.name, { ...options, dryRun }).entry.itemJson);
        }
        return this.send(res, 200, this.listJson(r, { resourceVersion: String(this.ctx.store.resourceVersion) }, items), count);
      }
      default: throw methodNotAllowed();
    }
  }

  private applyPatch(r: ResourceType, contentType: string, prev: Entry, patch: any): any {
    const type = contentType.split(';')[0].trim();
    const current = cloneObject(prev);
    const accepted = ['application/json-patch+json', 'application/merge-patch+json', ...(r.custom ? [] : ['application/strategic-merge-patch+json'])];
    switch (type) {
      case 'application/json-patch+json': return jsonPatch(current, patch);
      case 'application/merge-patch+json': return mergePatch(current, patch);
      case 'application/strategic-merge-patch+json':
        if (r.custom) throw unsupportedMediaType(accepted);
        return strategicMergePatch(current, patch, patchSchemaFor(r.kind));
      default: throw unsupportedMediaType(accepted);
    }
  }

  private predicate(r: ResourceType, q: URLSearchParams): (o: any) => boolean {
    const labels = parseLabelSelector(q.get('labelSelector') ?? undefined);
    const fields = parseFieldSelector(q.get('fieldSelector') ?? undefined, r);
    return (o) => labels(o) && fields(o);
  }

  private listJson(r: ResourceType, meta: object, items: string[]): string {
    return `{"kind":"${r.kind}List","apiVersion":"${groupVersion(r)}","metadata":${JSON.stringify(meta)},"items":[${items.join(',')}]}`;
  }

  private list({ rr, q, req, res, count }: Call): void {
    const { store } = this.ctx;
    const r = rr.type;
    const matches = this.predicate(r, q);
    const rv = q.get('resourceVersion') ?? '';
    const rvMatch = q.get('resourceVersionMatch') ?? '';
    const cont = q.get('continue') ?? '';
    const limit = Number(q.get('limit') ?? '0') || 0;
    if (rvMatch && !rv) throw badRequest('resourceVersionMatch is forbidden unless resourceVersion is provided');
    if (rvMatch && !['Exact', 'NotOlderThan'].includes(rvMatch)) {
      throw badRequest(`resourceVersionMatch: Unsupported value: "${rvMatch}": supported values: "Exact", "NotOlderThan"`);
    }
    if (cont && rv && rv !== '0') throw badRequest('specifying resource version is not allowed when using continue');
    if (rvMatch === 'Exact' && rv === '0') throw badRequest('resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
    if (rv && !/^\d+$/.test(rv)) throw badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);

    let atRv = store.resourceVersion;
    let start = '';
    let entries: Entry[] | undefined;
    if (cont) {
      const t = decodeContinue(cont);
      atRv = t.rv;
      start = t.start;
      entries = store.listAt(r, atRv, rr.namespace);
      if (!entries) throw gone(EXPIRED_CONTINUE);
    } else if (rvMatch === 'Exact') {
      atRv = Number(rv);
      entries = store.listAt(r, atRv, rr.namespace);
      if (!entries) throw gone('The resourceVersion for the provided list is too old.');
    } else {
      if (rv && rv !== '0' && Number(rv) > store.resourceVersion) {
        throw new ApiError(504, 'Timeout', `Too large resource version: ${rv}, current: ${store.resourceVersion}`,
          { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 });
      }
      const pinned = pinnedName(q.get('fieldSelector') ?? undefined);
      if (pinned !== undefined && (!r.namespaced || rr.namespace)) {
        const one = store.get(r, rr.namespace, pinned);
        entries = one ? [one] : [];
      } else {
        entries = store.list(r, rr.namespace);
      }
    }

    let i = 0;
    if (start) {
      let lo = 0;
      let hi = entries.length;
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        if (entries[mid].key < start) lo = mid + 1;
        else hi = mid;
      }
      i = lo;
    }
    const picked: Entry[] = [];
    for (; i < entries.length && (!limit || picked.length < limit); i++) {
      if (matches(entries[i].obj)) picked.push(entries[i]);
    }
    const meta: Record<string, unknown> = { resourceVersion: String(atRv) };
    if (limit && i < entries.length) {
      meta.continue = encodeContinue(atRv, picked[picked.length - 1]?.key ?? entries[i - 1].key);
      if (!q.get('labelSelector') && !q.get('fieldSelector')) meta.remainingItemCount = entries.length - i;
    }
    if (wantsTable(req.headers.accept)) return this.send(res, 200, renderTable(r, picked, includeObject(q), meta), count);
    this.send(res, 200, this.listJson(r, meta, picked.map((e) => e.itemJson)), count);
  }

  private watch({ rr, q, req, res, count }: Call): void {
    const r = rr.type;
    const matches = this.predicate(r, q);
    const rv = q.get('resourceVersion') ?? undefined;
    if (rv && !/^\d+$/.test(rv)) throw badRequest(`resourceVersion: Invalid value: "${rv}": must be a non-negative integer`);
    const sendInitialEvents = q.get('sendInitialEvents') === 'true';
    const allowBookmarks = q.get('allowWatchBookmarks') === 'true';
    if (sendInitialEvents && (!allowBookmarks || q.get('resourceVersionMatch') !== 'NotOlderThan')) {
      throw new ApiError(422, 'Invalid', 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan and allowWatchBookmarks to true');
    }
    const timeout = q.get('timeoutSeconds');
    const table = wantsTable(req.headers.accept);
    const include = includeObject(q);
    this.ctx.hub.serve({
      resource: r,
      namespace: rr.namespace,
      matches,
      resourceVersion: rv,
      allowBookmarks,
      sendInitialEvents,
      timeoutSeconds: timeout ? Number(timeout) : undefined,
      render: table ? (e) => renderTable(r, [e], include, { resourceVersion: e.obj.metadata.resourceVersion }) : undefined,
      onBytes: (n) => this.ctx.counters.bytes(count[0], count[1], n),
    }, res);
  }
}

/** The Warning header the real server sends: `299 - "text"` per warning. */
function warningHeader(warnings: string[]): Record<string, string> {
  if (!warnings.length) return {};
  return { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ') };
}

function includeObject(q: URLSearchParams): IncludeObject {
  const v = q.get('includeObject');
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

function deleteOptions(q: URLSearchParams, body: Buffer): DeleteOptions {
  const fromBody = body.length ? parseJson(body) : {};
  const policy = q.get('propagationPolicy') ?? fromBody.propagationPolicy;
  if (policy !== undefined && !['Orphan', 'Background', 'Foreground'].includes(policy)) {
    throw new ApiError(422, 'Invalid', `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan", "nil"`);
  }
  const orphan = fromBody.orphanDependents ?? (q.get('orphanDependents') === null ? undefined : q.get('orphanDependents') === 'true');
  return {
    propagationPolicy: policy ?? (orphan === true ? 'Orphan' : orphan === false ? 'Background' : undefined),
    preconditions: fromBody.preconditions,
  };
}
