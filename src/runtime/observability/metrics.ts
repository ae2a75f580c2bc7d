import { ProcessMetrics } from './process-metrics';
import { Counter, EXPOSITION_CONTENT_TYPE, Gauge, Histogram, Registry } from './prometheus';
import type { VolumeMode } from '../../config/model';

/**
 * Every metric the runtime exports, on a registry of its own, so two instances in one
 * process (tests) do not clash.
 *
 * Names, types and labels of the Go static provisioner, its node-cleanup controller and
 * the device-selecting provisioner are kept exactly, so existing dashboards and alerts
 * keep working; docs/operations.md maps each one and says where our semantics differ.
 */

/** How a Released volume is cleaned: in this process or by a Job (upstream label values). */
export type CleanupType = 'process' | 'job';

/** The one state each volume of this node is in, as exported by `volume_state`. */
export const VOLUME_STATES = ['available', 'bound', 'released', 'cleaning', 'error', 'held-data', 'held-dirty', 'missing', 'identity-mismatch', 'in-use', 'not-configured'] as const;
export type VolumeState = (typeof VOLUME_STATES)[number];
/**
 * The states of a healthy volume at rest: counted per StorageClass, not listed one
 * series per volume, so that `/metrics` does not grow with the node's volumes.
 */
export const COUNTED_ONLY_STATES: readonly VolumeState[] = ['available', 'bound'];
/**
 * The states of a volume the node really has, counted in `storageclass_volumes`: not a
 * rejected entry, a device holding data, a volume gone or another disk under its name,
 * so that an alert on too few volumes fires for an unmounted directory.
 */
export const PRESENT_STATES: readonly VolumeState[] = ['available', 'bound', 'released', 'cleaning', 'in-use', 'not-configured'];

/** One volume of this node, for {@link ProvisionerMetrics.setVolumeStates}. */
export interface VolumeStateEntry {
  /** PV name; "" while the volume has no PV (e.g. a device holding data). */
  readonly persistentVolume: string;
  /** `spec.local.path` (the host path). */
  readonly path: string;
  readonly storageClass: string;
  readonly state: VolumeState;
}

/**
 * Upstream's `mode` label of the delete metrics: what is at the volume's path (a block
 * device is `Block` even in a Filesystem class), `unknown` when that cannot be told.
 */
export type CleanupModeLabel = VolumeMode | 'unknown';

/** One finished cleanup of a Released volume, successful or not. */
/** A pool class on this node. */
export interface PoolStats {
  readonly storageClass: string;
  /** What a new volume can still have; undefined while the pool cannot be used. */
  readonly availableBytes?: number;
  /** A thin pool's data and metadata fill, 0 to 1. */
  readonly fill?: { readonly data: number; readonly metadata: number };
  /** Its volumes with no PV and no claim kept until an administrator's `volumes reclaim`; undefined when not known this pass. */
  readonly strayVolumesKept?: number;
  /** Device pools: whether Block volumes are refused on this node now (its LVM reads what tenants write). */
  readonly blockVolumesRefused?: boolean;
}

export type PoolOperation = 'create' | 'resize' | 'destroy';

/** A pool volume, from its quota. */
export interface PoolVolumeStats {
  readonly persistentVolume: string;
  readonly storageClass: string;
  readonly usedBytes: number;
  readonly limitBytes?: number;
}

/** Who finds rebound volumes: the volume record (static volumes) or the pools (by the claim UID in a volume's name). */
export type ReboundSource = 'record' | 'pool';

/** A PV bound to a claim other than the one that used its volume. */
export interface ReboundVolumeStats {
  readonly persistentVolume: string;
  readonly storageClass: string;
  /** The claim it is bound to now, `namespace/name`. */
  readonly claim: string;
}

export interface CleanupOutcome {
  readonly mode: CleanupModeLabel;
  readonly type: CleanupType;
  readonly succeeded: boolean;
  /** PV capacity in bytes; becomes the 500G `capacity` label. */
  readonly capacityBytes: number;
  /**
   * The class's blockCleanerCommand, whatever cleaned the volume (upstream's rule); its
   * first element is the `cleanup_command` label ("" for none).
   */
  readonly cleanupCommand: readonly string[];
  /** From the start of the cleanup to the PV's deletion. */
  readonly seconds: number;
}

export interface ProvisionerMetricsOptions {
  /** Version of this program, reported by `local_volume_provisioner_build_info`. */
  readonly version: string;
  /**
   * Export the process metrics (`process_*`, `nodejs_*`).
   * @default true
   */
  readonly processMetrics?: boolean;
}

const PREFIX = 'local_volume_provisioner_';
const NODE_CLEANUP_PREFIX = 'local_volume_node_cleanup_';
const DEVICE_PREFIX = 'local_pv_provisioner_';

/** Prometheus' (and upstream's) default buckets, for latencies of API calls and discovery. */
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/**
 * Cleanups: shred and dd take minutes to hours, and upstream's default buckets stop at
 * 10 s, which makes every quantile read "10 s". Upstream's buckets are kept as a prefix.
 */
const CLEANUP_BUCKETS = [...DEFAULT_BUCKETS, 30, 60, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400];

const GIB = 1024 ** 3;

/**
 * Upstream's `capacity` label: the capacity rounded UP to a multiple of 500 GiB, written
 * `<n>G` (0 → `0G`, 1 B → `500G`, 500 GiB → `500G`, 500 GiB + 1 B → `1000G`).
 */
export function capacityBreakdownLabel(capacityBytes: number): string {
  return `${Math.ceil(Math.max(0, capacityBytes) / (500 * GIB)) * 500}G`;
}

export class ProvisionerMetrics {
  readonly registry = new Registry();

  private readonly capacityBytes = this.gauge(`${PREFIX}persistentvolume_capacity_bytes`,
    'Total capacity in bytes of this node\'s local PersistentVolumes, by volume mode.', ['mode']);
  private readonly discoveryTotal = this.counter(`${PREFIX}persistentvolume_discovery_total`,
    'Total number of PersistentVolumes created by discovery, by volume mode.', ['mode']);
  private readonly discoveryDuration = this.histogram(`${PREFIX}persistentvolume_discovery_duration_seconds`,
    'Latency in seconds from finding a volume to its PersistentVolume being created, by volume mode.', ['mode'], DEFAULT_BUCKETS);
  private readonly deleteTotal = this.counter(`${PREFIX}persistentvolume_delete_total`,
    'Total number of PersistentVolumes cleaned and deleted, by volume mode and cleanup type (process or job).', ['mode', 'type']);
  private readonly deleteFailedTotal = this.counter(`${PREFIX}persistentvolume_delete_failed_total`,
    'Total number of failed cleanup or delete attempts, by volume mode and cleanup type (process or job).', ['mode', 'type']);
  private readonly deleteDuration = this.histogram(`${PREFIX}persistentvolume_delete_duration_seconds`,
    'Latency in seconds to clean and delete a PersistentVolume, by volume mode, cleanup type, capacity (rounded up to 500G) and cleanup command.',
    ['mode', 'type', 'capacity', 'cleanup_command'], CLEANUP_BUCKETS);
  private readonly cleanupRefused = this.counter(`${PREFIX}cleanup_refused_total`,
    'Total number of cleanups not done for safety, by reason: identity-mismatch (the path holds another disk than recorded), in-use (mounted elsewhere or held open), refused (not locatable, not what its volumeMode says), missing (the volume is gone).',
    ['reason']);
  private readonly cleanupBytes = this.counter(`${PREFIX}cleanup_bytes_total`,
    'Total number of bytes wiped or removed by cleanups, by volume mode and cleanup type.', ['mode', 'type']);

  // Upstream's series count what its Go code counted: PV creates and deletes, nothing else.
  private readonly apiRequests = this.counter(`${PREFIX}apiserver_requests_total`,
    'Total number of PersistentVolume create and delete requests to the API server, by method (create or delete).', ['method']);
  private readonly apiRequestsFailed = this.counter(`${PREFIX}apiserver_requests_failed_total`,
    'Total number of failed PersistentVolume create and delete requests, by method (create or delete).', ['method']);
  private readonly apiRequestDuration = this.histogram(`${PREFIX}apiserver_requests_duration_seconds`,
    'Latency in seconds of PersistentVolume create and delete requests, by method (create or delete).', ['method'], DEFAULT_BUCKETS);
  // Ours: every request, by verb and resource.
  private readonly kubeRequests = this.counter(`${PREFIX}kube_requests_total`,
    'Total number of requests to the API server (each attempt), by verb and resource.', ['verb', 'resource']);
  private readonly kubeRequestsFailed = this.counter(`${PREFIX}kube_requests_failed_total`,
    'Total number of failed requests to the API server, by verb and resource.', ['verb', 'resource']);
  private readonly kubeRequestDuration = this.histogram(`${PREFIX}kube_request_duration_seconds`,
    'Latency in seconds of requests to the API server, by verb.', ['verb'], DEFAULT_BUCKETS);

  private readonly procTableRunning = this.gauge(`${PREFIX}proctable_running`, 'Number of running operations in proctable: in-process cleanups running now.', []);
  private readonly procTableSucceeded = this.gauge(`${PREFIX}proctable_succeeded`, 'Number of succeeded operations in proctable: in-process cleanups that succeeded since start.', []);
  private readonly procTableFailed = this.gauge(`${PREFIX}proctable_failed`, 'Number of failed operations in proctable: in-process cleanups that failed since start.', []);

  private readonly volumeState = this.gauge(`${PREFIX}volume_state`,
    'The state of each local volume of this node that needs attention or is on its way (not available or bound): 1 for its current state.',
    ['state', 'persistentvolume', 'path', 'storageclass']);
  private readonly volumesByState = this.gauge(`${PREFIX}volumes`,
    'Number of local volumes of this node per StorageClass and state (every state, 0 included).', ['storageclass', 'state']);
  private readonly storageClassVolumes = this.gauge(`${PREFIX}storageclass_volumes`,
    'Number of local volumes of this node per StorageClass, 0 for a configured class with none.', ['storageclass']);
  private readonly poolAvailable = this.gauge(`${PREFIX}pool_available_bytes`,
    'Bytes a new volume of this pool class can still have on this node: the filesystem\'s free space less what its volumes may still write.', ['storageclass']);
  private readonly poolVolumeUsed = this.gauge(`${PREFIX}pool_volume_used_bytes`,
    'Bytes a pool volume holds, from its quota.', ['persistentvolume', 'storageclass']);
  private readonly poolVolumeLimit = this.gauge(`${PREFIX}pool_volume_limit_bytes`,
    'The size a pool volume is limited to (its claim\'s); writes beyond fail with EDQUOT.', ['persistentvolume', 'storageclass']);
  private readonly poolUsable = this.gauge(`${PREFIX}pool_usable`,
    '1 while this pool class can give volumes whose limits hold on this node, 0 while it cannot (PoolUnusable says why).', ['storageclass']);
  private readonly poolDataFill = this.gauge(`${PREFIX}pool_data_fill_ratio`,
    'lvm-thin pool classes: how full the thin pool\'s data is, 0 to 1 (its volumes write into it as they go, whatever their sizes).', ['storageclass']);
  private readonly poolMetadataFill = this.gauge(`${PREFIX}pool_metadata_fill_ratio`,
    'lvm-thin pool classes: how full the thin pool\'s metadata is, 0 to 1 (full, every volume in it fails).', ['storageclass']);
  private readonly poolStraysKept = this.gauge(`${PREFIX}pool_stray_volumes_kept`,
    'Pool volumes with no PV and no claim whose data is kept until an administrator runs "volumes reclaim" (PoolVolumeStrayKept, PoolVolumeHeld on the Node say which).',
    ['storageclass']);
  private readonly poolBlockRefused = this.gauge(`${PREFIX}pool_block_volumes_refused`,
    'lvm-thin pool classes: 1 while the node gives no Block volume of the class because its LVM reads what tenants write (PoolBlockVolumesRefused on the Node says how to confine it), 0 otherwise.',
    ['storageclass']);
  private readonly poolLimitEscapes = this.counter(`${PREFIX}pool_limit_escapes_total`,
    'Ways around a pool volume\'s limit found and undone (on btrfs: a subvolume inside a volume counted to another quota group).', ['storageclass']);
  private readonly poolFailures = this.counter(`${PREFIX}pool_operation_failures_total`,
    'Pool volume operations that failed (create, resize, destroy); each is tried again on the next pass.', ['storageclass', 'operation']);

  private readonly configReloads = this.counter(`${PREFIX}config_reloads_total`,
    'Total number of configuration changes, by result: ok (applied) or failed (rejected; the last good configuration stays in use).', ['result']);
  private readonly configLastSuccess = this.gauge(`${PREFIX}config_last_reload_success_timestamp_seconds`,
    'Unix time in seconds when a configuration was last applied (0 before the first).', []);
  private readonly configLastSuccessful = this.gauge(`${PREFIX}config_last_reload_successful`,
    'Whether the last configuration change was applied (1) or rejected (0: the last good configuration stays in use).', []);
  private readonly configSkippedClasses = this.gauge(`${PREFIX}config_skipped_storageclass`,
    'A class of the configuration left out because of problems confined to it (1 per class; the other classes run).', ['storageclass']);
  private readonly waitingForAnotherAgent = this.gauge(`${PREFIX}waiting_for_another_agent`,
    '1 while another agent on this node holds its volume directories (e.g. during a rollout with maxSurge); this agent then does nothing.', []);
  private readonly volumeRecordUsable = this.gauge(`${PREFIX}volume_record_usable`,
    'Whether the node\'s volume record can be read whole (1); 0: nothing is offered or cleaned until it is repaired.', []);
  private readonly volumeRecordDurable = this.gauge(`${PREFIX}volume_record_durable`,
    'Whether the volume record is in a directory that was there at start (1: a host directory the DaemonSet mounts); 0: it is lost when the pod is replaced.', []);
  private readonly claimGuardActive = this.gauge(`${PREFIX}claim_guard_active`,
    'Whether the claim guard is in force (1): the admission policy that keeps a used volume\'s PV from being bound again while no agent runs; 0: not configured, missing, not Deny, or unreadable.', []);
  private readonly claimRoutingActive = this.gauge(`${PREFIX}claim_routing_active`,
    'Pool classes: whether the claim routing is in force (1), the admission policy that labels each claim with its node so that this agent watches only '
      + 'its own; 0: not configured, missing or unreadable, and every claim of the cluster is watched.', []);
  private readonly volumeRebound = this.gauge(`${PREFIX}volume_rebound`,
    '1 for each PV of this node bound to a claim other than the one whose tenant used its volume, with no clean in between (bound while no agent ran).',
    ['persistentvolume', 'storageclass', 'claim']);
  private readonly buildInfo = this.gauge(`${PREFIX}build_info`,
    'Always 1; labels carry the version of this program and of Node.js.', ['version', 'node_version']);

  private readonly availableDevices = this.gauge(`${DEVICE_PREFIX}available_devices`,
    'Number of devices of this node offered as PersistentVolumes (device dialect).', ['node']);
  private readonly errorDevices = this.gauge(`${DEVICE_PREFIX}error_devices`,
    'Number of devices of this node that failed to open, wipe or become a PersistentVolume (device dialect).', ['node']);
  private readonly heldDevices = this.gauge(`${DEVICE_PREFIX}held_devices`,
    'Number of devices of this node held back because they carry data: neither wiped nor offered (device dialect).', ['node']);

  private readonly nodeCleanupPVDeletes = this.counter(`${NODE_CLEANUP_PREFIX}persistentvolume_delete_total`,
    'Total number of PersistentVolumes of deleted Nodes deleted by node cleanup, by PersistentVolume phase.', ['phase']);
  private readonly nodeCleanupPVDeletesFailed = this.counter(`${NODE_CLEANUP_PREFIX}persistentvolume_delete_failed_total`,
    'Total number of failed PersistentVolume deletions by node cleanup, by PersistentVolume phase.', ['phase']);
  private readonly nodeCleanupPVsLetGo = this.counter(`${NODE_CLEANUP_PREFIX}persistentvolume_finalizer_removed_total`,
    'Total number of deleted PersistentVolumes of deleted Nodes whose agent cleanup finalizer node cleanup removed (succeeded: false, they stay Terminating).',
    ['succeeded']);
  private readonly nodeCleanupPVCDeletes = this.counter(`${NODE_CLEANUP_PREFIX}persistentvolumeclaim_delete_total`,
    'Total number of PersistentVolumeClaims bound to volumes of deleted Nodes deleted by node cleanup.', []);
  private readonly nodeCleanupPVCDeletesFailed = this.counter(`${NODE_CLEANUP_PREFIX}persistentvolumeclaim_delete_failed_total`,
    'Total number of failed PersistentVolumeClaim deletions by node cleanup.', []);
  private readonly nodeCleanupPVCRecreatesFailed = this.counter(`${NODE_CLEANUP_PREFIX}persistentvolumeclaim_recreate_failed_total`,
    'Total number of failed PersistentVolumeClaim re-creations by node cleanup.', []);

  private readonly reboundBySource = new Map<ReboundSource, readonly ReboundVolumeStats[]>();

  constructor(options: ProvisionerMetricsOptions) {
    this.buildInfo.set({ version: options.version, node_version: process.version }, 1);
    // Both modes always have a series, so "no Block volumes" reads 0, not absent.
    this.setCapacity({});
    for (const gauge of [this.procTableRunning, this.procTableSucceeded, this.procTableFailed]) gauge.set(0);
    this.setWaitingForAnotherAgent(false);
    this.setVolumeRecordUsable(true);
    this.setVolumeRecordDurable(true);
    // Not known to be in force until the agent has read it.
    this.setClaimGuardActive(false);
    // Nothing rejected yet: a configuration that is unusable at startup ends the process instead.
    this.configLastSuccessful.set(1);
    if (options.processMetrics ?? true) this.registry.register(new ProcessMetrics());
  }

  /** The Prometheus text exposition of every metric. */
  async exposition(): Promise<string> {
    return this.registry.exposition();
  }

  /** Content-Type of {@link exposition}. */
  get contentType(): string {
    return EXPOSITION_CONTENT_TYPE;
  }

  /** A PV was created for a discovered volume, `seconds` after the volume was found. */
  recordPVCreated(mode: VolumeMode, seconds: number): void {
    this.discoveryTotal.inc({ mode });
    this.discoveryDuration.observe({ mode }, seconds);
  }

  /**
   * The total capacity of this node's PVs by mode, fed from the PV cache after each
   * change (upstream set it only for volumes found in the current pass, so it read 0 in
   * steady state). A mode left out reads 0.
   */
  setCapacity(bytesByMode: Partial<Record<VolumeMode, number>>): void {
    this.capacityBytes.set({ mode: 'Filesystem' }, bytesByMode.Filesystem ?? 0);
    this.capacityBytes.set({ mode: 'Block' }, bytesByMode.Block ?? 0);
  }

  /** A cleanup of a Released volume ended: success (cleaned and PV deleted) or failure. */
  recordCleanup(outcome: CleanupOutcome): void {
    const labels = { mode: outcome.mode, type: outcome.type };
    if (!outcome.succeeded) {
      this.deleteFailedTotal.inc(labels);
      return;
    }
    this.deleteTotal.inc(labels);
    this.deleteDuration.observe({
      ...labels,
      capacity: capacityBreakdownLabel(outcome.capacityBytes),
      cleanup_command: outcome.cleanupCommand[0] ?? '',
    }, outcome.seconds);
  }

  /** A cleanup was not done for safety (see the counter's help for the reasons). */
  recordCleanupRefused(reason: 'identity-mismatch' | 'in-use' | 'refused' | 'missing'): void {
    this.cleanupRefused.inc({ reason });
  }

  /** Bytes a running cleanup has just wiped or removed (call as it progresses). */
  addCleanupBytes(mode: VolumeMode, type: CleanupType, bytes: number): void {
    this.cleanupBytes.inc({ mode, type }, bytes);
  }

  /** Upstream's proctable_running: in-process cleanups running now. */
  setProcTableRunning(running: number): void {
    this.procTableRunning.set(running);
  }

  /**
   * An in-process cleanup ended: upstream's proctable_succeeded or proctable_failed
   * counts it (gauges upstream, so gauges here, counting since start).
   */
  recordProcessCleanupEnded(succeeded: boolean): void {
    (succeeded ? this.procTableSucceeded : this.procTableFailed).inc();
  }

  /**
   * One API server request ended: counted in ours by verb and resource, and in
   * upstream's series when it is a PV create or delete (all upstream counted).
   */
  recordApiRequest(verb: string, resource: string, seconds: number, failed: boolean): void {
    this.kubeRequests.inc({ verb, resource });
    this.kubeRequestDuration.observe({ verb }, seconds);
    if (failed) this.kubeRequestsFailed.inc({ verb, resource });
    if (resource !== 'persistentvolumes' || (verb !== 'create' && verb !== 'delete')) return;
    this.apiRequests.inc({ method: verb });
    this.apiRequestDuration.observe({ method: verb }, seconds);
    if (failed) this.apiRequestsFailed.inc({ method: verb });
  }

  /**
   * Replaces the whole set of volume states with `volumes` (call after each pass), so a
   * volume that changed state or went away leaves no stale series behind. Every volume
   * is counted in `volumes`, those in a {@link PRESENT_STATES} state in
   * `storageclass_volumes`; only those not in a {@link COUNTED_ONLY_STATES} state get a
   * `volume_state` series of their own.
   * `configuredStorageClasses` get their counts even with no volume.
   */
  recordPoolLimitEscape(storageClass: string): void {
    this.poolLimitEscapes.inc({ storageclass: storageClass });
  }

  recordPoolFailure(storageClass: string, operation: PoolOperation): void {
    this.poolFailures.inc({ storageclass: storageClass, operation });
  }

  /** The pools of this node, as the last pass read them (an unusable one without `availableBytes`); pools and volumes not given are dropped. */
  setPools(pools: readonly PoolStats[], volumes: readonly PoolVolumeStats[]): void {
    const gauges = [
      this.poolAvailable, this.poolVolumeUsed, this.poolVolumeLimit, this.poolUsable, this.poolDataFill, this.poolMetadataFill, this.poolStraysKept,
      this.poolBlockRefused,
    ];
    for (const gauge of gauges) gauge.reset();
    for (const p of pools) {
      this.poolUsable.set({ storageclass: p.storageClass }, p.availableBytes === undefined ? 0 : 1);
      if (p.availableBytes !== undefined) this.poolAvailable.set({ storageclass: p.storageClass }, p.availableBytes);
      if (p.fill) {
        this.poolDataFill.set({ storageclass: p.storageClass }, p.fill.data);
        this.poolMetadataFill.set({ storageclass: p.storageClass }, p.fill.metadata);
      }
      if (p.strayVolumesKept !== undefined) this.poolStraysKept.set({ storageclass: p.storageClass }, p.strayVolumesKept);
      if (p.blockVolumesRefused !== undefined) this.poolBlockRefused.set({ storageclass: p.storageClass }, p.blockVolumesRefused ? 1 : 0);
    }
    for (const v of volumes) {
      const labels = { persistentvolume: v.persistentVolume, storageclass: v.storageClass };
      this.poolVolumeUsed.set(labels, v.usedBytes);
      if (v.limitBytes !== undefined) this.poolVolumeLimit.set(labels, v.limitBytes);
    }
  }

  setVolumeStates(volumes: readonly VolumeStateEntry[], configuredStorageClasses: readonly string[] = []): void {
    const perClass = new Map<string, Map<VolumeState, number>>();
    const countsOf = (storageClass: string) => {
      let counts = perClass.get(storageClass);
      if (!counts) perClass.set(storageClass, counts = new Map(VOLUME_STATES.map((state) => [state, 0])));
      return counts;
    };
    for (const c of configuredStorageClasses) countsOf(c);
    this.volumeState.reset();
    for (const v of volumes) {
      const counts = countsOf(v.storageClass);
      counts.set(v.state, counts.get(v.state)! + 1);
      if (COUNTED_ONLY_STATES.includes(v.state)) continue;
      this.volumeState.set({ state: v.state, persistentvolume: v.persistentVolume, path: v.path, storageclass: v.storageClass }, 1);
    }
    this.storageClassVolumes.reset();
    this.volumesByState.reset();
    for (const [storageclass, counts] of perClass) {
      let present = 0;
      for (const [state, count] of counts) {
        this.volumesByState.set({ storageclass, state }, count);
        if (PRESENT_STATES.includes(state)) present += count;
      }
      this.storageClassVolumes.set({ storageclass }, present);
    }
  }

  setClaimRoutingActive(active: boolean): void {
    this.claimRoutingActive.set(active ? 1 : 0);
  }

  setClaimGuardActive(active: boolean): void {
    this.claimGuardActive.set(active ? 1 : 0);
  }

  /** The PVs of `source` (the record's volumes, or the pools') bound to another tenant than the one that used them; replaces that source's last set. */
  setReboundVolumes(source: ReboundSource, volumes: readonly ReboundVolumeStats[]): void {
    this.reboundBySource.set(source, volumes);
    this.volumeRebound.reset();
    for (const v of [...this.reboundBySource.values()].flat()) {
      this.volumeRebound.set({ persistentvolume: v.persistentVolume, storageclass: v.storageClass, claim: v.claim }, 1);
    }
  }

  /** Whether this agent waits for another one on its node (see agent/volume-locks.ts). */
  setVolumeRecordUsable(usable: boolean): void {
    this.volumeRecordUsable.set(usable ? 1 : 0);
  }

  setVolumeRecordDurable(durable: boolean): void {
    this.volumeRecordDurable.set(durable ? 1 : 0);
  }

  setWaitingForAnotherAgent(waiting: boolean): void {
    this.waitingForAnotherAgent.set(waiting ? 1 : 0);
  }

  /**
   * Device dialect: every device of `node` is counted once, as offered (available), in
   * error, or held for its data; the three add up to the node's devices.
   */
  setDevices(node: string, counts: { readonly available: number; readonly error: number; readonly held: number }): void {
    this.availableDevices.set({ node }, counts.available);
    this.errorDevices.set({ node }, counts.error);
    this.heldDevices.set({ node }, counts.held);
  }

  /**
   * A changed configuration was applied (`succeeded`) or rejected; on success its time
   * becomes the last good configuration's time.
   */
  recordConfigReload(succeeded: boolean, at: Date = new Date()): void {
    this.configReloads.inc({ result: succeeded ? 'ok' : 'failed' });
    this.configLastSuccessful.set(succeeded ? 1 : 0);
    if (succeeded) this.configLastSuccess.set(at.getTime() / 1000);
  }

  /** The classes the configuration in force leaves out (replaces the last set). */
  setSkippedStorageClasses(names: readonly string[]): void {
    this.configSkippedClasses.reset();
    for (const storageclass of names) this.configSkippedClasses.set({ storageclass }, 1);
  }

  /** Node cleanup deleted (or failed to delete) a PV of a gone Node that was in `phase`. */
  recordNodeCleanupPVDelete(phase: string, succeeded: boolean): void {
    (succeeded ? this.nodeCleanupPVDeletes : this.nodeCleanupPVDeletesFailed).inc({ phase });
  }

  /** Node cleanup removed (or could not remove) the agent's cleanup finalizer from a deleted PV of a gone Node. */
  recordNodeCleanupFinalizerRemoval(succeeded: boolean): void {
    this.nodeCleanupPVsLetGo.inc({ succeeded: String(succeeded) });
  }

  /** Node cleanup deleted (or failed to delete) a claim bound to a PV of a gone Node. */
  recordNodeCleanupPVCDelete(succeeded: boolean): void {
    (succeeded ? this.nodeCleanupPVCDeletes : this.nodeCleanupPVCDeletesFailed).inc();
  }

  /** Node cleanup failed to re-create a claim it had deleted. */
  recordNodeCleanupPVCRecreateFailed(): void {
    this.nodeCleanupPVCRecreatesFailed.inc();
  }

  private counter<L extends string>(name: string, help: string, labelNames: L[]): Counter<L> {
    return this.registry.register(new Counter(name, help, labelNames));
  }

  private gauge<L extends string>(name: string, help: string, labelNames: L[]): Gauge<L> {
    return this.registry.register(new Gauge(name, help, labelNames));
  }

  private histogram<L extends string>(name: string, help: string, labelNames: L[], buckets: number[]): Histogram<L> {
    return this.registry.register(new Histogram(name, help, labelNames, buckets));
  }
}
