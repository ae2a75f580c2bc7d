import { DEFAULT_DEVICE_STORAGE_CLASS_NAME, DEVICE_SPEC_DEFAULTS } from './defaults';
import { deviceNameFilterProblem } from './device-name-filter';
import { IssueCollector } from './issues';
import { dnsSubdomainProblem } from './kube-names';
import { DEVICE_FS_TYPES, DEVICE_WIPES, DeviceSpecConfig, DeviceSpecConfigInput, ParseResult, RECLAIM_POLICIES, VOLUME_MODES } from './model';
import { readAbsolutePath, readBoolean, readEnum, readFields, readString } from './values';

/**
 * The device dialect's one resolver: applies defaults and checks every key of a
 * node's PV spec, for typed input and for a ConfigMap's plain strings alike.
 * Whether deviceDir exists is the runtime's check: this is pure.
 */

export const DEVICE_SPEC_KEYS = [
  'storageClassName', 'volumeMode', 'fsType', 'deviceDir', 'deviceNameFilter',
  // extensions
  'reclaimPolicy', 'wipeDevicesHoldingData', 'wipe',
] as const satisfies readonly (keyof DeviceSpecConfig)[];

export function resolveDeviceSpec(input: DeviceSpecConfigInput): ParseResult<DeviceSpecConfig> {
  const issues = new IssueCollector();
  const config = resolveDeviceSpecInto(input, issues);
  return issues.result(() => config!);
}

/** The resolver proper, recording into a collector; the ConfigMap parser calls it with the plain data. */
export function resolveDeviceSpecInto(input: unknown, issues: IssueCollector): DeviceSpecConfig | undefined {
  // Upstream reads ConfigMap keys by exact name.
  const given = readFields(input, DEVICE_SPEC_KEYS, '', issues, { caseInsensitive: false });
  if (!given) return undefined;
  // An empty ConfigMap value means the same as a missing key, except where upstream reads
  // "" as a value: an empty filter matches every device, and "" is no StorageClass at all.
  const f = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== '')) as typeof given;
  const before = issues.errors.length;
  const missing = (key: string, what: string) => issues.error(key, `is required (${what})`);
  const absent = (v: unknown) => v === undefined || v === null;

  let storageClassName = readString(f.storageClassName, 'storageClassName', issues);
  if (given.storageClassName === '') {
    // Upstream would create PVs of no class; nobody wants local disks bound that way (docs/migration.md).
    issues.error('storageClassName', 'is empty: PVs without a StorageClass bind at once, before their Pod is scheduled, to any claim '
      + `in the cluster that asks for no class; name a StorageClass (the device provisioner used "${DEFAULT_DEVICE_STORAGE_CLASS_NAME}")`);
  } else if (absent(f.storageClassName)) {
    // The device provisioner's README promised this fixed name, so older ConfigMaps omit the key.
    issues.warn('storageClassName', `is missing; using "${DEFAULT_DEVICE_STORAGE_CLASS_NAME}"`);
    storageClassName = DEFAULT_DEVICE_STORAGE_CLASS_NAME;
  } else if (storageClassName !== undefined) {
    const problem = dnsSubdomainProblem(storageClassName);
    if (problem) issues.error('storageClassName', `${JSON.stringify(storageClassName)} is not a valid StorageClass name: it ${problem}`);
  }

  const volumeMode = readEnum(VOLUME_MODES)(f.volumeMode, 'volumeMode', issues);
  if (absent(f.volumeMode)) missing('volumeMode', `one of ${VOLUME_MODES.join(', ')}`);

  let fsType: DeviceSpecConfig['fsType'] | undefined;
  if (volumeMode === 'Block') {
    const redundant = readString(f.fsType, 'fsType', issues);
    if (redundant) issues.warn('fsType', `${JSON.stringify(redundant)} is ignored with volumeMode Block (a raw block volume has no filesystem)`);
    fsType = '';
  } else {
    // Checked even while volumeMode is wrong, so one edit fixes both.
    fsType = readEnum(DEVICE_FS_TYPES)(f.fsType, 'fsType', issues);
    if (volumeMode === 'Filesystem' && absent(f.fsType)) missing('fsType', `one of ${DEVICE_FS_TYPES.join(', ')}, with volumeMode Filesystem`);
  }

  const deviceDir = readAbsolutePath(f.deviceDir, 'deviceDir', issues);
  if (absent(f.deviceDir)) missing('deviceDir', 'the absolute directory searched for devices, e.g. /dev/disk/by-path');

  const deviceNameFilter = readString(given.deviceNameFilter, 'deviceNameFilter', issues);
  if (absent(given.deviceNameFilter)) {
    missing('deviceNameFilter', 'a regular expression over device names; ".*" selects every device');
  } else if (deviceNameFilter !== undefined) {
    const problem = deviceNameFilterProblem(deviceNameFilter);
    if (problem) issues.error('deviceNameFilter', problem);
  }

  const reclaimPolicy = readEnum(RECLAIM_POLICIES)(f.reclaimPolicy, 'reclaimPolicy', issues) ?? DEVICE_SPEC_DEFAULTS.reclaimPolicy;
  const wipeDevicesHoldingData = readBoolean(f.wipeDevicesHoldingData, 'wipeDevicesHoldingData', issues) ?? DEVICE_SPEC_DEFAULTS.wipeDevicesHoldingData;
  const wipe = readEnum(DEVICE_WIPES)(f.wipe, 'wipe', issues) ?? DEVICE_SPEC_DEFAULTS.wipe;

  if (issues.errors.length > before || storageClassName === undefined || volumeMode === undefined || fsType === undefined
    || deviceDir === undefined || deviceNameFilter === undefined) {
    return undefined;
  }
  return { storageClassName, volumeMode, fsType, deviceDir, deviceNameFilter, reclaimPolicy, wipeDevicesHoldingData, wipe };
}
