/** The directory dialect's part: its ConfigMap, its hostDir mounts, its StorageClasses. */
import { NodeSelectorTerm, POOL_PROVISIONER, ProvisionerConfig, ProvisionerConfigInput, resolveProvisionerConfig, serializeProvisionerConfig, Toleration, ConfigMapData } from '../../config';
import { absolutePathProblem, integerProblem, pathsOverlap, PropIssues } from '../prop-issues';
import { LocalStorageClassProps, LocalVolumeProvisionerProps, PoolBackend } from '../props';
import { CONFIG_MOUNT_PATH, DEFAULT_TAINT_KEY, SCRIPTS_PATH } from './constants';
import { AgentTolerations, ResolvedHostMount } from './pod';
import { ResolvedStorageClass, resolveStorageClass } from './storage-class';
import { hashData, optionalDurationInput, reportModelIssues, volumeName } from './values';

export interface ResolvedDirectoryDialect {
  readonly config: ProvisionerConfig;
  readonly configMapName: string;
  readonly configData: ConfigMapData;
  /** sha256 of the ConfigMap data: a pod annotation, so a config change rolls the pods. */
  readonly configHash: string;
  /** One hostDir mount per class. */
  readonly mounts: ResolvedHostMount[];
  /** StorageClass name -> fewest volumes per node (alerting). */
  readonly expectedVolumesPerNode: Record<string, number>;
}

/**
 * The directory dialect (`storageClasses`): its ConfigMap from the configuration model
 * (the model's issues reported under the props' names), a hostDir mount per class, and
 * the classes' StorageClasses. None when no class is given.
 */
export function resolveDirectoryDialect(
  props: LocalVolumeProvisionerProps, name: string, tolerations: AgentTolerations, issues: PropIssues,
): { readonly dialect?: ResolvedDirectoryDialect; readonly storageClasses: ResolvedStorageClass[] } {
  const classes = props.storageClasses ?? [];
  const storageClasses: ResolvedStorageClass[] = [];
  if (classes.length === 0) return { storageClasses };

  const seen = new Map<string, number>();
  const mounts: ResolvedHostMount[] = [];
  const expectedVolumesPerNode: Record<string, number> = {};
  classes.forEach((c, i) => {
    const at = `storageClasses[${i}]`;
    const first = seen.get(c.name);
    if (first !== undefined) issues.add(`${at}.name`, `"${c.name}" is also the name of storageClasses[${first}]`);
    else seen.set(c.name, i);
    const mountDir = c.mountDir ?? c.hostDir;
    const hostOk = issues.check(`${at}.hostDir`, absolutePathProblem(c.hostDir));
    // A mountDir left to default is the hostDir: its problems are the hostDir's, reported once.
    const mountOk = c.mountDir === undefined ? hostOk : issues.check(`${at}.mountDir`, absolutePathProblem(mountDir));
    if (mountOk) {
      for (const reserved of [CONFIG_MOUNT_PATH, SCRIPTS_PATH]) {
        if (pathsOverlap(mountDir, reserved)) issues.add(`${at}.mountDir`, `"${mountDir}" overlaps ${reserved}, which the agent needs`);
      }
    }
    if (hostOk && mountOk) {
      mounts.forEach((other, j) => {
        if (pathsOverlap(other.mountDir, mountDir)) {
          issues.add(`${at}.mountDir`, `"${mountDir}" overlaps the mountDir "${other.mountDir}" of storageClasses[${j}]; each class needs a directory of its own`);
        } else if (pathsOverlap(other.hostDir, c.hostDir)) {
          issues.add(`${at}.hostDir`, `"${c.hostDir}" overlaps the hostDir "${other.hostDir}" of storageClasses[${j}]; each class needs a directory of its own`);
        }
      });
    }
    // An lvm-thin class's volumes are devices the agent reaches through the host's /dev: nothing to mount.
    if (c.pool !== PoolBackend.LVM_THIN) {
      mounts.push({
        volume: volumeName('class', c.name), hostDir: c.hostDir, mountDir, volumeProp: `${at}.name`, pathProp: `${at}.${c.mountDir === undefined ? 'hostDir' : 'mountDir'}`,
      });
    }
    if ((c.pool === PoolBackend.XFS || c.pool === PoolBackend.EXT4) && c.projectQuotaTenants === undefined) {
      issues.add(`${at}.projectQuotaTenants`, `is required for a ${c.pool} pool class: say whose pods use it (ProjectQuotaTenants.USER_NAMESPACED, or `
        + 'ANY_LIMITS_RESTORED_BY_SCAN: a pod of the host\'s user namespace can move its files out of its volume\'s limit until the agent\'s walk '
        + 'sets them back; docs/operations.md, "XFS and ext4")');
    }
    const expected = c.expectedVolumesPerNode ?? 0;
    issues.check(`${at}.expectedVolumesPerNode`, integerProblem(expected, 0));
    if (expected > 0) expectedVolumesPerNode[c.name] = expected;
    if (c.pool !== undefined && c.storageClass?.provisioner !== undefined && c.storageClass.provisioner !== POOL_PROVISIONER) {
      issues.add(`${at}.storageClass.provisioner`, `"${c.storageClass.provisioner}" cannot serve a pool class; its claims are provisioned by ${POOL_PROVISIONER}`);
    }
    const storageClass = c.pool !== undefined ? { ...c.storageClass, provisioner: POOL_PROVISIONER } : c.storageClass;
    storageClasses.push(resolveStorageClass(c.name, storageClass, c.storageClass?.reclaimPolicy ?? 'Delete', `${at}.storageClass`, issues, c.pool !== undefined));
  });

  // The props use the Kubernetes types, whose operators are free strings; the model
  // checks every value at run time whatever its static type, so they are passed as its own.
  const input: ProvisionerConfigInput = {
    storageClassMap: Object.fromEntries(classes.map((c) => [c.name, {
      hostDir: c.hostDir,
      mountDir: c.mountDir ?? c.hostDir,
      blockCleanerCommand: c.blockCleanerCommand,
      volumeMode: c.volumeMode,
      accessMode: c.accessMode,
      fsType: c.fsType,
      namePattern: c.namePattern,
      selector: c.selector as NodeSelectorTerm[] | undefined,
      pool: c.pool,
      thinPool: c.thinPool,
      overcommit: c.overcommit,
      projectQuotaTenants: c.projectQuotaTenants,
    }])),
    nodeLabelsForPV: props.nodeLabelsForPV,
    labelsForPV: props.labelsForPV,
    useJobForCleaning: props.useJobForCleaning,
    // A cleanup Job runs on the volume's node: as the Helm chart, it tolerates what the agent
    // tolerates there (not the startup taint, which is gone once volumes are in use).
    jobTolerations: (props.jobTolerations
      ?? (props.useJobForCleaning && tolerations.valid ? tolerations.given : undefined)) as Toleration[] | undefined,
    minResyncPeriod: optionalDurationInput(issues, 'minResyncPeriod', props.minResyncPeriod),
    useNodeNameOnly: props.useNodeNameOnly,
    setPVOwnerRef: props.setPVOwnerRef,
    removeNodeNotReadyTaint: props.removeNodeNotReadyTaint,
    provisionerNotReadyNodeTaintKey: props.provisionerNotReadyNodeTaintKey ?? DEFAULT_TAINT_KEY,
    cleanupTimeout: optionalDurationInput(issues, 'cleanupTimeout', props.cleanupTimeout, 0),
    cleanupStallTimeout: optionalDurationInput(issues, 'cleanupStallTimeout', props.cleanupStallTimeout, 0),
    maxConcurrentCleanups: props.maxConcurrentCleanups,
    missingVolumeGracePeriod: optionalDurationInput(issues, 'missingVolumeGracePeriod', props.missingVolumeGracePeriod, 0),
    deleteMissingReleasedVolumes: props.deleteMissingReleasedVolumes,
  };
  const config = reportModelIssues(resolveProvisionerConfig(input), issues, (path) => directoryPropPath(path, classes));
  if (!config) return { storageClasses };
  const configData = serializeProvisionerConfig(config);
  return {
    dialect: { config, configMapName: `${name}-config`, configData, configHash: hashData(configData), mounts, expectedVolumesPerNode },
    storageClasses,
  };
}

/** `storageClassMap.fast-disks.namePattern` -> `storageClasses[0].namePattern`. */
function directoryPropPath(path: string, classes: LocalStorageClassProps[]): string {
  const prefix = 'storageClassMap.';
  if (!path.startsWith(prefix)) return path;
  const rest = path.slice(prefix.length);
  // Longest name first: a class name may contain dots.
  const match = classes
    .map((c, i) => ({ n: c.name, i }))
    .filter(({ n }) => rest === n || rest.startsWith(`${n}.`) || rest.startsWith(`${n}[`))
    .sort((a, b) => b.n.length - a.n.length)[0];
  if (!match) return path;
  // An issue on the map key itself is about the class name; one on a mountDir the props
  // leave to default is about the hostDir it was copied from.
  const field = rest.slice(match.n.length);
  if (field === '') return `storageClasses[${match.i}].name`;
  if (field === '.mountDir' && classes[match.i].mountDir === undefined) return `storageClasses[${match.i}].hostDir`;
  return `storageClasses[${match.i}]${field}`;
}
