import { joinPath } from './issues';
import { labelValueProblem, qualifiedNameProblem } from './kube-names';
import { TAINT_EFFECTS, Toleration, TOLERATION_OPERATORS } from './model';
import { FieldsOptions, readEnum, readFields, readInteger, readString, Reader } from './values';

/**
 * `jobTolerations`: core/v1 Tolerations for cleanup Jobs, checked with the API
 * server's rules so a bad one is reported at load time, not when a volume is
 * released and its cleanup Job is refused.
 */
export function readToleration(options: FieldsOptions): Reader<Toleration> {
  return (value, at, issues) => {
    const before = issues.errors.length;
    const fields = readFields(value, ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] as const, at, issues, options);
    if (!fields) return undefined;
    const key = readString(fields.key, joinPath(at, 'key'), issues);
    // The API treats an empty operator or effect as unset (Equal, every effect).
    const operator = readEnum(TOLERATION_OPERATORS)(emptyAsUnset(fields.operator), joinPath(at, 'operator'), issues);
    const tolerationValue = readString(fields.value, joinPath(at, 'value'), issues);
    const effect = readEnum(TAINT_EFFECTS)(emptyAsUnset(fields.effect), joinPath(at, 'effect'), issues);
    const tolerationSeconds = readInteger(Number.MIN_SAFE_INTEGER)(fields.tolerationSeconds, joinPath(at, 'tolerationSeconds'), issues);

    if (key !== undefined && key !== '') {
      const problem = qualifiedNameProblem(key);
      if (problem) issues.error(joinPath(at, 'key'), `${JSON.stringify(key)} ${problem}`);
    } else if (operator !== 'Exists') {
      issues.error(joinPath(at, 'operator'), 'must be Exists when key is empty (a toleration of every taint)');
    }
    if (operator === 'Exists' && tolerationValue) {
      issues.error(joinPath(at, 'value'), 'must be empty when operator is Exists');
    } else if (tolerationValue !== undefined) {
      const problem = labelValueProblem(tolerationValue);
      if (problem) issues.error(joinPath(at, 'value'), `${JSON.stringify(tolerationValue)} ${problem}`);
    }
    if (tolerationSeconds !== undefined && effect !== 'NoExecute') {
      issues.error(joinPath(at, 'tolerationSeconds'), 'is only allowed with effect NoExecute');
    }
    if (issues.errors.length > before) return undefined;
    return {
      ...(key !== undefined && { key }),
      ...(operator !== undefined && { operator }),
      ...(tolerationValue !== undefined && { value: tolerationValue }),
      ...(effect !== undefined && { effect }),
      ...(tolerationSeconds !== undefined && { tolerationSeconds }),
    };
  };
}

function emptyAsUnset(value: unknown): unknown {
  return value === '' ? undefined : value;
}
