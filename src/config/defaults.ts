import { ClassConfig, DeviceSpecConfig, DurationMs, ProvisionerConfig } from './model';

/*
 * Upstream's defaults (and ours for the extension keys), in one place.
 * Only the resolvers apply them; everything else reads resolved configs.
 */

export const DEFAULT_BLOCK_CLEANER_COMMAND: readonly string[] = ['/scripts/quick_reset.sh'];
export const DEFAULT_NAME_PATTERN = '*';

const MINUTE: DurationMs = 60_000;

/** Defaults of a class entry's optional fields. */
export const CLASS_DEFAULTS: Omit<ClassConfig, 'hostDir' | 'mountDir'> = {
  blockCleanerCommand: [...DEFAULT_BLOCK_CLEANER_COMMAND],
  volumeMode: 'Filesystem',
  accessMode: 'ReadWriteOnce',
  fsType: '',
  namePattern: DEFAULT_NAME_PATTERN,
  selector: [],
};

/** Defaults of every top-level key of the directory dialect. */
export const PROVISIONER_DEFAULTS: ProvisionerConfig = {
  storageClassMap: {},
  nodeLabelsForPV: [],
  labelsForPV: {},
  useAlphaAPI: false,
  useJobForCleaning: false,
  jobTolerations: [],
  minResyncPeriod: 5 * MINUTE,
  useNodeNameOnly: false,
  setPVOwnerRef: false,
  removeNodeNotReadyTaint: false,
  provisionerNotReadyNodeTaintKey: '',
  // None, as upstream: `shred.sh 2` on a large disk runs for days. The stall timeout catches a hung cleaner.
  cleanupTimeout: 0,
  // Ten minutes without a single I/O to the device: no cleaner that is working is that quiet.
  cleanupStallTimeout: 10 * MINUTE,
  // Two keeps a node's disks busy without starving the workloads on it.
  maxConcurrentCleanups: 2,
  // Long enough to ride out a remount or a disk being re-seated.
  missingVolumeGracePeriod: 5 * MINUTE,
  // A Released PV may still be wanted for its data; deleting it is opt-in.
  deleteMissingReleasedVolumes: false,
};

/** The class the device provisioner's README promised; used when the key is missing. */
export const DEFAULT_DEVICE_STORAGE_CLASS_NAME = 'local-storage';

export const DEVICE_SPEC_DEFAULTS: Pick<DeviceSpecConfig, 'reclaimPolicy' | 'wipeDevicesHoldingData' | 'wipe'> = {
  reclaimPolicy: 'Delete',
  wipeDevicesHoldingData: false,
  // Every byte: upstream's five 100 MiB ranges leave most of the last tenant's data readable.
  wipe: 'full',
};

/**
 * The node agent's API rate limit (`--kube-api-qps`, `--kube-api-burst`), shared by
 * the bin and the construct. Higher than client-go's 5/10: an agent is quiet
 * (watch-based) except when volumes appear, and then 1 000 new volumes should be
 * offered in seconds, not minutes.
 */
export const DEFAULT_KUBE_API_QPS = 100;
export const DEFAULT_KUBE_API_BURST = 200;

/**
 * Where each node keeps its volume record (runtime/record): a host directory, the same
 * path in the container, mounted by the construct's DaemonSets and shared by both dialects.
 */
export const DEFAULT_STATE_DIR = '/var/lib/local-volume-provisioner';
