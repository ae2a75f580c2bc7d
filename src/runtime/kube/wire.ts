/**
 * An object as sent on the wire, typed. Lists and watches both hand over plain JSON
 * (nothing is deserialized), so this is only a cast; `type` names the intended type.
 */
export function fromWire<T>(raw: unknown, _type: string): T {
  return raw as T;
}
