// client-node deserializes what its generated API returns (timestamps become Dates) but
// hands watch events over as raw JSON. Its serializer is not re-exported, so we reach
// for it by path; the version is pinned (~1.4) and a test guards this import.
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';

/** Turns an object as sent on the wire into the typed form the generated API returns, e.g. type `V1PersistentVolume`. */
export function fromWire<T>(raw: unknown, type: string): T {
  return ObjectSerializer.deserialize(raw, type, '') as T;
}
