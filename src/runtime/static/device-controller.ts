/**
 * One pass of the device dialect (the device-selecting provisioner's job): find
 * this node's PV spec ConfigMap, recycle Released devices, then offer every new
 * device the filter matches. Unlike upstream, a device carrying a partition
 * table or a filesystem signature is left alone and reported (unless the spec
 * says `wipeDevicesHoldingData`), a config change never blocks the node, and
 * every problem is an Event and a metric, not only a log line.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { V1ConfigMap, V1Node, V1ObjectReference, V1PersistentVolume } from '@kubernetes/client-node';
import { compileDeviceNameFilter, configMapData, DeviceSpecConfig, formatIssue, parseDeviceSpec, PV_SPEC_CONFIGMAP_ANNOTATION } from '../../config';
import { cleanVolume, ConcurrencyLimiter, ConfiguredVolumes, effectiveReclaimPolicy, isStrictlyInside, NodeIdentity, ownership, ReclaimMode } from '../cleanup';
import { deviceCandidates, discoverDevices, DiscoveredDevice, planProvisioning } from '../discovery';
import { KubeApi } from '../kube/api-client';
import { EventRecorder, nodeReference, persistentVolumeReference } from '../kube/event-recorder';
import { NodePvCache } from '../kube/pv-cache';
import { ensurePersistentVolume } from '../kube/pv-writes';
import { EventReasons, Logger, ProvisionerMetrics, volumeLogger } from '../observability';
import { describeProbe, deviceNumberOf, IdentityCache } from '../volume';
import { Deleter } from './deleter';
import { Claimed, RecordKeeper } from './record-keeper';
import { offerVerdict, withIdentities } from '../record';
import { judgeVolume, steward, VolumeAtPath, VolumeVerdict } from './pv-stewardship';
import { capacityByMode, heldDirtyVolumes, VolumeWithoutPV, volumeStateEntries } from './volume-states';
import { assignDevicePVNames, buildDevicePV, DeviceNaming, deviceSpecDifferences, NodeInfo, nodeInfoOf } from '../pv';
import { NODE_LABEL } from '../well-known';

/** The Node annotation naming a node's PV spec ConfigMap (the device-selecting provisioner's). */

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
  /** The node's volume record: only what it calls clean, or a device wiped now, is offered. */
  readonly keeper: RecordKeeper;
  /** How PVs are held (see cleanup/release-decision.ts). */
  readonly mode: ReclaimMode;
  /** Shared with the deleter's cleanups, so wipes of new devices count against the same limit. */
  readonly limiter: ConcurrencyLimiter;
  /** A wipe during which the device sees no I/O this long is stopped (cleanup/stall-watchdog.ts). 0 = never. */
  readonly stallTimeoutMs: number;
  readonly namespace: string;
  readonly defaultPvSpecConfigMap: string;
  /** The spec ConfigMaps of the namespace, kept current by a watch. */
  readonly configMap: (name: string) => V1ConfigMap | undefined;
}

export type DevicePassResult =
  | { readonly state: 'no-spec'; readonly message: string }
  /** The node's volume record cannot be used: nothing is offered or cleaned (record-keeper.ts says why). */
  | { readonly state: 'record-unusable'; readonly message: string }
  | { readonly state: 'provisioned'; readonly spec: DeviceSpecConfig; readonly created: readonly string[] };

export class DeviceController {
  private lastSpecChange = '';
  /** The last pass's spec or problem, so the config reload metrics count changes, not passes. */
  private lastResolution?: string;
  private readonly identities = new IdentityCache();

  constructor(private readonly deps: DeviceControllerDeps) {}

  async pass(node: V1Node): Promise<DevicePassResult> {
    return this.run(node);
  }

  /** The directories a pass discovers and cleans in, for the node's current spec (none without one). */
  directories(node: V1Node): string[] {
    const resolved = this.resolveSpec(node);
    return 'spec' in resolved ? [resolved.spec.deviceDir] : [];
  }

  /** Warnings are deduplicated by the recorder: a lasting condition is written once per repeat interval. */
  private warn(object: V1ObjectReference, reason: string, message: string): void {
    this.deps.events.warning(object, reason, message);
  }

  private async run(node: V1Node): Promise<DevicePassResult> {
    const info = nodeInfoOf(node);
    const resolved = this.resolveSpec(node);
    this.recordResolution(resolved);
    if ('message' in resolved) {
      this.warn(nodeReference(node), EventReasons.NoPVSpecConfigMap.reason, resolved.message);
      this.deps.logger.warn({ node: info.name }, resolved.message);
      this.deps.metrics.setDevices(info.name, { available: 0, error: 0, held: 0 });
      return { state: 'no-spec', message: resolved.message };
    }
    const spec = resolved.spec;
    const health = this.deps.keeper.check();
    if (!health.ok) return { state: 'record-unusable', message: health.problem };
    const me: NodeIdentity = { nodeName: info.name, provisionerName: devicesProvisionerName(info.name) };
    const configured: ConfiguredVolumes = { dialect: 'device', spec };
    const recordContext = { dialect: 'device' as const, reclaimPolicyOf: (pv: V1PersistentVolume) => effectiveReclaimPolicy(pv, configured) };
    const mine = () => this.deps.cache.list().filter((pv) => ownership(pv, me, 'device').ok);
    // A tenant seen, a PV gone unseen: recorded before the deleter lets any PV go; a PV given to another tenant said before it is cleaned.
    const seenByRecord = withIdentities(mine(), this.deps.keeper.identities());
    await this.deps.keeper.observe(seenByRecord, this.deps.cache.list(), recordContext);
    this.deps.keeper.reportRebound(seenByRecord);
    await this.deps.deleter.run({ me, configured, pvs: this.deps.cache.list() });
    // Every PV of this node, of either dialect: a disk with a PV is never offered again.
    const pvs = this.deps.cache.list();
    // Only ours are inspected, reported and counted: the directory dialect's PVs are its own agent's.
    const owned = pvs.filter((pv) => ownership(pv, me, 'device').ok);
    this.reportSpecChange(node, spec, owned);

    const atPaths = await Promise.all(owned.map(async (pv) => ({ pv, at: await this.deviceAtPath(pv, spec) })));
    await steward(this.deps.api, this.deps.logger, atPaths, this.deps.mode);
    const verdicts = new Map(atPaths.map(({ pv, at }) => [pv.metadata?.name ?? '', judgeVolume(pv, at)]));
    this.reportVerdicts(owned, verdicts);
    const found = new Map(atPaths.flatMap(({ pv, at }) => (at.state === 'present' ? [[pv.metadata?.uid ?? '', at.identity] as const] : [])));
    // The device provisioner's PVs carry no identity: known by the record from adoption on, else by what is at their path.
    const recorded = this.deps.keeper.identities();
    const identityOf = (pv: V1PersistentVolume) => recorded(pv) ?? found.get(pv.metadata?.uid ?? '');
    await this.deps.keeper.observe(withIdentities(owned, identityOf), this.deps.cache.list(), recordContext);

    const { devices, errors } = await this.discover(node, spec, pvs, identityOf);
    const naming = this.name(node, spec, pvs, devices, errors);
    const plan = planProvisioning(deviceCandidates(naming.named, spec.volumeMode), pvs, {
      pvNames: new Set(naming.named.map((n) => n.name).filter((n) => this.deps.deleter.isCleaning(n))),
      paths: new Set(),
    }, identityOf);
    for (const s of plan.skip) {
      if (s.warning) this.warn(nodeReference(node), EventReasons.DuplicatePath.reason, s.warning);
      // Another disk whose PV name is taken in this pass cannot be offered: an error device. A second path
      // to a disk already counted (same-volume, path-in-use) is not another device.
      if (s.code === 'duplicate-in-pass') {
        errors.push({ path: s.candidate.device.path, storageClass: spec.storageClassName, state: 'error' });
      }
    }
    const created: string[] = [];
    const heldData: VolumeWithoutPV[] = [];
    await Promise.all(plan.create.map(async (candidate) => {
      const outcome = await this.offer(candidate.device, candidate.name, spec, info, node, me);
      if (outcome === 'created') created.push(candidate.name);
      else if (outcome === 'held-data') heldData.push({ path: candidate.device.path, storageClass: spec.storageClassName, state: 'held-data' });
      else if (outcome === 'error') errors.push({ path: candidate.device.path, storageClass: spec.storageClassName, state: 'error' });
    }));
    this.updateMetrics(info.name, owned, verdicts, errors, heldData, created);
    return { state: 'provisioned', spec, created };
  }

  /** What is at a device PV's path now. */
  private async deviceAtPath(pv: V1PersistentVolume, spec: DeviceSpecConfig): Promise<VolumeAtPath> {
    const devicePath = pv.spec?.local?.path ?? '';
    let st;
    try {
      st = await fs.promises.stat(devicePath, { bigint: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A pulled disk loses its udev link; other errors (EACCES, EIO) say nothing about whether it is there.
      if (code === 'ENOENT' || code === 'ENOTDIR') return { state: 'gone', reason: `device ${devicePath} is gone from this node` };
      return { state: 'unknown', reason: `device ${devicePath} cannot be inspected: ${code ?? String(err)}` };
    }
    if (!st.isBlockDevice()) return { state: 'gone', reason: `${devicePath} is no block device any more` };
    const configured = isStrictlyInside(devicePath, spec.deviceDir) && matchesFilter(spec, path.posix.basename(devicePath));
    return { state: 'present', identity: await this.identities.block(deviceNumberOf(st.rdev)), configured };
  }

  /** Warnings for PVs whose device is gone or is another disk now. */
  private reportVerdicts(owned: readonly V1PersistentVolume[], verdicts: ReadonlyMap<string, VolumeVerdict>): void {
    for (const pv of owned) {
      if (pv.metadata?.deletionTimestamp) continue;
      const verdict = verdicts.get(pv.metadata?.name ?? '');
      const ref = persistentVolumeReference(pv);
      if (verdict?.kind === 'missing') {
        this.warn(ref, EventReasons.VolumeMissing.reason, `device ${pv.spec?.local?.path} of PV ${pv.metadata?.name} is gone from this node; the PV is kept and nothing is wiped`);
      } else if (verdict?.kind === 'identity-mismatch') {
        this.warn(ref, EventReasons.VolumeIdentityMismatch.reason,
          `"${pv.spec?.local?.path}" is not the disk PV "${pv.metadata?.name}" was made for: it recorded ${verdict.recorded}, the path now holds ${verdict.current}; `
          + 'the PV is kept, and that disk is neither wiped nor offered in its name');
      }
    }
  }

  /**
   * The devices that may be offered this pass, and the error devices. A disk that is
   * already some PV's (by identity, under whatever path) is neither probed nor offered.
   */
  private async discover(node: V1Node, spec: DeviceSpecConfig, pvs: readonly V1PersistentVolume[],
    identityOf: (pv: V1PersistentVolume) => string | undefined): Promise<{ devices: DiscoveredDevice[]; errors: VolumeWithoutPV[] }> {
    const withPV = new Set(pvs.map((pv) => pv.spec?.local?.path));
    const disksWithPV = new Set(pvs.map(identityOf).filter((i): i is string => i !== undefined));
    const discovery = await discoverDevices(spec, {
      identities: this.identities,
      shouldProbe: (d) => !withPV.has(d.path) && !disksWithPV.has(d.identity),
    });
    for (const a of discovery.aliases) volumeLogger(this.deps.logger, { path: a.path, storageClass: spec.storageClassName }).debug(a.reason);
    // A filter that matches nothing leaves the node without devices as surely as a broken spec: say so too.
    const problem = discovery.problem ?? (discovery.devices.length === 0 && discovery.errorDevices.length === 0
      ? `deviceNameFilter ${JSON.stringify(spec.deviceNameFilter)} matches no device in deviceDir ${JSON.stringify(spec.deviceDir)}; no device is provisioned on Node "${node.metadata?.name}"`
      : undefined);
    if (problem) {
      this.warn(nodeReference(node), EventReasons.DeviceError.reason, problem);
      this.deps.logger.warn({ deviceDir: spec.deviceDir }, problem);
    }
    for (const e of discovery.errorDevices) {
      this.warn(nodeReference(node), EventReasons.DeviceError.reason, e.reason);
      volumeLogger(this.deps.logger, { path: e.path, storageClass: spec.storageClassName }).debug(e.reason);
    }
    const errors = discovery.errorDevices.map((e): VolumeWithoutPV => ({ path: e.path, storageClass: spec.storageClassName, state: 'error' }));
    return { devices: [...discovery.devices], errors };
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
      errors.push(...refused.map((p): VolumeWithoutPV => ({ path: p, storageClass: spec.storageClassName, state: 'error' })));
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
    const record = this.deps.keeper.record;
    const verdict = offerVerdict(device.identity, device.path, record.entries(), (i) => record.get(i));
    // Used and not clean yet (the deleter cleans or holds it), or sharing a disk with another volume: never wiped here.
    if (verdict.kind === 'not-clean') return 'exists';
    if (verdict.kind === 'overlaps') {
      this.deps.keeper.reportOverlap(this.candidate(device, pvName, spec), verdict.other);
      return 'error';
    }
    // A device the record calls clean was wiped (and not used) since: it is offered as it is.
    if (verdict.kind === 'offer') {
      const claimed = await this.claim(device, pvName, spec);
      return claimed ? this.create(device, pvName, spec, info, node, me, log, claimed.handTo) : 'error';
    }
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
    // Claimed before it is wiped: from here no other volume on this disk (the other dialect's) can be offered; a crash
    // before its PV exists leaves a claim without a PV, which the record turns dirty, and the deleter wipes again.
    if (!await this.claim(device, pvName, spec)) return 'error';
    // Wiped through the open device, checked to be the disk discovery saw (its name may have moved since).
    const wiped = await this.deps.limiter.run(() => cleanVolume({
      pvName,
      pvUid: '',
      storageClassName: spec.storageClassName,
      volumeMode: spec.volumeMode,
      hostPath: device.path,
      path: device.path,
      classDir: spec.deviceDir,
      method: { kind: 'device-wipe', wipe: spec.wipe },
      identity: device.identity,
    }, { stallTimeoutMs: this.deps.stallTimeoutMs, onWritten: (bytes) => this.deps.metrics.addCleanupBytes(spec.volumeMode, 'process', bytes) }));
    if (!wiped.ok) {
      const message = `cannot wipe device ${device.path}: ${wiped.reason}`;
      this.warn(nodeReference(node), wiped.kind === 'identity-mismatch' ? EventReasons.VolumeIdentityMismatch.reason : EventReasons.DeviceError.reason, message);
      log.error(message);
      await this.deps.keeper.release(device.identity, pvName, 'unknown');
      return 'error';
    }
    return this.create(device, pvName, spec, info, node, me, log);
  }

  /** Claims the device in the volume record; undefined when another volume sharing its disk holds a claim. */
  private async claim(device: DiscoveredDevice, pvName: string, spec: DeviceSpecConfig): Promise<Claimed | undefined> {
    // A device never seen has just been probed blank (or may be wiped holding data): the wipe before its PV empties it.
    const [claimed] = await this.deps.keeper.claim([this.candidate(device, pvName, spec)], 'device', async () => ({ holdsNothing: true }));
    return claimed;
  }

  /** The device as the volume record knows it. */
  private candidate(device: DiscoveredDevice, pvName: string, spec: DeviceSpecConfig) {
    return {
      identity: device.identity,
      hostPath: device.path,
      storageClass: spec.storageClassName,
      volumeMode: spec.volumeMode,
      pvName,
      reclaimPolicy: spec.reclaimPolicy,
    };
  }

  /** Creates the PV of a claimed, clean device; a failed create gives the claim back. */
  private async create(device: DiscoveredDevice, pvName: string, spec: DeviceSpecConfig, info: NodeInfo, node: V1Node, me: NodeIdentity,
    log: Logger, handTo?: string): Promise<'created' | 'error' | 'exists'> {
    const pv = buildDevicePV({ name: pvName, device, spec, node: info, provisionerName: me.provisionerName, handTo });
    let made: V1PersistentVolume;
    try {
      const result = await ensurePersistentVolume(this.deps.api, pv);
      if (!result.created) return 'exists';
      made = result.pv;
    } catch (err) {
      const message = `cannot create PV ${pvName} for ${device.path}: ${(err as Error).message}`;
      this.warn(nodeReference(node), EventReasons.ProvisioningFailed.reason, message);
      log.error(message);
      await this.deps.keeper.release(device.identity, pvName, 'clean');
      return 'error';
    }
    // Known at once, even while the watch lags: the next pass never offers this disk twice.
    this.deps.cache.observe(made);
    await this.deps.keeper.made([{ identity: device.identity, pv: made }]);
    this.deps.events.normal(persistentVolumeReference(made), EventReasons.ProvisioningSucceeded.reason,
      `${device.path} is clean; created PV ${pvName} (${pv.spec?.capacity?.storage}, ${spec.volumeMode})`);
    log.info({ capacity: pv.spec?.capacity?.storage }, 'device wiped; PV created');
    return 'created';
  }

  private updateMetrics(
    nodeName: string,
    owned: readonly V1PersistentVolume[],
    verdicts: ReadonlyMap<string, VolumeVerdict>,
    errors: readonly VolumeWithoutPV[],
    heldData: readonly VolumeWithoutPV[],
    created: readonly string[],
  ): void {
    this.deps.metrics.setCapacity(capacityByMode(owned));
    // A device is counted once: offered (has a PV of ours and is there), in error (including a PV's
    // device that is gone, or another disk now), or held for its data. PVs created in this pass count
    // although the cache's watch may not have delivered them yet.
    const gone = (name: string) => ['missing', 'identity-mismatch'].includes(verdicts.get(name)?.kind ?? '');
    const names = new Set([...owned.filter((pv) => !pv.metadata?.deletionTimestamp).map((pv) => pv.metadata?.name ?? ''), ...created]);
    const offered = [...names].filter((n) => !gone(n));
    const failed = errors.length + (names.size - offered.length);
    this.deps.metrics.setDevices(nodeName, { available: offered.length, error: failed, held: heldData.length });
    this.deps.metrics.setVolumeStates(volumeStateEntries(owned, (pv) => {
      const verdict = verdicts.get(pv.metadata?.name ?? '');
      return {
        missing: verdict?.kind === 'missing',
        identityMismatch: verdict?.kind === 'identity-mismatch',
        cleaning: this.deps.deleter.isCleaning(pv.metadata?.name ?? ''),
        refusal: this.deps.deleter.refusal(pv.metadata?.uid ?? ''),
      };
    }, [...errors, ...heldData, ...heldDirtyVolumes(this.deps.deleter.heldVolumes())]));
  }
}

/** Whether the spec's filter matches a device base name (an uncompilable filter matches nothing). */
function matchesFilter(spec: DeviceSpecConfig, baseName: string): boolean {
  try {
    return compileDeviceNameFilter(spec.deviceNameFilter).test(baseName);
  } catch {
    return false;
  }
}

/** The provisioned-by name on device PVs we create; PVs without it were made by the upstream provisioner. */
export function devicesProvisionerName(nodeName: string): string {
  return `local-volume-provisioner-${nodeName}`;
}
