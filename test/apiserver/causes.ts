/** Builders of the causes in a 422 Invalid Status, worded as k8s.io/apimachinery's field errors word them. */
import { StatusCause } from './status';

export function invalidValue(field: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(value)}: ${detail}` };
}

export function required(field: string, detail?: string): StatusCause {
  return { reason: 'FieldValueRequired', field, message: detail ? `Required value: ${detail}` : 'Required value' };
}

export function unsupported(field: string, value: unknown, allowed: string[]): StatusCause {
  return {
    reason: 'FieldValueNotSupported',
    field,
    message: `Unsupported value: ${JSON.stringify(value)}: supported values: ${allowed.map((a) => `"${a}"`).join(', ')}`,
  };
}

export function forbiddenField(field: string, detail: string): StatusCause {
  return { reason: 'FieldValueForbidden', field, message: `Forbidden: ${detail}` };
}

export function immutable(field: string, value: unknown): StatusCause {
  return invalidValue(field, value, 'field is immutable');
}

/** A second entry with a value that must be unique in its list (field.Duplicate). */
export function duplicate(field: string, value: unknown): StatusCause {
  return { reason: 'FieldValueDuplicate', field, message: `Duplicate value: ${JSON.stringify(value)}` };
}

/** A reference to something that does not exist (field.NotFound), e.g. a mount of an undeclared volume. */
export function notFound(field: string, value: unknown): StatusCause {
  return { reason: 'FieldValueNotFound', field, message: `Not found: ${JSON.stringify(value)}` };
}

/** ValidateNonnegativeField: numbers below zero. */
export function nonNegativeProblems(field: string, value: unknown): StatusCause[] {
  return typeof value === 'number' && value < 0 ? [invalidValue(field, value, 'must be greater than or equal to 0')] : [];
}
