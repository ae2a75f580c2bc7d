import { IssueCollector } from './issues';
import { ConfigMapData, DeviceSpecConfig, ParseResult } from './model';
import { resolveDeviceSpecInto } from './resolve-device';

/**
 * The device provisioner's PV spec ConfigMap: plain string values, never YAML,
 * so a filter such as `sd[ab]` or `.*` stays exactly the text written.
 */
export function parseDeviceSpec(data: ConfigMapData): ParseResult<DeviceSpecConfig> {
  const issues = new IssueCollector();
  const config = resolveDeviceSpecInto(data, issues);
  return issues.result(() => config!);
}

/** ConfigMap data for a resolved spec; fsType only when there is one, as upstream's Block examples omit it. */
export function serializeDeviceSpec(c: DeviceSpecConfig): ConfigMapData {
  return {
    storageClassName: c.storageClassName,
    volumeMode: c.volumeMode,
    ...(c.fsType !== '' && { fsType: c.fsType }),
    deviceDir: c.deviceDir,
    deviceNameFilter: c.deviceNameFilter,
    reclaimPolicy: c.reclaimPolicy,
    wipeDevicesHoldingData: String(c.wipeDevicesHoldingData),
    wipe: c.wipe,
  };
}
