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
