/** Where a local volume can be used: this node, plus any terms the class adds (shared disks). */
import type { V1NodeSelectorTerm, V1VolumeNodeAffinity } from '@kubernetes/client-node';
import { nodeHostname, type NodeInfo } from './node-info';
import type { NodeSelectorTerm } from '../../config';
import { HOSTNAME_LABEL } from '../well-known';

/** `kubernetes.io/hostname In [<hostname>]`, then the extra terms, ORed as nodeSelectorTerms are. */
export function volumeNodeAffinity(node: NodeInfo, extraTerms: readonly NodeSelectorTerm[] = []): V1VolumeNodeAffinity {
  const hostnameTerm: V1NodeSelectorTerm = {
    matchExpressions: [{ key: HOSTNAME_LABEL, operator: 'In', values: [nodeHostname(node)] }],
  };
  return { required: { nodeSelectorTerms: [hostnameTerm, ...extraTerms.map(copyTerm)] } };
}

function copyTerm(term: NodeSelectorTerm): V1NodeSelectorTerm {
  const copy = (list: NodeSelectorTerm['matchExpressions']) =>
    list?.map((r) => ({ key: r.key, operator: r.operator, ...(r.values ? { values: [...r.values] } : {}) }));
  return {
    ...(term.matchExpressions ? { matchExpressions: copy(term.matchExpressions) } : {}),
    ...(term.matchFields ? { matchFields: copy(term.matchFields) } : {}),
  };
}
