/**
 * Server-side validation: object-meta syntax, the Kubernetes schemas, and the
 * rules of the real registry strategies. A failure is 422 Invalid with one cause
 * per problem; a body that cannot decode as the kind is 400.
 */
import { kindProblems } from './kind-rules';
import { metadataProblems } from './names';
import { DecodeError } from './quantity';
import { ResourceType } from './resources';
import { schemaProblems } from './schema';
import { StatusCause, badRequest, invalid } from './status';

/** The kind's rules; a value the Go type could not have decoded (a malformed quantity) is a 400, as decoding would be. */
function decodedKindProblems(r: ResourceType, obj: any, prev?: any): StatusCause[] {
  try {
    return kindProblems(r, obj, prev);
  } catch (e) {
    if (e instanceof DecodeError) throw badRequest(`${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: ${e.message}`);
    throw e;
  }
}

const unsupportedValue = (c: StatusCause) => (c.reason === 'FieldValueNotSupported' ? /^Unsupported value: (.*?): supported values/.exec(c.message)?.[1] : undefined);

/**
 * Schema causes the kind's rules already report, worded as the real server
 * words them: a missing field (same field and reason), or a value outside an
 * enum (same value; the real errors may name a different path).
 */
function alsoFromRules(schema: StatusCause, rules: StatusCause[]): boolean {
  const value = unsupportedValue(schema);
  return rules.some((c) => (c.field === schema.field && c.reason === schema.reason) || (value !== undefined && unsupportedValue(c) === value));
}

/** Throws 400 or 422 as the real server would for this object (on create, or update when `prev` is given). */
export function validateObject(r: ResourceType, obj: any, prev?: any): void {
  const rules = decodedKindProblems(r, obj, prev);
  const schema = schemaProblems(r, obj).filter((c) => !alsoFromRules(c, rules));
  const causes = [...metadataProblems(r, obj.metadata ?? {}), ...rules, ...schema];
  if (causes.length) throw invalid(r, obj.metadata?.name ?? '', causes);
}
