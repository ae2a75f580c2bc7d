/**
 * The one configuration model shared by the runtime (which reads it) and the
 * construct (which writes it). Two dialects, one engine:
 *
 * - the *directory dialect*: the Go local static provisioner's ConfigMap
 *   (`storageClassMap` and friends), mounted at /etc/provisioner/config;
 * - the *device dialect*: the device-selecting provisioner's per-node
 *   "PV spec ConfigMap" (`deviceDir`, `deviceNameFilter`, ...).
 *
 * Values here are fully resolved: every default applied, every duration in
 * milliseconds. Keys marked "extension" are ours; upstream ignores unknown keys,
 * so a ConfigMap that uses them still loads in the Go provisioner.
 */

/** Durations are whole milliseconds; the ConfigMap spells them as Go durations (`5m0s`). */
export type DurationMs = number;

export const VOLUME_MODES = ['Filesystem', 'Block'] as const;
export type VolumeMode = (typeof VOLUME_MODES)[number];

export const ACCESS_MODES = ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'] as const;
export type AccessMode = (typeof ACCESS_MODES)[number];

/**
 * How a pool class limits each volume to its claim's size: `btrfs`, a subvolume in a
 * quota group of its own (simple quotas); `xfs` and `ext4`, a directory with a project
 * ID of its own and that project's hard limit; `lvm-thin`, a thin logical volume of the
 * claim's size. Each backend is offered because its tests run it for real
 * (docs/operations.md, "Pool classes").
 */
export const POOL_BACKENDS = ['btrfs', 'xfs', 'ext4', 'lvm-thin'] as const;
export type PoolBackend = (typeof POOL_BACKENDS)[number];

/**
 * The backends whose volumes are block devices: they give Block volumes too, and
 * Filesystem ones with the filesystem the class names (`fsType`).
 */
export const DEVICE_POOL_BACKENDS: readonly PoolBackend[] = ['lvm-thin'];
/**
 * Whose pods use an `xfs` or `ext4` pool class, and so what its limits hold against: a
 * pod in the host's user namespace can move its files out of its volume's project, to no
 * limit or to a neighbour's, until the agent's walk of every volume sets them back
 * (docs/operations.md, "XFS and ext4").
 * - `user-namespaced`: only pods with a user namespace of their own (`hostUsers: false`),
 *   which the kernel keeps in their project; a file the walk finds moved out says that a
 *   pod of the host's user namespace used the class;
 * - `any-limits-restored-by-scan`: any pod; what one moves out counts against no limit,
 *   or against a neighbour's, until the walk finds it.
 */
export const PROJECT_QUOTA_TENANTS = ['user-namespaced', 'any-limits-restored-by-scan'] as const;
export type ProjectQuotaTenants = (typeof PROJECT_QUOTA_TENANTS)[number];

/** The filesystems a device pool class makes on its Filesystem volumes. */
export const DEVICE_POOL_FS_TYPES = ['ext4', 'xfs'] as const;

export const NODE_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'] as const;
export type NodeSelectorOperator = (typeof NODE_SELECTOR_OPERATORS)[number];

/** core/v1 NodeSelectorRequirement. */
export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: NodeSelectorOperator;
  readonly values?: string[];
}

/** core/v1 NodeSelectorTerm. */
export interface NodeSelectorTerm {
  readonly matchExpressions?: NodeSelectorRequirement[];
  readonly matchFields?: NodeSelectorRequirement[];
}

export const TOLERATION_OPERATORS = ['Exists', 'Equal'] as const;
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/** core/v1 Toleration. */
export interface Toleration {
  readonly key?: string;
  readonly operator?: (typeof TOLERATION_OPERATORS)[number];
  readonly value?: string;
  readonly effect?: (typeof TAINT_EFFECTS)[number];
  readonly tolerationSeconds?: number;
}

/** One entry of `storageClassMap` in the directory dialect. */
export interface ClassConfig {
  /** Discovery directory as seen on the host; prefix of `spec.local.path`. Absolute. */
  readonly hostDir: string;
  /** The same directory as mounted in the container; this is what is scanned. Absolute. */
  readonly mountDir: string;
  /** argv run to clean a Block volume (env LOCAL_PV_BLKDEVICE). Never empty. */
  readonly blockCleanerCommand: string[];
  readonly volumeMode: VolumeMode;
  readonly accessMode: AccessMode;
  /** `spec.local.fsType`; "" for none. */
  readonly fsType: string;
  /** Comma-separated Go `filepath.Match` globs over entry names. */
  readonly namePattern: string;
  /** Extra node selector terms, ORed with the hostname term. */
  readonly selector: NodeSelectorTerm[];
  /**
   * Ours: a pool class. Its directory is not scanned for volumes: each claim of the
   * class the scheduler puts on this node gets a new volume made in it, limited to the
   * claim's size. Absent for a class of discovered volumes.
   */
  readonly pool?: PoolBackend;
  /**
   * Ours, `lvm-thin` pool classes: the thin pool its volumes are made in, a logical
   * volume of the volume group `hostDir` names (`/dev/<volume group>`).
   */
  readonly thinPool?: string;
  /**
   * Ours, `lvm-thin` pool classes: how many times the thin pool's size its volumes'
   * sizes may add up to. 1 (the default): never more than it holds, so no tenant can
   * ever find it full; more lets tenants who all fill their volumes run it out of space.
   */
  readonly overcommit?: number;
  /** Ours, `xfs` and `ext4` pool classes: whose pods use it (PROJECT_QUOTA_TENANTS); absent means `user-namespaced`. */
  readonly projectQuotaTenants?: ProjectQuotaTenants;
}

/** The directory dialect: the Go static provisioner's ConfigMap, fully resolved. */
export interface ProvisionerConfig {
  readonly storageClassMap: Record<string, ClassConfig>;
  /** Node label keys copied onto each PV (only those the Node has). */
  readonly nodeLabelsForPV: string[];
  /** Extra PV labels; they win over copied node labels. */
  readonly labelsForPV: Record<string, string>;
  /** Accepted for compatibility and ignored with a warning (removed upstream). */
  readonly useAlphaAPI: boolean;
  readonly useJobForCleaning: boolean;
  readonly jobTolerations: Toleration[];
  /** Upstream's informer resync; here the shortest lifetime of a watch of the node's PVs (random in [min, 2×min)). */
  readonly minResyncPeriod: DurationMs;
  readonly useNodeNameOnly: boolean;
  readonly setPVOwnerRef: boolean;
  readonly removeNodeNotReadyTaint: boolean;
  readonly provisionerNotReadyNodeTaintKey: string;
  /** Extension: a cleanup that runs longer is killed and counted as failed. 0 = no limit. */
  readonly cleanupTimeout: DurationMs;
  /** Extension: a device cleanup that sends no I/O to its device this long is killed and counted as failed. 0 = never. */
  readonly cleanupStallTimeout: DurationMs;
  /** Extension: how many cleanups may run at once on a node. */
  readonly maxConcurrentCleanups: number;
  /** Extension: an Available PV whose volume is gone this long is deleted. */
  readonly missingVolumeGracePeriod: DurationMs;
  /** Extension: also delete a Released PV whose volume is gone (after the grace period). */
  readonly deleteMissingReleasedVolumes: boolean;
}

export const DEVICE_FS_TYPES = ['ext4', 'xfs', 'btrfs'] as const;
export type DeviceFsType = (typeof DEVICE_FS_TYPES)[number];

export const RECLAIM_POLICIES = ['Delete', 'Retain'] as const;
export type ReclaimPolicy = (typeof RECLAIM_POLICIES)[number];

/**
 * How much of a device the device dialect's wipe zeroes: `full`, every byte (no
 * tenant's data reaches the next one); `upstream-ranges`, only 100 MiB at 0, 1, 10,
 * 100 and 1000 GiB, as the device-selecting provisioner did, which leaves most of
 * the old data readable by the next tenant of the device.
 */
export const DEVICE_WIPES = ['full', 'upstream-ranges'] as const;
export type DeviceWipe = (typeof DEVICE_WIPES)[number];

/** The device dialect: one node's "PV spec ConfigMap", fully resolved. */
export interface DeviceSpecConfig {
  readonly storageClassName: string;
  readonly volumeMode: VolumeMode;
  /** Only with Filesystem; "" with Block. */
  readonly fsType: DeviceFsType | '';
  /** Absolute directory walked recursively for devices. */
  readonly deviceDir: string;
  /** A regular expression (JavaScript syntax, RE2-compatible subset) over device base names. */
  readonly deviceNameFilter: string;
  /**
   * Extension: the reclaim policy written on new PVs and honoured on release.
   * Upstream writes Retain but wipes anyway; `Delete` is what its users rely on.
   */
  readonly reclaimPolicy: ReclaimPolicy;
  /**
   * Extension: wipe and provision devices that carry a partition table or a
   * filesystem signature (upstream's behaviour). Off by default: such devices are
   * reported as holding data and left alone.
   */
  readonly wipeDevicesHoldingData: boolean;
  /**
   * Extension: how much of a device is zeroed before it is offered and after its PV
   * is released. `full` (the default) zeroes every byte; `upstream-ranges` zeroes only
   * upstream's five 100 MiB ranges and leaves most of the old data readable.
   */
  readonly wipe: DeviceWipe;
}

/** A problem or warning in a configuration, located by a dotted path. */
export interface ConfigIssue {
  /** e.g. `storageClassMap.fast-disks.volumeMode`. */
  readonly path: string;
  /** e.g. `"block" is not one of Filesystem, Block`. */
  readonly message: string;
  /** The class the issue is confined to, when it is (the agent then runs without that class). */
  readonly storageClass?: string;
  /**
   * An error the Go provisioner does not check (it loads the configuration and fails
   * later, or never): the agent runs on with the value's default, `plan` and the
   * construct refuse it.
   */
  readonly upstreamAccepts?: boolean;
}

/** A class the agent runs without, because of problems confined to it. */
export interface SkippedClass {
  readonly name: string;
  readonly errors: readonly ConfigIssue[];
}

/** ConfigMap data: key -> value, as the API object or a mounted directory presents it. */
export type ConfigMapData = Record<string, string>;

export type ParseResult<T> =
  | { readonly ok: true; readonly config: T; readonly warnings: ConfigIssue[]; readonly skippedClasses?: readonly SkippedClass[] }
  | { readonly ok: false; readonly errors: ConfigIssue[]; readonly warnings: ConfigIssue[] };

/*
 * Input types: what a construct (typed) or a ConfigMap (after YAML decoding)
 * hands to `resolveProvisionerConfig` / `resolveDeviceSpec`, the one place
 * defaults are applied. Every field is optional except those upstream requires.
 * Durations are whole milliseconds or Go duration text (`5m0s`).
 */

/** A class entry before defaults. */
export interface ClassConfigInput {
  /** Discovery directory as seen on the host. Absolute. */
  readonly hostDir: string;
  /** The same directory as mounted in the container. Absolute. */
  readonly mountDir: string;
  /** @default ["/scripts/quick_reset.sh"] */
  readonly blockCleanerCommand?: string[];
  /** @default Filesystem */
  readonly volumeMode?: VolumeMode;
  /** @default ReadWriteOnce */
  readonly accessMode?: AccessMode;
  /** @default "" (none; not allowed with Block) */
  readonly fsType?: string;
  /** @default "*" */
  readonly namePattern?: string;
  /** @default [] */
  readonly selector?: NodeSelectorTerm[];
  /** @default none: a class of discovered volumes */
  readonly pool?: PoolBackend;
  /** @default none; required by lvm-thin */
  readonly thinPool?: string;
  /** @default 1 (lvm-thin only) */
  readonly overcommit?: number;
  /** @default "user-namespaced" (xfs and ext4 only) */
  readonly projectQuotaTenants?: ProjectQuotaTenants;
}

/** The directory dialect before defaults. */
export interface ProvisionerConfigInput {
  /** @default {} */
  readonly storageClassMap?: Record<string, ClassConfigInput>;
  /** @default [] */
  readonly nodeLabelsForPV?: string[];
  /** @default {} */
  readonly labelsForPV?: Record<string, string>;
  /** @default false */
  readonly useAlphaAPI?: boolean;
  /** @default false */
  readonly useJobForCleaning?: boolean;
  /** @default [] */
  readonly jobTolerations?: Toleration[];
  /** @default 5m0s */
  readonly minResyncPeriod?: DurationMs | string;
  /** @default false */
  readonly useNodeNameOnly?: boolean;
  /** @default false */
  readonly setPVOwnerRef?: boolean;
  /** @default false */
  readonly removeNodeNotReadyTaint?: boolean;
  /** @default "" (required when removeNodeNotReadyTaint is true) */
  readonly provisionerNotReadyNodeTaintKey?: string;
  /** Extension. @default 0 (no limit) */
  readonly cleanupTimeout?: DurationMs | string;
  /** Extension. @default 10m */
  readonly cleanupStallTimeout?: DurationMs | string;
  /** Extension. @default 2 */
  readonly maxConcurrentCleanups?: number;
  /** Extension. @default 5m */
  readonly missingVolumeGracePeriod?: DurationMs | string;
  /** Extension. @default false */
  readonly deleteMissingReleasedVolumes?: boolean;
}

/** The device dialect before defaults. */
export interface DeviceSpecConfigInput {
  /** @default "local-storage" (with a warning: upstream requires the key) */
  readonly storageClassName?: string;
  readonly volumeMode: VolumeMode;
  /** Required with Filesystem; ignored with a warning with Block. */
  readonly fsType?: DeviceFsType | '';
  readonly deviceDir: string;
  readonly deviceNameFilter: string;
  /** Extension. @default Delete */
  readonly reclaimPolicy?: ReclaimPolicy;
  /** Extension. @default false */
  readonly wipeDevicesHoldingData?: boolean;
  /** Extension. @default full */
  readonly wipe?: DeviceWipe;
}
