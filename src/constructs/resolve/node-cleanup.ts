/** The node-cleanup Deployment's part. */
import { Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import { checkLabels, checkTolerations, integerProblem, objectNameProblem, PropIssues } from '../prop-issues';
import { LocalVolumeProvisionerProps } from '../props';
import { ResolvedStorageClass } from './storage-class';
import { optionalDuration, quantity } from './values';

export interface ResolvedNodeCleanup {
  readonly storageClassNames: string[];
  readonly pvcDeletionDelayMs: number;
  readonly stalePvDiscoveryIntervalMs: number;
  readonly replicas: number;
  readonly resources: k8s.ResourceRequirements;
  readonly nodeSelector: Record<string, string>;
  readonly tolerations: k8s.Toleration[];
  readonly affinity?: k8s.Affinity;
  readonly priorityClassName?: string;
  readonly serviceAccountName: string;
}

/** The node-cleanup Deployment (`nodeCleanup`), its classes checked against the provisioner's. */
export function resolveNodeCleanup(
  props: LocalVolumeProvisionerProps, serviceAccountName: string, issues: PropIssues, classes: ResolvedStorageClass[],
): ResolvedNodeCleanup {
  const n = props.nodeCleanup!;
  const known = new Set(classes.map((c) => c.name));
  const storageClassNames = n.storageClassNames ?? [];
  storageClassNames.forEach((c, i) => {
    // Claims are deleted only for classes opted in by name; a typo would silently opt in nothing.
    if (!known.has(c)) issues.add(`nodeCleanup.storageClassNames[${i}]`, `"${c}" is not a class of this provisioner (${[...known].join(', ')})`);
  });
  const replicas = n.replicas ?? 1;
  issues.check('nodeCleanup.replicas', integerProblem(replicas, 1));
  const priorityClassName = n.priorityClassName;
  if (priorityClassName !== undefined) issues.check('nodeCleanup.priorityClassName', objectNameProblem(priorityClassName));
  const tolerations = n.tolerations ?? [];
  checkTolerations(issues, 'nodeCleanup.tolerations', tolerations);
  if (props.createServiceAccount === false && props.serviceAccountName === undefined) {
    // Its ServiceAccount would be `default-node-cleanup`; binding claim deletion to the
    // namespace's `default` instead would hand it to every pod there.
    issues.add('serviceAccountName', 'is needed with nodeCleanup and createServiceAccount: false (node cleanup runs as <serviceAccountName>-node-cleanup)');
  }
  checkLabels(issues, 'nodeCleanup.nodeSelector', n.nodeSelector);
  return {
    storageClassNames,
    pvcDeletionDelayMs: optionalDuration(issues, 'nodeCleanup.pvcDeletionDelay', n.pvcDeletionDelay, Duration.seconds(60)),
    stalePvDiscoveryIntervalMs: optionalDuration(issues, 'nodeCleanup.stalePvDiscoveryInterval', n.stalePvDiscoveryInterval, Duration.seconds(10)),
    replicas,
    resources: n.resources ?? { requests: { cpu: quantity('10m'), memory: quantity('64Mi') }, limits: { memory: quantity('256Mi') } },
    nodeSelector: { ...n.nodeSelector, 'kubernetes.io/os': 'linux' },
    tolerations,
    affinity: n.affinity,
    priorityClassName,
    serviceAccountName: `${serviceAccountName}-node-cleanup`,
  };
}
