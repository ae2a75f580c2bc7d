/** Whether the construct emits its Namespace, and where it sits (the chart, other instances). */
import { PropIssues } from '../prop-issues';
import { LocalVolumeProvisionerProps } from '../props';
import { SYSTEM_NAMESPACES } from './constants';

/** What resolving the props needs to know about where the construct sits. */
export interface ConstructContext {
  /** The namespace of the enclosing chart, if it has one. */
  readonly chartNamespace?: string;
  /** Namespaces other provisioners of the same app already create, each with that construct's path. */
  readonly namespacesCreatedElsewhere: ReadonlyMap<string, string>;
}

/**
 * The Namespace is the instance's own only when the construct chose it (named after the
 * instance): one named by `namespace` or the chart may hold other workloads, and emitting
 * it would relabel it and let `kubectl delete -f` delete it with everything in it.
 */
export function resolveCreateNamespace(
  props: LocalVolumeProvisionerProps, context: ConstructContext, namespace: string, issues: PropIssues,
): boolean {
  const create = props.createNamespace ?? (props.namespace === undefined && context.chartNamespace === undefined);
  if (!create) return false;
  if (SYSTEM_NAMESPACES.includes(namespace)) {
    issues.add('createNamespace', `"${namespace}" is created by Kubernetes; the construct never emits it (set createNamespace: false)`);
  }
  const other = context.namespacesCreatedElsewhere.get(namespace);
  if (other !== undefined) {
    issues.add('createNamespace', `the Namespace "${namespace}" is already created by the LocalVolumeProvisioner ${other}; `
      + 'set createNamespace: false here, or give each instance a namespace of its own');
  }
  return true;
}
