/** Request bodies: object bodies (JSON or YAML), patch bodies, DeleteOptions. */
import { IncomingMessage } from 'node:http';
import { parse as parseYaml } from 'yaml';
import { PROTOBUF, decodeProtobufObject } from './protobuf';
import { DeleteOptions } from './registry';
import { ResourceType } from './resources';
import { ApiError, badRequest, unsupportedMediaType } from './status';

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolveBody(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function parseJson(buf: Buffer): any {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e: any) {
    throw badRequest(`error decoding request body: ${e.message}`);
  }
}

/**
 * An object body (create, update) for resource `r`: JSON, YAML, or the
 * protobuf that typed client-go clientsets send (e.g. `kubectl create
 * configmap` from kubectl 1.32 on), for the kinds protobuf.ts can read.
 */
export function parseObjectBody(req: IncomingMessage, buf: Buffer, r: ResourceType): any {
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0].trim();
  if (type === 'application/json' || type === '') return parseJson(buf);
  if (type === PROTOBUF) return decodeProtobufObject(r, buf);
  if (type === 'application/yaml') {
    try {
      return parseYaml(buf.toString('utf8'));
    } catch (e: any) {
      throw badRequest(`error decoding request body: ${e.message}`);
    }
  }
  throw unsupportedMediaType(['application/json', 'application/yaml', ...(r.custom ? [] : [PROTOBUF])]);
}

export function deleteOptions(q: URLSearchParams, body: Buffer): DeleteOptions {
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
