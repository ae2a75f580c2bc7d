import { IssueCollector, joinPath } from './issues';
import { qualifiedNameProblem } from './kube-names';
import { NODE_SELECTOR_OPERATORS, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm } from './model';
import { FieldsOptions, readEnum, readFields, readList, readString, Reader } from './values';

/**
 * A class's `selector`: core/v1 NodeSelectorTerms, checked field by field with the
 * API server's rules, because they go verbatim into every PV's node affinity and
 * one bad term would make every PV create of that class fail.
 */

const FIELD_SELECTOR_KEYS = ['metadata.name'];

function readRequirement(kind: 'matchExpressions' | 'matchFields', options: FieldsOptions): Reader<NodeSelectorRequirement> {
  return (value, at, issues) => {
    const before = issues.errors.length;
    const fields = readFields(value, ['key', 'operator', 'values'] as const, at, issues, options);
    if (!fields) return undefined;
    const key = readString(fields.key, joinPath(at, 'key'), issues);
    const operator = readEnum(NODE_SELECTOR_OPERATORS)(fields.operator, joinPath(at, 'operator'), issues);
    const values = readList(readString)(fields.values, joinPath(at, 'values'), issues);
    if (key === undefined && fields.key === undefined) issues.error(joinPath(at, 'key'), 'is required');
    if (operator === undefined && fields.operator === undefined) issues.error(joinPath(at, 'operator'), `is required (one of ${NODE_SELECTOR_OPERATORS.join(', ')})`);
    if (key !== undefined) {
      if (kind === 'matchFields') {
        if (!FIELD_SELECTOR_KEYS.includes(key)) issues.error(joinPath(at, 'key'), `${JSON.stringify(key)} is not a supported field (only metadata.name)`);
      } else {
        const problem = qualifiedNameProblem(key);
        if (problem) issues.error(joinPath(at, 'key'), `${JSON.stringify(key)} ${problem}`);
      }
    }
    if (operator !== undefined) checkValues(kind, operator, values ?? [], joinPath(at, 'values'), issues);
    if (issues.errors.length > before || key === undefined || operator === undefined) return undefined;
    return values === undefined ? { key, operator } : { key, operator, values };
  };
}

function checkValues(kind: 'matchExpressions' | 'matchFields', operator: NodeSelectorOperator, values: string[], at: string, issues: IssueCollector): void {
  if (kind === 'matchFields') {
    if (operator !== 'In' && operator !== 'NotIn') issues.error(at.replace(/\.values$/, '.operator'), `${JSON.stringify(operator)} is not one of In, NotIn (the only operators for matchFields)`);
    else if (values.length !== 1) issues.error(at, `must hold exactly one value for ${operator} in matchFields`);
    return;
  }
  switch (operator) {
    case 'In':
    case 'NotIn':
      if (values.length === 0) issues.error(at, `must not be empty for ${operator}`);
      break;
    case 'Exists':
    case 'DoesNotExist':
      if (values.length > 0) issues.error(at, `must be empty for ${operator}`);
      break;
    case 'Gt':
    case 'Lt':
      if (values.length !== 1 || !/^[-+]?\d+$/.test(values[0])) issues.error(at, `must hold exactly one integer for ${operator}`);
      break;
  }
}

export function readNodeSelectorTerm(options: FieldsOptions): Reader<NodeSelectorTerm> {
  return (value, at, issues) => {
    const fields = readFields(value, ['matchExpressions', 'matchFields'] as const, at, issues, options);
    if (!fields) return undefined;
    const matchExpressions = readList(readRequirement('matchExpressions', options))(fields.matchExpressions, joinPath(at, 'matchExpressions'), issues);
    const matchFields = readList(readRequirement('matchFields', options))(fields.matchFields, joinPath(at, 'matchFields'), issues);
    if (!matchExpressions?.length && !matchFields?.length) {
      issues.warn(at, 'has no matchExpressions or matchFields, so it matches no node');
    }
    return {
      ...(matchExpressions !== undefined && { matchExpressions }),
      ...(matchFields !== undefined && { matchFields }),
    };
  };
}
