/**
 * Server-side validation: object-meta syntax, the Kubernetes schemas, and the
 * rules of the real registry strategies. A failure is 422 Invalid with one cause
 * per field; a body that cannot decode as the kind is 400.
 */
import { kindProblems } from './kind-rules';
import { metadataProblems } from './names';
import { ResourceType } from './resources';
import { schemaProblems } from './schema';
import { invalid } from './status';

/** Throws 400 or 422 as the real server would for this object (on create, or update when `prev` is given). */
export function validateObject(r: ResourceType, obj: any, prev?: any): void {
  const causes = [...metadataProblems(r, obj.metadata ?? {}), ...schemaProblems(r, obj), ...kindProblems(r, obj, prev)];
  // The schema and the kind's rules can both notice one missing field; report it once.
  const unique = [...new Map(causes.map((c) => [`${c.field}|${c.reason}`, c])).values()];
  if (unique.length) throw invalid(r, obj.metadata?.name ?? '', unique);
}
