/**
 * One pass of the device dialect (the device-selecting provisioner's job): find
 * this node's PV spec ConfigMap, recycle Released devices, then offer every new
 * device the filter matches. Unlike upstream, a device carrying a partition
 * table or a filesystem signature is left alone and reported (unless the spec
 * says `wipeDevicesHoldingData`), a config change never blocks the node, and
 * every problem is an Event and a metric, not only a log line.
 */
import * as fs from 'node:fs';
import type { V1ConfigMap, V1Node, V1ObjectReference, V1PersistentVolume } from '@kubernetes/client-node';
import { configMapData, DeviceSpecConfig, formatIssue, parseDeviceSpec } from '../../config';
import { ConcurrencyLimiter, decideRelease, NodeIdentity, resolveVolumePath, wipeDevice } from '../cleanup';
import { deviceCandidates, discoverDevices, DiscoveredDevice, planProvisioning } from '../discovery';
import { KubeApi } from '../kube/api-client';
import { EventRecorder, nodeReference, persistentVolumeReference } from '../kube/event-recorder';
import { NodePvCache } from '../kube/pv-cache';
import { ensurePersistentVolume } from '../kube/pv-writes';
import { EventReasons, Logger, ProvisionerMetrics, volumeLogger } from '../observability';
import { deviceNumberOf, describeProbe, formatDeviceNumber } from '../volume';
import { Deleter } from './deleter';
import { capacityByMode, VolumeWithoutPV, volumeStateEntries } from './volume-states';
import { assignDevicePVNames, buildDevicePV, DeviceNaming, deviceSpecDifferences, NodeInfo, nodeInfoOf } from '../pv';
import { DEVICE_DIALECT_NODE_LABELS, NODE_LABEL, PROVISIONED_BY_ANNOTATION } from '../well-known';

/** The Node annotation naming a node's PV spec ConfigMap (the device-selecting provisioner's). */
export const PV_SPEC_CONFIGMAP_ANNOTATION = 'local-pv-provisioner.cybozu.io/pv-spec-configmap';

/** Which PV spec ConfigMap applies to a node: its annotation, else the default flag, else none. */
export function pvSpecConfigMapName(node: V1Node, defaultName: string): { name: string; source: 'annotation' | 'default' } | undefined {
  const annotated = node.metadata?.annotations?.[PV_SPEC_CONFIGMAP_ANNOTATION];
  if (annotated) return { name: annotated, source: 'annotation' };
  return defaultName ? { name: defaultName, source: 'default' } : undefined;
}

export interface DeviceControllerDeps {
  readonly api: KubeApi;
  readonly cache: NodePvCache;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly deleter: Deleter;
  /** Shared with the deleter's cleanups, so wipes of new devices count against the same limit. */
  readonly limiter: ConcurrencyLimiter;
  /** A wipe running longer is aborted. 0 = none. */
  readonly wipeTimeoutMs: number;
  readonly namespace: string;
  readonly defaultPvSpecConfigMap: string;
  /** The spec ConfigMaps of the namespace, kept current by a watch. */
  readonly configMap: (name: string) => V1ConfigMap | undefined;
}

export type DevicePassResult =
  | { readonly state: 'no-spec'; readonly message: string }
  | { readonly state: 'provisioned'; readonly spec: DeviceSpecConfig; readonly created: readonly string[] };

/** How often a lasting condition's Warning is recorded again. */
const REPEAT_WARNING_MS = 30 * 60_000;

export class DeviceController {
  private lastSpecChange = '';
  /** The last pass's spec or problem, so the config reload metrics count changes, not passes. */
  private lastResolution?: string;

  /** Warnings recorded, by object, reason and message, to when; kept while the pass after still has them. */
  private readonly warned = new Map<string, number>();
  private warnedThisPass = new Set<string>();

  constructor(private readonly deps: DeviceControllerDeps) {}

  async pass(node: V1Node): Promise<DevicePassResult> {
    this.warnedThisPass = new Set();
    try {
      return await this.run(node);
    } finally {
      // A condition that went away is recorded again if it comes back.
      for (const key of this.warned.keys()) if (!this.warnedThisPass.has(key)) this.warned.delete(key);
    }
  }

  /**
   * Records a Warning when its condition is new, and again every half hour while it lasts (Events
   * expire after an hour), not on every pass: repeats would use up the per-object Event limit
   * (25, then one per 5 minutes) and the Node's other Events would be dropped.
   */
  private warn(object: V1ObjectReference, reason: string, message: string): void {
    const key = [object.kind, object.name, reason, message].join('\u0000');
    this.warnedThisPass.add(key);
    const last = this.warned.get(key);
    if (last !== undefined && Date.now() - last < REPEAT_WARNING_MS) return;
    this.warned.set(key, Date.now());
    this.deps.events.warning(object, reason, message);
  }

  private async run(node: V1Node): Promise<DevicePassResult> {
    const info = nodeInfoOf(node);
    const resolved = this.resolveSpec(node);
    this.recordResolution(resolved);
    if ('message' in resolved) {
      this.warn(nodeReference(node), EventReasons.NoPVSpecConfigMap.reason, resolved.message);
      this.deps.logger.warn({ node: info.name }, resolved.message);
      this.deps.metrics.setDevices(info.name, { available: 0, error: 0 });
      return { state: 'no-spec', message: resolved.message };
    }
    const spec = resolved.spec;
    const me: NodeIdentity = { nodeName: info.name, provisionerName: devicesProvisionerName(info.name) };
    const pvs = this.deps.cache.list();
    this.deps.deleter.run({ me, configured: { dialect: 'device', spec }, pvs });
    this.reportRefusedReleases(pvs, me, spec);
    this.reportSpecChange(node, spec, pvs);

    const { devices, errors, missing } = await this.discover(node, spec, pvs);
    const naming = this.name(node, spec, pvs, devices, errors);
    const plan = planProvisioning(deviceCandidates(naming.named, spec.volumeMode), pvs, {
      pvNames: new Set(naming.named.map((n) => n.name).filter((n) => this.deps.deleter.isCleaning(n))),
      paths: new Set(),
    });
    for (const s of plan.skip) {
      if (s.warning) this.warn(nodeReference(node), EventReasons.DuplicatePath.reason, s.warning);
    }
    const created: string[] = [];
    const heldData: VolumeWithoutPV[] = [];
    await Promise.all(plan.create.map(async (candidate) => {
      const outcome = await this.offer(candidate.device, candidate.name, spec, info, node, me);
      if (outcome === 'created') created.push(candidate.name);
      else if (outcome === 'held-data') heldData.push({ path: candidate.device.path, storageClass: spec.storageClassName, state: 'held-data' });
      else if (outcome === 'error') errors.push({ path: candidate.device.path, storageClass: spec.storageClassName, state: 'error' });
    }));
    this.updateMetrics(info.name, errors, heldData, created, missing);
    return { state: 'provisioned', spec, created };
  }

  /**
   * The devices that may be offered this pass, and what cannot: error devices, and PVs whose
   * device is gone. Each problem is a Warning.
   */
  private async discover(node: V1Node, spec: DeviceSpecConfig, pvs: readonly V1PersistentVolume[]): Promise<{
    devices: DiscoveredDevice[];
    errors: VolumeWithoutPV[];
    missing: Set<string>;
  }> {
    const withPV = new Set(pvs.map((pv) => pv.spec?.local?.path));
    // A disk with a PV may show up under another path (a new udev link, a deviceDir moved from
    // by-path to by-id): it must be neither wiped nor offered twice, so disks are matched by number.
    const { disks: disksWithPV, missing } = await inspectPVDevices(pvs);
    for (const pv of pvs.filter((p) => missing.has(p.metadata?.name ?? ''))) {
      this.warn(persistentVolumeReference(pv), EventReasons.VolumeMissing.reason,
        `device ${pv.spec?.local?.path} of PV ${pv.metadata?.name} is gone from this node; the PV is kept and nothing is wiped`);
    }
    const pvOfDisk = (d: Pick<DiscoveredDevice, 'deviceNumber'>) => disksWithPV.get(formatDeviceNumber(d.deviceNumber));
    const discovery = await discoverDevices(spec, { shouldProbe: (d) => !withPV.has(d.path) && pvOfDisk(d) === undefined });
    const devices: DiscoveredDevice[] = [];
    for (const d of discovery.devices) {
      const other = withPV.has(d.path) ? undefined : pvOfDisk(d);
      if (other === undefined) {devices.push(d);} else {
        this.warn(nodeReference(node), EventReasons.DuplicatePath.reason,
          `device ${d.path} is the same disk (${d.devicePath}) as PV ${other}; it is neither wiped nor offered again`);
      }
    }
    // A path with a PV is available, whatever discovery made of it as a second path: one gauge per device.
    const errorDevices = discovery.errorDevices.filter((e) => !withPV.has(e.path));
    // A filter that matches nothing leaves the node without devices as surely as a broken spec: say so too.
    const problem = discovery.problem ?? (discovery.devices.length === 0 && discovery.errorDevices.length === 0
      ? `deviceNameFilter ${JSON.stringify(spec.deviceNameFilter)} matches no device in deviceDir ${JSON.stringify(spec.deviceDir)}; no device is provisioned on Node "${node.metadata?.name}"`
      : undefined);
    if (problem) {
      this.warn(nodeReference(node), EventReasons.DeviceError.reason, problem);
      this.deps.logger.warn({ deviceDir: spec.deviceDir }, problem);
    }
    for (const e of errorDevices) {
      this.warn(nodeReference(node), EventReasons.DeviceError.reason, e.reason);
      volumeLogger(this.deps.logger, { path: e.path, storageClass: spec.storageClassName }).warn(e.reason);
    }
    const errors = errorDevices.map((e): VolumeWithoutPV => ({ path: e.path, storageClass: spec.storageClassName, state: 'error' }));
    return { devices, errors, missing };
  }

  /** Names the devices; those whose names collide are reported and added to `errors`. */
  private name(
    node: V1Node,
    spec: DeviceSpecConfig,
    pvs: readonly V1PersistentVolume[],
    devices: readonly DiscoveredDevice[],
    errors: VolumeWithoutPV[],
  ): DeviceNaming<DiscoveredDevice> {
    const naming = assignDevicePVNames(node.metadata?.name ?? '', devices);
    for (const c of naming.collisions) {
      // A device whose PV already has the name keeps it; only the newcomers are refused.
      const owner = c.paths.find((p) => pvs.some((pv) => pv.metadata?.name === c.name && pv.spec?.local?.path === p));
      const refused = c.paths.filter((p) => p !== owner);
      const message = owner
        ? `device(s) ${refused.join(', ')} would get PV name "${c.name}", which ${owner} already has; not provisioned`
        : `devices ${c.paths.join(', ')} would all get PV name "${c.name}"; none of them is provisioned`;
      this.warn(nodeReference(node), EventReasons.NameCollision.reason, message);
      errors.push(...refused.map((path): VolumeWithoutPV => ({ path, storageClass: spec.storageClassName, state: 'error' })));
    }
    return naming;
  }

  private resolveSpec(node: V1Node): { spec: DeviceSpecConfig } | { message: string } {
    const nodeName = node.metadata?.name ?? '';
    const which = pvSpecConfigMapName(node, this.deps.defaultPvSpecConfigMap);
    if (!which) {
      return { message: `Node "${nodeName}" has no annotation ${PV_SPEC_CONFIGMAP_ANNOTATION} and no --default-pv-spec-configmap is set; no device is provisioned on it` };
    }
    const where = `ConfigMap ${this.deps.namespace}/${which.name} (from the ${which.source === 'annotation' ? `Node annotation ${PV_SPEC_CONFIGMAP_ANNOTATION}` : '--default-pv-spec-configmap flag'})`;
    const cm = this.deps.configMap(which.name);
    if (!cm) return { message: `${where} does not exist; no device is provisioned on Node "${nodeName}"` };
    const parsed = parseDeviceSpec(configMapData(cm));
    if (!parsed.ok) {
      return { message: `${where} is invalid; no device is provisioned on Node "${nodeName}":\n  ${parsed.errors.map(formatIssue).join('\n  ')}` };
    }
    return { spec: parsed.config };
  }

  /** A node without a usable spec shows in the metrics too (config_last_reload_successful 0), not only in Events. */
  private recordResolution(resolved: { spec: DeviceSpecConfig } | { message: string }): void {
    const key = JSON.stringify(resolved);
    if (key === this.lastResolution) return;
    this.lastResolution = key;
    this.deps.metrics.recordConfigReload(!('message' in resolved));
  }

  /**
   * A Released device PV that is ours but may not be wiped (its path left outside deviceDir by a
   * spec change) would wait silently forever: say so on the PV. Upstream would have wiped it.
   */
  private reportRefusedReleases(pvs: readonly V1PersistentVolume[], me: NodeIdentity, spec: DeviceSpecConfig): void {
    for (const pv of pvs) {
      const by = pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION];
      const upstreams = by === undefined && DEVICE_DIALECT_NODE_LABELS.some((k) => pv.metadata?.labels?.[k] === me.nodeName);
      if (by !== me.provisionerName && !upstreams) continue;
      const decision = decideRelease(pv, me, { dialect: 'device', spec });
      if (decision.action === 'not-ours') {
        this.warn(persistentVolumeReference(pv), EventReasons.CleanupRefused.reason,
          `${decision.reason}; nothing is wiped and the PV stays Released (deviceDir is ${JSON.stringify(spec.deviceDir)})`);
      }
    }
  }

  /** Upstream blocks a node silently while old PVs carry another spec; we go on and say so, once per change. */
  private reportSpecChange(node: V1Node, spec: DeviceSpecConfig, pvs: readonly V1PersistentVolume[]): void {
    const differing = pvs.filter((pv) => deviceSpecDifferences(pv, spec).length > 0);
    const key = differing.map((pv) => pv.metadata?.name).sort().join(',');
    if (differing.length === 0 || key === this.lastSpecChange) return;
    this.lastSpecChange = key;
    const example = deviceSpecDifferences(differing[0], spec).join(', ');
    this.deps.events.normal(nodeReference(node), EventReasons.PVSpecChanged.reason,
      `${differing.length} existing PV(s) keep the spec they were created with (e.g. ${differing[0].metadata?.name}: ${example}); new devices get the current spec`);
  }

  /** Wipes a new device (unless it holds data) and creates its PV. */
  private async offer(
    device: DiscoveredDevice,
    pvName: string,
    spec: DeviceSpecConfig,
    info: NodeInfo,
    node: V1Node,
    me: NodeIdentity,
  ): Promise<'created' | 'held-data' | 'error' | 'exists'> {
    const log = volumeLogger(this.deps.logger, { pv: pvName, path: device.path, storageClass: spec.storageClassName });
    const probe = device.signatures;
    if (probe?.state !== 'blank' && !spec.wipeDevicesHoldingData) {
      const message = `device ${device.path} ${probe ? describeProbe(probe) : 'was not probed'}; it is neither wiped nor provisioned (set wipeDevicesHoldingData: "true" in the PV spec ConfigMap to wipe it)`;
      this.warn(nodeReference(node), EventReasons.DeviceHoldsData.reason, message);
      log.warn(message);
      return 'held-data';
    }
    // The cache lists only PVs labelled for this node, and may lag: ask the server before destroying anything.
    let existing: V1PersistentVolume | undefined;
    try {
      existing = await this.deps.api.getPersistentVolume(pvName);
    } catch (err) {
      log.error(`cannot check whether PV ${pvName} exists: ${(err as Error).message}`);
      return 'error';
    }
    if (existing) {
      if (existing.metadata?.labels?.[NODE_LABEL] !== info.name) {
        this.warn(nodeReference(node), EventReasons.DeviceError.reason,
          `PV ${pvName} already exists but is not labelled ${NODE_LABEL}=${info.name}; device ${device.path} is neither wiped nor provisioned`);
        return 'error';
      }
      return 'exists';
    }
    const located = await resolveVolumePath(device.path, spec.deviceDir);
    if (!located.ok) {
      this.warn(nodeReference(node), EventReasons.CleanupRefused.reason, located.reason);
      return 'error';
    }
    const signal = this.deps.wipeTimeoutMs > 0 ? AbortSignal.timeout(this.deps.wipeTimeoutMs) : undefined;
    const wiped = await this.deps.limiter.run(() => wipeDevice(located.path, {
      signal,
      onWritten: (bytes) => this.deps.metrics.addCleanupBytes(spec.volumeMode, 'process', bytes),
    }));
    if (!wiped.ok) {
      const message = `cannot wipe device ${device.path}: ${wiped.reason}`;
      this.warn(nodeReference(node), EventReasons.DeviceError.reason, message);
      log.error(message);
      return 'error';
    }
    try {
      const pv = buildDevicePV({ name: pvName, device, spec, node: info, provisionerName: me.provisionerName });
      const result = await ensurePersistentVolume(this.deps.api, pv);
      if (!result.created) return 'exists';
      this.deps.events.normal(persistentVolumeReference(result.pv), EventReasons.ProvisioningSucceeded.reason,
        `wiped ${device.path} and created PV ${pvName} (${pv.spec?.capacity?.storage}, ${spec.volumeMode})`);
      log.info({ capacity: pv.spec?.capacity?.storage }, 'device wiped; PV created');
      return 'created';
    } catch (err) {
      const message = `cannot create PV ${pvName} for ${device.path}: ${(err as Error).message}`;
      this.warn(nodeReference(node), EventReasons.ProvisioningFailed.reason, message);
      log.error(message);
      return 'error';
    }
  }

  private updateMetrics(
    nodeName: string,
    errors: readonly VolumeWithoutPV[],
    heldData: readonly VolumeWithoutPV[],
    created: readonly string[],
    missing: ReadonlySet<string>,
  ): void {
    const pvs = this.deps.cache.list();
    this.deps.metrics.setCapacity(capacityByMode(pvs));
    // A device is counted once: offered (has a PV of this node and is there) or in error (including
    // a PV's device that is gone). PVs created in this pass count although the cache's watch may
    // not have delivered them yet.
    const names = [...pvs.filter((pv) => !pv.metadata?.deletionTimestamp).map((pv) => pv.metadata?.name ?? ''), ...created];
    const offered = new Set(names.filter((n) => !missing.has(n)));
    const gone = new Set(names.filter((n) => missing.has(n)));
    this.deps.metrics.setDevices(nodeName, { available: offered.size, error: errors.length + gone.size });
    this.deps.metrics.setVolumeStates(volumeStateEntries(pvs, (pv) => ({
      missing: missing.has(pv.metadata?.name ?? ''),
      cleaning: this.deps.deleter.isCleaning(pv.metadata?.name ?? ''),
    }), [...errors, ...heldData]));
  }
}

/**
 * The disks (`major:minor`) behind these PVs' paths on this node, to the PV's name, and the PVs
 * whose path is gone or is no block device any more (a pulled disk loses its udev link).
 */
async function inspectPVDevices(pvs: readonly V1PersistentVolume[]): Promise<{ disks: Map<string, string>; missing: Set<string> }> {
  const disks = new Map<string, string>();
  const missing = new Set<string>();
  await Promise.all(pvs.map(async (pv) => {
    const devicePath = pv.spec?.local?.path;
    const name = pv.metadata?.name ?? '';
    if (!devicePath) return;
    const { st, err } = await fs.promises.stat(devicePath, { bigint: true }).then(
      (stats) => ({ st: stats, err: undefined }),
      (e: NodeJS.ErrnoException) => ({ st: undefined, err: e }),
    );
    if (st?.isBlockDevice()) disks.set(formatDeviceNumber(deviceNumberOf(st.rdev)), name);
    // Other errors (EACCES, EIO) say nothing about whether the disk is there.
    else if (st || err?.code === 'ENOENT' || err?.code === 'ENOTDIR') missing.add(name);
  }));
  return { disks, missing };
}

/** The provisioned-by name on device PVs we create; PVs without it were made by the upstream provisioner. */
export function devicesProvisionerName(nodeName: string): string {
  return `local-volume-provisioner-${nodeName}`;
}
