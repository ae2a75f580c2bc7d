import * as path from 'node:path';
import { CLASS_DEFAULTS, PROVISIONER_DEFAULTS } from './defaults';
import { formatGoDuration, parseGoDuration } from './duration';
import { matchesNamePattern, validateNamePattern } from './glob';
import { describeValue, IssueCollector, joinPath } from './issues';
import { dnsSubdomainProblem, labelValueProblem, qualifiedNameProblem } from './kube-names';
import {
  ACCESS_MODES, ClassConfig, DEVICE_POOL_BACKENDS, DEVICE_POOL_FS_TYPES, ParseResult, POOL_BACKENDS, PROJECT_QUOTA_TENANTS, ProvisionerConfig,
  ProvisionerConfigInput, VOLUME_MODES,
} from './model';
import { readNodeSelectorTerm } from './node-selector';
import { readToleration } from './tolerations';
import {
  FieldsOptions, isPlainObject, readAbsolutePath, readBoolean, readDuration, readEnum, readFields,
  readInteger, readList, readNumber, readString, readStringMap,
} from './values';

/**
 * The directory dialect's one resolver: applies every default and checks every
 * value, for typed input from the construct and for decoded ConfigMap YAML alike.
 * It checks values at run time whatever their static type, so a decoded YAML tree
 * of any shape can be passed in.
 */

/** Keys of ours, which the Go provisioner ignores. */
export const EXTENSION_KEYS = [
  'cleanupTimeout', 'cleanupStallTimeout', 'maxConcurrentCleanups', 'missingVolumeGracePeriod', 'deleteMissingReleasedVolumes',
] as const satisfies readonly (keyof ProvisionerConfig)[];

export const TOP_LEVEL_KEYS = [
  'storageClassMap', 'nodeLabelsForPV', 'labelsForPV', 'useAlphaAPI', 'useJobForCleaning',
  'jobTolerations', 'minResyncPeriod', 'useNodeNameOnly', 'setPVOwnerRef',
  'removeNodeNotReadyTaint', 'provisionerNotReadyNodeTaintKey',
  ...EXTENSION_KEYS,
] as const satisfies readonly (keyof ProvisionerConfig)[];

export const CLASS_KEYS = [
  'hostDir', 'mountDir', 'blockCleanerCommand', 'volumeMode', 'accessMode', 'fsType', 'namePattern', 'selector',
] as const satisfies readonly (keyof ClassConfig)[];

/** Class keys of ours, which the Go provisioner ignores; written only when set. */
export const CLASS_EXTENSION_KEYS = ['pool', 'thinPool', 'overcommit', 'projectQuotaTenants'] as const satisfies readonly (keyof ClassConfig)[];

/** What LVM allows in a volume group's or a logical volume's name. */
const LVM_NAME = /^[A-Za-z0-9+_.][A-Za-z0-9+_.-]*$/;

/** Upstream decodes through encoding/json, which matches field names case-insensitively. */
const FIELDS: FieldsOptions = { caseInsensitive: true };

export function resolveProvisionerConfig(input: ProvisionerConfigInput): ParseResult<ProvisionerConfig> {
  const issues = new IssueCollector();
  const config = resolveProvisionerConfigInto(input, issues);
  return issues.result(() => config!);
}

/** The resolver proper, recording into a collector; the ConfigMap parser calls it with decoded YAML. */
export function resolveProvisionerConfigInto(input: unknown, issues: IssueCollector): ProvisionerConfig | undefined {
  const f = readFields(input, TOP_LEVEL_KEYS, '', issues, FIELDS);
  if (!f) return undefined;
  const d = PROVISIONER_DEFAULTS;

  const storageClassMap = resolveClasses(f.storageClassMap, issues);
  const nodeLabelsForPV = readList(readString)(f.nodeLabelsForPV, 'nodeLabelsForPV', issues);
  // No Node has a label by an invalid key, so such an entry copies nothing.
  nodeLabelsForPV?.forEach((key, i) => {
    const problem = qualifiedNameProblem(key);
    if (problem) issues.beyondUpstream(joinPath('nodeLabelsForPV', i), `${JSON.stringify(key)} ${problem}`);
  });
  // An invalid label is left off: the API server would refuse every PV carrying it.
  const labelsForPV = readStringMap((key, value, at, collector) => {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) collector.beyondUpstream(at, `the label key ${keyProblem} (the agent leaves the label off: the API server would refuse every PV with it)`);
    const valueProblem = labelValueProblem(value);
    if (valueProblem) collector.beyondUpstream(at, `${JSON.stringify(value)} ${valueProblem} (the agent leaves the label off: the API server would refuse every PV with it)`);
    return !keyProblem && !valueProblem;
  })(f.labelsForPV, 'labelsForPV', issues);
  const useAlphaAPI = readBoolean(f.useAlphaAPI, 'useAlphaAPI', issues);
  if (useAlphaAPI) {
    issues.warn('useAlphaAPI', 'the alpha node-affinity annotation was removed upstream; PVs get spec.nodeAffinity as usual');
  }
  const removeNodeNotReadyTaint = readBoolean(f.removeNodeNotReadyTaint, 'removeNodeNotReadyTaint', issues);
  const taintKey = readString(f.provisionerNotReadyNodeTaintKey, 'provisionerNotReadyNodeTaintKey', issues);
  // Either way no Node carries such a taint, so there is nothing to remove.
  if (taintKey) {
    const problem = qualifiedNameProblem(taintKey);
    if (problem) issues.beyondUpstream('provisionerNotReadyNodeTaintKey', `${JSON.stringify(taintKey)} ${problem}`);
  } else if (removeNodeNotReadyTaint) {
    issues.beyondUpstream('provisionerNotReadyNodeTaintKey', 'is required when removeNodeNotReadyTaint is true (the key of the taint to remove)');
  }

  const config: ProvisionerConfig = {
    storageClassMap: storageClassMap ?? {},
    nodeLabelsForPV: nodeLabelsForPV ?? [...d.nodeLabelsForPV],
    labelsForPV: labelsForPV ?? { ...d.labelsForPV },
    useAlphaAPI: useAlphaAPI ?? d.useAlphaAPI,
    useJobForCleaning: readBoolean(f.useJobForCleaning, 'useJobForCleaning', issues) ?? d.useJobForCleaning,
    jobTolerations: readList(readToleration(FIELDS))(f.jobTolerations, 'jobTolerations', issues) ?? [...d.jobTolerations],
    minResyncPeriod: readResyncPeriod(f.minResyncPeriod, issues) ?? d.minResyncPeriod,
    useNodeNameOnly: readBoolean(f.useNodeNameOnly, 'useNodeNameOnly', issues) ?? d.useNodeNameOnly,
    setPVOwnerRef: readBoolean(f.setPVOwnerRef, 'setPVOwnerRef', issues) ?? d.setPVOwnerRef,
    removeNodeNotReadyTaint: removeNodeNotReadyTaint ?? d.removeNodeNotReadyTaint,
    provisionerNotReadyNodeTaintKey: taintKey ?? d.provisionerNotReadyNodeTaintKey,
    cleanupTimeout: readDuration(f.cleanupTimeout, 'cleanupTimeout', issues) ?? d.cleanupTimeout,
    cleanupStallTimeout: readDuration(f.cleanupStallTimeout, 'cleanupStallTimeout', issues) ?? d.cleanupStallTimeout,
    maxConcurrentCleanups: readInteger(1)(f.maxConcurrentCleanups, 'maxConcurrentCleanups', issues) ?? d.maxConcurrentCleanups,
    missingVolumeGracePeriod: readDuration(f.missingVolumeGracePeriod, 'missingVolumeGracePeriod', issues) ?? d.missingVolumeGracePeriod,
    deleteMissingReleasedVolumes: readBoolean(f.deleteMissingReleasedVolumes, 'deleteMissingReleasedVolumes', issues) ?? d.deleteMissingReleasedVolumes,
  };
  return config;
}

/** Go's duration parser takes a sign; a negative period is accepted upstream, so it is only beyond upstream here. */
function readResyncPeriod(value: unknown, issues: IssueCollector): number | undefined {
  if (typeof value === 'string' && value.startsWith('-') && parseGoDuration(value.slice(1)) !== undefined) {
    issues.beyondUpstream('minResyncPeriod', `${JSON.stringify(value)} is negative (the agent uses the default ${formatGoDuration(PROVISIONER_DEFAULTS.minResyncPeriod)})`);
    return undefined;
  }
  return readDuration(value, 'minResyncPeriod', issues);
}

function resolveClasses(value: unknown, issues: IssueCollector): Record<string, ClassConfig> | undefined {
  const at = 'storageClassMap';
  if (value === undefined || value === null) {
    issues.warn(at, 'is missing, so no storage class is configured and nothing will be provisioned');
    return undefined;
  }
  if (!isPlainObject(value)) {
    issues.error(at, `expected a map of StorageClass name to class entry, got ${describeValue(value)}`);
    return undefined;
  }
  const classes: Record<string, ClassConfig> = {};
  const mountDirOwner = new Map<string, string>();
  for (const [name, entry] of Object.entries(value)) {
    const classAt = joinPath(at, name);
    const classIssues = issues.forClass(name);
    const nameProblem = dnsSubdomainProblem(name);
    if (nameProblem) classIssues.error(classAt, `${JSON.stringify(name)} is not a valid StorageClass name: it ${nameProblem}`);
    const resolved = resolveClass(entry, classAt, classIssues);
    if (!resolved) continue;
    // Two classes scanning one directory would each create a PV for every volume in it.
    const key = path.posix.normalize(resolved.mountDir).replace(/(.)\/$/, '$1');
    const owner = mountDirOwner.get(key);
    if (owner !== undefined) {
      classIssues.error(joinPath(classAt, 'mountDir'), `${JSON.stringify(resolved.mountDir)} is also the mountDir of class ${owner}; each class needs its own directory`);
    } else {
      mountDirOwner.set(key, name);
    }
    if (!nameProblem && owner === undefined) classes[name] = resolved;
  }
  if (Object.keys(value).length === 0) {
    issues.warn(at, 'is empty, so nothing will be provisioned');
  }
  warnAboutNestedMountDirs(classes, issues);
  return classes;
}

/**
 * A class directory inside another class's directory is an entry of the outer class:
 * if it is a mount point and the outer namePattern admits it, the outer class makes
 * one PV of the whole inner directory. Upstream allows the layout, so it is a warning.
 */
function warnAboutNestedMountDirs(classes: Record<string, ClassConfig>, issues: IssueCollector): void {
  for (const [innerName, inner] of Object.entries(classes)) {
    for (const [outerName, outer] of Object.entries(classes)) {
      const relative = path.posix.relative(path.posix.normalize(outer.mountDir), path.posix.normalize(inner.mountDir));
      if (innerName === outerName || relative === '' || relative.startsWith('..')) continue;
      const entry = relative.split('/')[0];
      if (!matchesNamePattern(outer.namePattern, entry)) continue;
      issues.warn(joinPath(joinPath('storageClassMap', innerName), 'mountDir'),
        `${JSON.stringify(inner.mountDir)} is inside the mountDir of class ${outerName}, whose namePattern admits the entry ${JSON.stringify(entry)}; `
        + `class ${outerName} may make a PV of it`);
    }
  }
}

function resolveClass(value: unknown, at: string, issues: IssueCollector): ClassConfig | undefined {
  const before = issues.errors.length;
  const f = readFields(value, [...CLASS_KEYS, ...CLASS_EXTENSION_KEYS], at, issues, FIELDS);
  if (!f) return undefined;
  const d = CLASS_DEFAULTS;
  const field = (name: string) => joinPath(at, name);

  // Upstream treats an empty directory as missing, so do we.
  const hostDir = f.hostDir === '' ? undefined : readAbsolutePath(f.hostDir, field('hostDir'), issues);
  if (f.hostDir === undefined || f.hostDir === null || f.hostDir === '') {
    issues.error(field('hostDir'), 'is required (the directory of this class on the host; it prefixes spec.local.path)');
  }
  const mountDir = f.mountDir === '' ? undefined : readAbsolutePath(f.mountDir, field('mountDir'), issues);
  if (f.mountDir === undefined || f.mountDir === null || f.mountDir === '') {
    issues.error(field('mountDir'), 'is required (the same directory as mounted in the provisioner container; it is what gets scanned)');
  }

  const blockCleanerCommand = readList(readString)(f.blockCleanerCommand, field('blockCleanerCommand'), issues);
  if (blockCleanerCommand && blockCleanerCommand.length === 0) {
    issues.error(field('blockCleanerCommand'), 'must not be empty (the command run to clean a Block volume; omit the key for ["/scripts/quick_reset.sh"])');
  } else if (blockCleanerCommand && blockCleanerCommand[0] === '') {
    issues.error(joinPath(field('blockCleanerCommand'), 0), 'must name a program');
  }

  const volumeMode = readEnum(VOLUME_MODES)(f.volumeMode, field('volumeMode'), issues) ?? d.volumeMode;
  const accessMode = readEnum(ACCESS_MODES)(f.accessMode, field('accessMode'), issues) ?? d.accessMode;
  const fsType = readString(f.fsType, field('fsType'), issues) ?? d.fsType;
  if (fsType !== '' && volumeMode === 'Block') {
    issues.error(field('fsType'), `${JSON.stringify(fsType)} is not allowed with volumeMode Block (a raw block volume has no filesystem)`);
  }

  const namePatternText = readString(f.namePattern, field('namePattern'), issues);
  const namePattern = namePatternText === undefined || namePatternText === '' ? d.namePattern : namePatternText;
  const globProblem = validateNamePattern(namePattern);
  if (globProblem) issues.error(field('namePattern'), globProblem);
  if (namePattern.split(',').some((glob) => glob !== glob.trim())) {
    issues.warn(field('namePattern'), `${JSON.stringify(namePattern)} has spaces around a glob; they are part of the glob, as upstream reads it`);
  }

  const selector = readList(readNodeSelectorTerm(FIELDS))(f.selector, field('selector'), issues) ?? [...d.selector];

  const pool = readEnum(POOL_BACKENDS)(f.pool, field('pool'), issues);
  const devicePool = pool !== undefined && DEVICE_POOL_BACKENDS.includes(pool);
  if (pool !== undefined && volumeMode !== 'Filesystem') {
    issues.error(field('volumeMode'), devicePool
      ? `must be left Filesystem: a ${pool} pool class gives each claim the volumeMode the claim asks`
      : `${JSON.stringify(volumeMode)} is not offered by a pool class: its volumes are directories limited by a quota`);
  }
  const thinPool = readString(f.thinPool, field('thinPool'), issues);
  const overcommit = readNumber(1)(f.overcommit, field('overcommit'), issues);
  const projectQuotaTenants = readEnum(PROJECT_QUOTA_TENANTS)(f.projectQuotaTenants, field('projectQuotaTenants'), issues);
  if (projectQuotaTenants !== undefined && pool !== 'xfs' && pool !== 'ext4') issues.error(field('projectQuotaTenants'), 'is for xfs and ext4 pool classes only');
  let poolFsType = fsType;
  if (pool === 'lvm-thin') {
    if (hostDir !== undefined && (!hostDir.startsWith('/dev/') || !LVM_NAME.test(hostDir.slice('/dev/'.length)))) {
      issues.error(field('hostDir'), `${JSON.stringify(hostDir)} must be /dev/<volume group> for an lvm-thin pool class: its volumes are /dev/<volume group>/pvc-<claim UID>`);
    }
    if (thinPool === undefined || !LVM_NAME.test(thinPool)) {
      issues.error(field('thinPool'), `${thinPool === undefined ? 'is required' : `${JSON.stringify(thinPool)} is not a logical volume's name`} `
        + '(the thin pool of the volume group the volumes are made in)');
    }
    poolFsType = fsType === '' ? 'ext4' : fsType;
    if (!(DEVICE_POOL_FS_TYPES as readonly string[]).includes(poolFsType)) {
      issues.error(field('fsType'), `${JSON.stringify(fsType)} is not a filesystem an lvm-thin pool class makes (${DEVICE_POOL_FS_TYPES.join(', ')})`);
    }
  } else {
    if (thinPool !== undefined) issues.error(field('thinPool'), 'is for lvm-thin pool classes only');
    if (overcommit !== undefined) issues.error(field('overcommit'), 'is for lvm-thin pool classes only');
  }

  if (issues.errors.length > before || hostDir === undefined || mountDir === undefined) return undefined;
  return {
    hostDir,
    mountDir,
    blockCleanerCommand: blockCleanerCommand ?? [...d.blockCleanerCommand],
    volumeMode,
    accessMode,
    fsType: poolFsType,
    namePattern,
    selector,
    ...(pool !== undefined ? { pool } : {}),
    ...(thinPool !== undefined ? { thinPool } : {}),
    ...(overcommit !== undefined ? { overcommit } : {}),
    ...(projectQuotaTenants !== undefined ? { projectQuotaTenants } : {}),
  };
}
