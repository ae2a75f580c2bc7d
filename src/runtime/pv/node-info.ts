/** The facts about this provisioner's Node that go onto its PVs. */
import type { V1Node } from '@kubernetes/client-node';
import { HOSTNAME_LABEL } from '../well-known';

export interface NodeInfo {
  readonly name: string;
  /** Needed for the provisioner name (unless useNodeNameOnly) and for ownerReferences. */
  readonly uid: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** Reads a Node object; a missing UID or label map becomes "" or {}. */
export function nodeInfoOf(node: V1Node): NodeInfo {
  return { name: node.metadata?.name ?? '', uid: node.metadata?.uid ?? '', labels: node.metadata?.labels ?? {} };
}

/**
 * The value for the hostname affinity term: the Node's `kubernetes.io/hostname`
 * label (it can differ from the Node name on some clouds), else the Node name.
 * Upstream refuses to start without the label; every kubelet sets it, and the
 * name is the right fallback.
 */
export function nodeHostname(node: NodeInfo): string {
  return node.labels[HOSTNAME_LABEL] ?? node.name;
}
