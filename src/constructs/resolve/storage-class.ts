/** The StorageClasses both dialects serve: each class's options with their defaults. */
import { k8s } from 'cdk8s-plus-28';
import { ReclaimPolicy } from '../../config';
import { qualifiedNameProblem } from '../../config/kube-names';
import { PropIssues } from '../prop-issues';
import { StorageClassOptions } from '../props';
import { NO_PROVISIONER } from './constants';

export interface ResolvedStorageClass {
  readonly name: string;
  readonly create: boolean;
  readonly reclaimPolicy: ReclaimPolicy;
  readonly isDefaultClass: boolean;
  readonly provisioner: string;
  readonly allowedTopologies: k8s.TopologySelectorTerm[];
  readonly mountOptions: string[];
  /** A pool class's claims may grow: the agent raises the volume's limit. */
  readonly allowVolumeExpansion: boolean;
}

export function resolveStorageClass(
  name: string, o: StorageClassOptions | undefined, reclaimPolicy: ReclaimPolicy, at: string, issues: PropIssues, pool = false,
): ResolvedStorageClass {
  const provisioner = o?.provisioner ?? NO_PROVISIONER;
  issues.check(`${at}.provisioner`, qualifiedNameProblem(provisioner) && `"${provisioner}" ${qualifiedNameProblem(provisioner)}`);
  return {
    name,
    create: o?.create ?? true,
    reclaimPolicy,
    isDefaultClass: o?.isDefaultClass ?? false,
    provisioner,
    allowedTopologies: o?.allowedTopologies ?? [],
    mountOptions: o?.mountOptions ?? [],
    allowVolumeExpansion: pool,
  };
}

export function checkDefaultStorageClass(classes: ResolvedStorageClass[], issues: PropIssues): void {
  if (classes.filter((c) => c.isDefaultClass).length > 1) {
    issues.add('storageClasses', `more than one StorageClass has isDefaultClass: ${classes.filter((c) => c.isDefaultClass).map((c) => c.name).join(', ')}`);
  }
}
