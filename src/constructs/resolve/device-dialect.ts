/** The device dialect's part: its PV spec ConfigMaps, its deviceDir mounts, its StorageClasses. */
import { Duration } from 'cdk8s';
import { ConfigMapData, DeviceSpecConfig, ReclaimPolicy, resolveDeviceSpec, serializeDeviceSpec } from '../../config';
import { absolutePathProblem, objectNameProblem, pathsOverlap, PropIssues } from '../prop-issues';
import { LocalVolumeProvisionerProps } from '../props';
import { ResolvedHostMount } from './pod';
import { ResolvedStorageClass, resolveStorageClass } from './storage-class';
import { optionalDuration, reportModelIssues, volumeName } from './values';

export interface ResolvedDeviceSpec {
  readonly name: string;
  readonly config: DeviceSpecConfig;
  readonly data: ConfigMapData;
}

export interface ResolvedDeviceDialect {
  readonly specs: ResolvedDeviceSpec[];
  readonly defaultSpec?: string;
  readonly pollingIntervalMs: number;
  /** deviceDirs outside the /dev mount, mounted at the same path (PV paths are container paths). */
  readonly mounts: ResolvedHostMount[];
}

/**
 * The device dialect (`devices`): each PV spec ConfigMap from the configuration model, the
 * deviceDirs to mount, and the StorageClasses the specs name (one reclaim policy each).
 * None when `devices` is not given.
 */
export function resolveDeviceDialect(
  props: LocalVolumeProvisionerProps, issues: PropIssues,
): { readonly dialect?: ResolvedDeviceDialect; readonly storageClasses: ResolvedStorageClass[] } {
  const d = props.devices;
  const storageClasses: ResolvedStorageClass[] = [];
  if (!d) return { storageClasses };
  if (d.specs.length === 0) issues.add('devices.specs', 'must name at least one PV spec ConfigMap');

  const specs: ResolvedDeviceSpec[] = [];
  const seen = new Map<string, number>();
  const policyOfClass = new Map<string, { policy: ReclaimPolicy; at: string }>();
  const directoryClasses = (props.storageClasses ?? []).map((c) => c.name);
  d.specs.forEach((s, i) => {
    const at = `devices.specs[${i}]`;
    const first = seen.get(s.name);
    if (first !== undefined) issues.add(`${at}.name`, `"${s.name}" is also the name of devices.specs[${first}]`);
    else seen.set(s.name, i);
    issues.check(`${at}.name`, objectNameProblem(s.name));
    issues.check(`${at}.deviceDir`, absolutePathProblem(s.deviceDir));
    if (s.volumeMode === 'Block' && s.fsType) issues.add(`${at}.fsType`, `"${s.fsType}" is not allowed with volumeMode Block`);
    const config = reportModelIssues(resolveDeviceSpec({
      storageClassName: s.storageClassName,
      volumeMode: s.volumeMode,
      fsType: s.fsType,
      deviceDir: s.deviceDir,
      deviceNameFilter: s.deviceNameFilter,
      reclaimPolicy: s.reclaimPolicy,
      wipeDevicesHoldingData: s.wipeDevicesHoldingData,
      wipe: s.wipe,
    }), issues, (path) => `${at}.${path}`);
    if (!config) return;
    specs.push({ name: s.name, config, data: serializeDeviceSpec(config) });
    const directoryClass = directoryClasses.indexOf(config.storageClassName);
    if (directoryClass >= 0) {
      issues.add(`${at}.storageClassName`, `"${config.storageClassName}" is also the name of storageClasses[${directoryClass}]; a StorageClass serves one dialect`);
    }
    const earlier = policyOfClass.get(config.storageClassName);
    if (earlier && earlier.policy !== config.reclaimPolicy) {
      issues.add(`${at}.reclaimPolicy`, `"${config.reclaimPolicy}" differs from ${earlier.at}.reclaimPolicy "${earlier.policy}" for the same StorageClass "${config.storageClassName}"`);
    } else if (!earlier) {
      policyOfClass.set(config.storageClassName, { policy: config.reclaimPolicy, at });
    }
  });
  if (d.defaultSpec !== undefined && !seen.has(d.defaultSpec)) {
    issues.add('devices.defaultSpec', `"${d.defaultSpec}" is not the name of any of devices.specs`);
  }

  const options = new Map<string, number>();
  (d.storageClasses ?? []).forEach((sc, i) => {
    if (!policyOfClass.has(sc.name)) {
      issues.add(`devices.storageClasses[${i}].name`, `"${sc.name}" is not the storageClassName of any of devices.specs`);
    }
    if (options.has(sc.name)) issues.add(`devices.storageClasses[${i}].name`, `"${sc.name}" is given twice`);
    options.set(sc.name, i);
  });
  for (const [className, { policy }] of policyOfClass) {
    const i = options.get(className);
    const at = i === undefined ? 'devices.specs' : `devices.storageClasses[${i}]`;
    storageClasses.push(resolveStorageClass(className, i === undefined ? undefined : d.storageClasses![i], policy, at, issues));
  }

  const firstSpecOfDir = new Map<string, number>();
  d.specs.forEach((s, i) => {
    if (!firstSpecOfDir.has(s.deviceDir)) firstSpecOfDir.set(s.deviceDir, i);
  });
  const mounts = [...new Set(specs.map((s) => s.config.deviceDir))]
    .filter((dir) => !(props.mountDevVolume ?? true) || !pathsOverlap(dir, '/dev'))
    .sort()
    .map((dir) => {
      const prop = `devices.specs[${firstSpecOfDir.get(dir)}].deviceDir`;
      return { volume: volumeName('devices', dir), hostDir: dir, mountDir: dir, volumeProp: prop, pathProp: prop };
    });
  return {
    dialect: {
      specs,
      defaultSpec: d.defaultSpec,
      pollingIntervalMs: optionalDuration(issues, 'devices.pollingInterval', d.pollingInterval, Duration.minutes(5)),
      mounts,
    },
    storageClasses,
  };
}
