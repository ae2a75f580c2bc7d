/**
 * A snapshot's handle (the content's `status.snapshotHandle`, CSI's snapshot ID): the node
 * it is on and its identity in that node's pool, `<node>/<identity>`. A claim restored from
 * it is made only on that node, and the handle names the node for a claim placed elsewhere.
 */

export function snapshotHandle(nodeName: string, identity: string): string {
  return `${nodeName}/${identity}`;
}

/** The node and identity in a handle; undefined for a handle not of this form (not the agent's). */
export function parseSnapshotHandle(handle: string): { readonly node: string; readonly identity: string } | undefined {
  const at = handle.indexOf('/');
  if (at <= 0 || at === handle.length - 1 || handle.indexOf('/', at + 1) !== -1) return undefined;
  return { node: handle.slice(0, at), identity: handle.slice(at + 1) };
}
