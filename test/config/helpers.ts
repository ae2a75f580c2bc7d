import { ConfigIssue, formatIssue, ParseResult } from '../../src/config';

/** The resolved config of a result that must be valid (fails the test with the issues otherwise). */
export function valid<T>(result: ParseResult<T>): T {
  if (!result.ok) throw new Error(`expected a valid config, got:\n${result.errors.map(formatIssue).join('\n')}`);
  return result.config;
}

/** The formatted errors of a result that must be invalid. */
export function errorsOf<T>(result: ParseResult<T>): string[] {
  if (result.ok) throw new Error(`expected errors, got a valid config: ${JSON.stringify(result.config)}`);
  return result.errors.map(formatIssue);
}

export function warningsOf<T>(result: ParseResult<T>): string[] {
  return result.warnings.map((w: ConfigIssue) => formatIssue(w));
}
