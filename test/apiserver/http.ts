/**
 * HTTP serving: resolves the request (request-info), authenticates, authorizes,
 * applies injected faults, serves it from the registry, a list page or the
 * watch hub, renders JSON or a Table, and counts requests and bytes.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Authenticator, UserInfo } from './auth';
import { deleteOptions, parseJson, parseObjectBody, readBody } from './bodies';
import { Counters } from './counters';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, versionInfo } from './discovery';
import { Faults } from './faults';
import { listPage, selectorFilter } from './list';
import { openApiDocument, openApiRoot, openApiV2 } from './openapi';
import { jsonPatch, mergePatch, patchSchemaFor, strategicMergePatch } from './patch';
import { PROTOBUF } from './protobuf';
import { RbacAuthorizer, RequestAttributes } from './rbac';
import { Registry } from './registry';
import { ResourceRequest, resolve } from './request-info';
import { ResourceType, groupVersion } from './resources';
import { ApiError, badRequest, forbidden, methodNotAllowed, noSuchPath, unsupportedMediaType } from './status';
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

/** One resource request being served. */
interface Call {
  readonly rr: ResourceRequest;
  readonly q: URLSearchParams;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly body: Buffer;
  /** Counter key: verb and resource(/subresource). */
  readonly count: [string, string];
  readonly user: UserInfo;
}

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
      this.ctx.faults.runHook(rr.verb, label);
      const fault = this.ctx.faults.take(rr.verb, label);
      if (fault) throw fault;
      const body = method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE' ? await readBody(req) : Buffer.alloc(0);
      await this.serveResource({ rr, q: url.searchParams, req, res, body, count, user });
    } catch (e) {
      if (!(e instanceof ApiError) || res.headersSent) throw e;
      this.sendError(res, e, count);
    }
  }

  /** A SelfSubjectAccessReview answered for `user`, as the real authorizer would answer the request it describes. */
  private review(user: UserInfo, review: any): object {
    const resource = review.spec?.resourceAttributes;
    const nonResource = review.spec?.nonResourceAttributes;
    if (!resource === !nonResource) {
      throw new ApiError(422, 'Invalid', 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified');
    }
    const attrs: RequestAttributes = resource
      ? { verb: resource.verb, apiGroup: resource.group ?? '', resource: resource.resource, subresource: resource.subresource || undefined, namespace: resource.namespace || undefined, name: resource.name || undefined }
      : { verb: nonResource.verb, path: nonResource.path };
    const allowed = !this.ctx.rbac || this.ctx.rbac.allows(user, attrs);
    return { ...review, metadata: { creationTimestamp: null }, status: { allowed, ...(allowed ? { reason: 'RBAC: allowed' } : {}) } };
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
    if (!answersInJson(req.headers.accept)) {
      throw new ApiError(406, 'NotAcceptable', 'only the following media types are accepted: application/json');
    }
    const write = { dryRun, warnings, fieldValidation: (fv ?? 'Warn') as 'Strict' | 'Warn' | 'Ignore' };
    const reply = (code: number, e: Entry) => this.send(res, code, e.json, count, warningHeader(warnings));
    if (!r.verbs.includes(rr.verb)) throw methodNotAllowed();
    if (r.kind === 'SelfSubjectAccessReview') return this.send(res, 201, JSON.stringify(this.review(call.user, parseObjectBody(req, body, r))), count);
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
        return reply(201, registry.create(r, rr.namespace, parseObjectBody(req, body, r), write));
      }
      case 'update': {
        const sub = rr.subresource === 'finalize' ? 'finalize' : rr.subresource;
        if (sub === 'finalize') {
          const candidate = parseObjectBody(req, body, r);
          const prev = registry.get(r, undefined, rr.name!);
          const next = { ...cloneObject(prev), spec: { ...prev.obj.spec, finalizers: candidate.spec?.finalizers ?? [] } };
          return reply(200, registry.replace(r, prev, next, write));
        }
        return reply(200, registry.update(r, rr.namespace, rr.name!, parseObjectBody(req, body, r), { ...write, subresource: sub }));
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
        const matches = selectorFilter(r, q);
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

  private listJson(r: ResourceType, meta: object, items: string[]): string {
    return `{"kind":"${r.kind}List","apiVersion":"${groupVersion(r)}","metadata":${JSON.stringify(meta)},"items":[${items.join(',')}]}`;
  }

  private list({ rr, q, req, res, count }: Call): void {
    const { items, meta } = listPage(this.ctx.store, rr.type, rr.namespace, q);
    if (wantsTable(req.headers.accept)) return this.send(res, 200, renderTable(rr.type, items, includeObject(q), meta), count);
    this.send(res, 200, this.listJson(rr.type, meta, items.map((e) => e.itemJson)), count);
  }

  private watch({ rr, q, req, res, count }: Call): void {
    const r = rr.type;
    const matches = selectorFilter(r, q);
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

/**
 * Whether a JSON answer is acceptable. Responses are always JSON (a client that
 * lists protobuf first, as client-go's typed clients do, also lists JSON); a
 * client that takes protobuf only gets 406, where the real server would answer
 * in protobuf.
 */
function answersInJson(accept: string | undefined): boolean {
  if (!accept) return true;
  return accept.split(',').map((t) => t.split(';')[0].trim()).some((t) => t !== PROTOBUF && !t.startsWith(`${PROTOBUF};`));
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

