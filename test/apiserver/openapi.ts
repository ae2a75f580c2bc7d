/**
 * The OpenAPI v3 discovery kubectl reads before it writes: `/openapi/v3` lists
 * one document per group version, and each document's PATCH operations carry the
 * `x-kubernetes-group-version-kind` extension and the `fieldValidation` query
 * parameter, from which kubectl learns that the server validates fields itself.
 *
 * The documents carry no schemas. They list no strategic-merge-patch body either,
 * so kubectl computes `apply` patches from its compiled-in types (as it does for
 * a server without OpenAPI) rather than from schemas this server cannot supply.
 */
import { RESOURCES, groupVersion, groupVersions } from './resources';

/** Protobuf length-delimited field (wire type 2). */
function bytesField(field: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(field * 8) + 2, payload.length]), payload]);
}

/**
 * `/openapi/v2`, which kubectl up to 1.28 must load before `apply` (as
 * protobuf, gnostic's openapi_v2.Document): swagger "2.0" and an info block, no
 * definitions. kubectl then learns about field validation from `/openapi/v3`
 * and builds patches from its compiled-in types.
 */
export function openApiV2(protobuf: boolean): { body: Buffer; contentType: string } {
  if (!protobuf) {
    return {
      body: Buffer.from(JSON.stringify({ swagger: '2.0', info: { title: 'Kubernetes', version: 'v1.33.0' }, paths: {}, definitions: {} })),
      contentType: 'application/json',
    };
  }
  const info = Buffer.concat([bytesField(1, Buffer.from('Kubernetes')), bytesField(2, Buffer.from('v1.33.0'))]);
  return {
    body: Buffer.concat([bytesField(1, Buffer.from('2.0')), bytesField(2, info)]),
    contentType: 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf',
  };
}

function docPath(gv: string): string {
  return gv.includes('/') ? `apis/${gv}` : `api/${gv}`;
}

export function openApiRoot(): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const gv of groupVersions()) {
    const p = docPath(groupVersion(gv));
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=${Buffer.from(p).toString('hex').slice(0, 32)}` };
  }
  return { paths };
}

const PARAM = (name: string) => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });

/** The document for `api/v1` or `apis/<group>/<version>`, or undefined. */
export function openApiDocument(path: string): object | undefined {
  const served = RESOURCES.filter((r) => docPath(groupVersion(r)) === path);
  if (!served.length) return undefined;
  const paths: Record<string, object> = {};
  for (const r of served) {
    const base = `/${path}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.resource}/{name}`;
    const gvk = { 'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind } };
    const patch = {
      ...gvk,
      'x-kubernetes-action': 'patch',
      'operationId': `patch${r.kind}`,
      'parameters': [PARAM('dryRun'), PARAM('fieldManager'), PARAM('fieldValidation'), { name: 'force', in: 'query', schema: { type: 'boolean' } }],
      'requestBody': { content: { 'application/json-patch+json': {}, 'application/merge-patch+json': {} }, required: true },
      'responses': { 200: { description: 'OK' } },
    };
    paths[base] = { patch, put: { ...gvk, 'x-kubernetes-action': 'put', 'parameters': [PARAM('dryRun'), PARAM('fieldManager'), PARAM('fieldValidation')] } };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.33.0' }, paths, components: { schemas: {} } };
}
