/**
 * Schema validation with the Kubernetes schemas that `kubernetes-models` ships
 * (and the prometheus-operator models for its custom resources).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { invalidValue, required, unsupported } from './causes';
import { ResourceType } from './resources';
import { StatusCause, badRequest } from './status';

const modelCache = new Map<ResourceType, any>();

/**
 * Loads a model class. The prometheus-operator models are ES modules whose
 * package exports only an `import` condition, so outside jest (which maps the
 * path) they are required by file path, which Node's require(esm) accepts.
 */
function loadModel(specifier: string): any {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(specifier);
  } catch (e: any) {
    if (e?.code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw e;
    const [scope, name, ...rest] = specifier.split('/');
    const dir = (require.resolve.paths(specifier) ?? []).map((p) => join(p, scope, name)).find((d) => existsSync(d));
    if (!dir) throw e;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(join(dir, `${rest.join('/')}.js`));
  }
}

function modelClass(r: ResourceType): any {
  if (!modelCache.has(r)) modelCache.set(r, loadModel(r.model[0])[r.model[1]]);
  return modelCache.get(r);
}

function fieldPath(instancePath: string): string {
  return instancePath.split('/').filter(Boolean)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((acc, s) => (/^\d+$/.test(s) ? `${acc}[${s}]` : acc ? `${acc}.${s}` : s), '');
}

function valueAt(obj: any, instancePath: string): unknown {
  return instancePath.split('/').filter(Boolean).reduce((o, s) => o?.[s.replace(/~1/g, '/').replace(/~0/g, '~')], obj);
}

/** Schema errors from kubernetes-models as causes; type errors on built-in kinds are decode failures (400). */
export function schemaProblems(r: ResourceType, obj: any): StatusCause[] {
  const Model = modelClass(r);
  try {
    new Model(obj).validate();
    return [];
  } catch (e: any) {
    const errors: any[] = e?.errors ?? [];
    if (!errors.length) throw e;
    const out: StatusCause[] = [];
    for (const err of errors) {
      const field = fieldPath(err.instancePath ?? '');
      const value = valueAt(obj, err.instancePath ?? '');
      switch (err.keyword) {
        case 'required': out.push(required(field ? `${field}.${err.params.missingProperty}` : err.params.missingProperty)); break;
        case 'type': {
          if (!r.custom) {
            throw badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: `
              + `json: cannot unmarshal ${typeof value} into Go struct field .${field} of type ${err.params.type}`);
          }
          out.push(invalidValue(field, typeof value, `${field} in body must be of type ${err.params.type}: "${typeof value}"`));
          break;
        }
        case 'enum': out.push(unsupported(field, value, err.params.allowedValues ?? [])); break;
        default: out.push(invalidValue(field, value, err.message ?? 'invalid'));
      }
    }
    return out;
  }
}
