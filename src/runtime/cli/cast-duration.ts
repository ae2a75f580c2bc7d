/**
 * A duration from the environment as the device provisioner reads it: viper
 * hands `LP_*` values to spf13/cast's ToDuration, which appends `ns` to a text
 * containing none of the characters `nsuµmh` (so `300` is 300 ns, `1.5` is 1 ns),
 * passes anything else to time.ParseDuration, and turns a parse error into 0
 * without a word. Callers decide what a non-positive result means; this only
 * reads it, and says how.
 */
import { parseGoDuration } from '../../config/duration';

export interface CastDuration {
  /**
   * Milliseconds: 0 for zero or unreadable text, negative for a negative duration;
   * a positive duration shorter than a millisecond is 1.
   */
  readonly ms: number;
  /** The text had no unit and was read as nanoseconds. */
  readonly appendedNs: boolean;
  /** How it was read, for messages: e.g. `is read as 300ns`. */
  readonly how: string;
}

/** cast's test for "has a unit": any of these characters anywhere (µ is the micro sign, U+00B5). */
const UNIT_CHARACTERS = /[nsu\u00b5mh]/;

export function castDuration(text: string): CastDuration {
  const appendedNs = !UNIT_CHARACTERS.test(text);
  const goText = appendedNs ? `${text}ns` : text;
  const negative = goText.startsWith('-');
  const magnitude = parseGoDuration(negative ? goText.slice(1) : goText);
  if (magnitude === undefined) return { ms: 0, appendedNs, how: `is not a duration${appendedNs ? ` even as ${JSON.stringify(goText)}` : ''}, so it is read as 0` };
  const zero = !/[1-9]/.test(goText);
  const ms = zero ? 0 : (negative ? -1 : 1) * Math.max(magnitude, 1);
  return { ms, appendedNs, how: `is read as ${goText}` };
}
