import type { Duration } from 'cdk8s';
import type { k8s } from 'cdk8s-plus-28';

/**
 * Public props of {@link LocalVolumeProvisioner}. Every field is optional unless the
 * provisioner cannot work without it; every default is applied in one place,
 * `resolveProps` (resolve-props.ts). docs/construct.md maps each Helm chart value of
 * the Go provisioner to the prop here.
 */

/**
 * How a StorageClass object is written, but for its reclaimPolicy (which the device
 * dialect takes from its specs).
 */
export interface StorageClassObjectOptions {
  /**
   * Create the StorageClass object. Turn off when it is managed elsewhere; it must
   * still exist, because the runtime reads it.
   * @default true
   */
  readonly create?: boolean;
  /**
   * Mark it as the cluster's default StorageClass
   * (`storageclass.kubernetes.io/is-default-class: "true"`).
   * @default false
   */
  readonly isDefaultClass?: boolean;
  /**
   * `provisioner` of the StorageClass. Static local volumes have none; change it only
   * for the cluster autoscaler case (upstream issue 288).
   * @default 'kubernetes.io/no-provisioner'
   */
  readonly provisioner?: string;
  /**
   * `allowedTopologies` of the StorageClass.
   * @default - none (any node)
   */
  readonly allowedTopologies?: k8s.TopologySelectorTerm[];
  /**
   * `mountOptions` of the StorageClass; the runtime copies them onto each PV.
   * @default - none
   */
  readonly mountOptions?: string[];
}

/** How a StorageClass object for a class of local volumes is written. */
export interface StorageClassOptions extends StorageClassObjectOptions {
  /**
   * `reclaimPolicy` of the StorageClass, which the runtime copies onto each PV.
   * Only `Delete` (volumes are cleaned and offered again) and `Retain` are allowed.
   * @default 'Delete'
   */
  readonly reclaimPolicy?: ReclaimPolicy;
}

/** One class of local volumes discovered under a directory (Helm chart `classes[]`). */
export interface LocalStorageClassProps {
  /** Name of the StorageClass (and the key of `storageClassMap`). A DNS subdomain. */
  readonly name: string;
  /** Discovery directory on the host; prefix of each PV's `spec.local.path`. Absolute. */
  readonly hostDir: string;
  /**
   * Where `hostDir` is mounted in the container (with `HostToContainer` propagation);
   * the directory that is scanned. Absolute.
   * @default - the same as `hostDir`
   */
  readonly mountDir?: string;
  /**
   * `volumeMode` of the PVs.
   * @default 'Filesystem'
   */
  readonly volumeMode?: VolumeMode;
  /**
   * Access mode of the PVs.
   * @default 'ReadWriteOnce'
   */
  readonly accessMode?: AccessMode;
  /**
   * `spec.local.fsType` of the PVs: kubelet formats a Filesystem-mode block device
   * with it. Not allowed with `volumeMode: Block`.
   * @default - none
   */
  readonly fsType?: string;
  /**
   * Comma-separated Go `filepath.Match` globs; only entries whose name matches one
   * become volumes.
   * @default '*'
   */
  readonly namePattern?: string;
  /**
   * Extra node selector terms, ORed with the hostname term (volumes on shared disks).
   * @default - none
   */
  readonly selector?: k8s.NodeSelectorTerm[];
  /**
   * argv run to clean a Block volume (`LOCAL_PV_BLKDEVICE` names the device).
   * The image ships `/scripts/{quick_reset,shred,dd_zero,blkdiscard,fsclean}.sh`.
   * @default ['/scripts/quick_reset.sh'] (the configuration model's default)
   */
  readonly blockCleanerCommand?: string[];
  /**
   * The StorageClass object written for this class.
   * @default - a StorageClass with the defaults of StorageClassOptions
   */
  readonly storageClass?: StorageClassOptions;
  /**
   * Fewest volumes of this class every node running the provisioner should have; with
   * `prometheusRule`, a node with fewer raises `LocalVolumeProvisionerNodeWithoutVolumes`.
   * @default 0 (no alert)
   */
  readonly expectedVolumesPerNode?: number;
  /**
   * Makes this a pool class: `hostDir` is not scanned; instead each claim of the class
   * the scheduler puts on a node gets a new volume there, limited to the claim's size.
   * `hostDir` must be on a filesystem of that backend, prepared by the administrator.
   * The StorageClass's provisioner is then `pool.local-volume-provisioner.io`, and a
   * CSIDriver of that name makes the scheduler place claims by each node's free space.
   * @default - none: a class of discovered volumes
   */
  readonly pool?: PoolBackend;
  /**
   * `PoolBackend.LVM_THIN` only: the thin pool the class's volumes are made in, a logical
   * volume of the volume group `hostDir` names (`hostDir: '/dev/<volume group>'`). It
   * must zero the blocks it gives (LVM's default), or the class is refused on the node.
   * @default - none: required for `PoolBackend.LVM_THIN`
   */
  readonly thinPool?: string;
  /**
   * `PoolBackend.LVM_THIN` only: how many times the thin pool's size the sizes of its
   * volumes may add up to. 1 never promises more than the pool holds; above 1, tenants
   * who all fill their volumes run it out of space, and every volume in it fails its
   * writes (`LocalVolumeProvisionerThinPoolFilling` warns at 80%).
   * @default 1
   */
  readonly overcommit?: number;
  /**
   * `PoolBackend.XFS` and `PoolBackend.EXT4` only, and required by them: whose pods use
   * the class, and so when its limits hold (see `ProjectQuotaTenants`).
   * @default - none: required for `PoolBackend.XFS` and `PoolBackend.EXT4`
   */
  readonly projectQuotaTenants?: ProjectQuotaTenants;
}

/** One device-dialect "PV spec ConfigMap" (seed 003), selected per node by annotation. */
export interface DeviceSpecProps {
  /**
   * Name of the ConfigMap; nodes select it with the annotation
   * `local-pv-provisioner.cybozu.io/pv-spec-configmap=<name>`. A DNS subdomain.
   */
  readonly name: string;
  /** StorageClass of the PVs made from the matched devices. */
  readonly storageClassName: string;
  /** `volumeMode` of the PVs. */
  readonly volumeMode: VolumeMode;
  /**
   * Filesystem kubelet formats the device with: required with `volumeMode: Filesystem`,
   * not allowed with `Block`.
   * @default - none (only valid with Block)
   */
  readonly fsType?: DeviceFsType;
  /** Absolute directory walked recursively for devices, e.g. `/dev/disk/by-path`. */
  readonly deviceDir: string;
  /** Regular expression over device base names, e.g. `^pci-0000:3c:00\.0-sas-.*`. */
  readonly deviceNameFilter: string;
  /**
   * Reclaim policy written on new PVs, and honoured on release (`Delete`: wiped and
   * offered again).
   * @default 'Delete' (the configuration model's default)
   */
  readonly reclaimPolicy?: ReclaimPolicy;
  /**
   * Wipe and provision devices that carry a partition table or filesystem signature
   * (upstream's behaviour). Off: such devices are reported as holding data.
   * @default false
   */
  readonly wipeDevicesHoldingData?: boolean;
  /**
   * How much of a device is zeroed before it is offered and after its PV is released:
   * `full`, every byte; `upstream-ranges`, only 100 MiB at 0, 1, 10, 100 and 1000 GiB
   * (the device-selecting provisioner's wipe), which leaves most of the previous
   * tenant's data readable by the next one. Use `upstream-ranges` only where every
   * tenant of these disks may read every other tenant's data.
   * @default 'full'
   */
  readonly wipe?: DeviceWipe;
}

/** A StorageClass object for a device-dialect class. */
export interface DeviceStorageClassProps extends StorageClassObjectOptions {
  /** The `storageClassName` of one or more specs. */
  readonly name: string;
}

/** The device dialect: a second DaemonSet running the `devices` subcommand. */
export interface DeviceDialectProps {
  /** The PV spec ConfigMaps to write. At least one. */
  readonly specs: DeviceSpecProps[];
  /**
   * Name of the spec used on nodes without the annotation (`--default-pv-spec-configmap`).
   * @default - none: nodes without the annotation get no device PVs
   */
  readonly defaultSpec?: string;
  /**
   * Fallback period of a full pass (`--polling-interval`); new devices are seen sooner.
   * @default Duration.minutes(5)
   */
  readonly pollingInterval?: Duration;
  /**
   * StorageClass objects for the specs' classes; a class without an entry gets one with
   * the defaults, its reclaimPolicy taken from the specs.
   * @default - one default StorageClass per distinct `storageClassName`
   */
  readonly storageClasses?: DeviceStorageClassProps[];
}

/** The node-cleanup Deployment (upstream's node cleanup controller). */
export interface NodeCleanupProps {
  /**
   * StorageClasses whose claims on PVs of deleted nodes are deleted (`--storageclass-names`).
   * PVs of deleted nodes are deleted for every class.
   * @default - none: no claim is ever deleted
   */
  readonly storageClassNames?: string[];
  /**
   * How long a node must stay gone before its claims are deleted (`--pvc-deletion-delay`).
   * @default Duration.seconds(60)
   */
  readonly pvcDeletionDelay?: Duration;
  /**
   * How often PVs of gone nodes are looked for (`--stale-pv-discovery-interval`).
   * @default Duration.seconds(10)
   */
  readonly stalePvDiscoveryInterval?: Duration;
  /**
   * Replicas; one of them leads, on the Lease `local-volume-provisioner-node-cleanup`.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * Resources of its container.
   * @default - requests 10m CPU / 64Mi, limit 256Mi memory
   */
  readonly resources?: k8s.ResourceRequirements;
  /**
   * Node selector of its pods, merged with `kubernetes.io/os: linux`.
   * @default - linux nodes
   */
  readonly nodeSelector?: Record<string, string>;
  /**
   * Tolerations of its pods.
   * @default - none
   */
  readonly tolerations?: k8s.Toleration[];
  /**
   * Affinity of its pods.
   * @default - none
   */
  readonly affinity?: k8s.Affinity;
  /**
   * Priority class of its pods.
   * @default - none (the cluster's default priority)
   */
  readonly priorityClassName?: string;
}

/** The prometheus-operator ServiceMonitor for the metrics Service (Helm `serviceMonitor`). */
export interface ServiceMonitorOptions {
  /**
   * Namespace of the ServiceMonitor (where Prometheus looks for it).
   * @default - the provisioner's namespace
   */
  readonly namespace?: string;
  /**
   * Labels the Prometheus `serviceMonitorSelector` matches (Helm `additionalLabels`).
   * @default - none
   */
  readonly labels?: Record<string, string>;
  /**
   * Scrape interval.
   * @default Duration.seconds(10) (the Helm chart's)
   */
  readonly interval?: Duration;
  /**
   * Scrape timeout; at most `interval`.
   * @default - Prometheus' global scrape timeout
   */
  readonly scrapeTimeout?: Duration;
  /**
   * `relabelings` applied to targets before scraping.
   * @default - none
   */
  readonly relabelings?: RelabelConfig[];
  /**
   * `metricRelabelings` applied to samples before ingestion.
   * @default - none
   */
  readonly metricRelabelings?: RelabelConfig[];
  /**
   * Where the Service is looked for.
   * @default - the provisioner's namespace
   */
  readonly namespaceSelector?: NamespaceSelector;
  /**
   * Label of the Service whose value becomes the `job` label; `''` leaves it to
   * prometheus-operator (`job` is then the Service name).
   * @default 'app.kubernetes.io/name' (the Helm chart's: `job="local-volume-provisioner"`)
   */
  readonly jobLabel?: string;
}

/** A Prometheus relabel_config, as prometheus-operator spells it. */
export interface RelabelConfig {
  /**
   * Labels whose values, joined by `separator`, are matched by `regex`.
   * @default - none
   */
  readonly sourceLabels?: string[];
  /**
   * Separator of the joined source label values.
   * @default ';'
   */
  readonly separator?: string;
  /**
   * Label written by `replace` and `hashmod`.
   * @default - none
   */
  readonly targetLabel?: string;
  /**
   * Regular expression (RE2, anchored) over the joined values.
   * @default '(.*)'
   */
  readonly regex?: string;
  /**
   * Modulus of `hashmod`.
   * @default - none
   */
  readonly modulus?: number;
  /**
   * Replacement for `replace`, with `$1`-style references to regex groups.
   * @default '$1'
   */
  readonly replacement?: string;
  /**
   * What to do with a match.
   * @default RelabelAction.REPLACE
   */
  readonly action?: RelabelAction;
}

/** What a relabeling does with a match (Prometheus' `action`, as prometheus-operator writes it). */
export enum RelabelAction {
  /** Sets `targetLabel` to `replacement`. */
  REPLACE = 'replace',
  /** Keeps only the series (or targets) that match. */
  KEEP = 'keep',
  /** Drops the series (or targets) that match. */
  DROP = 'drop',
  /** Sets `targetLabel` to the `modulus` of a hash of the source labels. */
  HASHMOD = 'hashmod',
  /** Copies the labels whose names match to names given by `replacement`. */
  LABELMAP = 'labelmap',
  /** Removes the labels whose names match. */
  LABELDROP = 'labeldrop',
  /** Removes the labels whose names do not match. */
  LABELKEEP = 'labelkeep',
  /** Sets `targetLabel` to the source labels, lowercased. */
  LOWERCASE = 'lowercase',
  /** Sets `targetLabel` to the source labels, uppercased. */
  UPPERCASE = 'uppercase',
  /** Keeps what has the source labels equal to `targetLabel`. */
  KEEP_EQUAL = 'keepequal',
  /** Drops what has the source labels equal to `targetLabel`. */
  DROP_EQUAL = 'dropequal',
}

/** prometheus-operator NamespaceSelector. */
export interface NamespaceSelector {
  /**
   * Select every namespace.
   * @default false
   */
  readonly any?: boolean;
  /**
   * Select these namespaces.
   * @default - none
   */
  readonly matchNames?: string[];
}

/** The optional PrometheusRule with the provisioner's alerts. */
export interface PrometheusRuleOptions {
  /**
   * Namespace of the PrometheusRule.
   * @default - the provisioner's namespace
   */
  readonly namespace?: string;
  /**
   * Labels the Prometheus `ruleSelector` matches.
   * @default - none
   */
  readonly labels?: Record<string, string>;
  /**
   * Labels added to every alert (e.g. `team`); `severity` is set per alert.
   * @default - none
   */
  readonly alertLabels?: Record<string, string>;
  /**
   * Base URL of runbooks; each alert gets `runbook_url: <base>#<alert name in lower case>`.
   * @default - no runbook_url
   */
  readonly runbookBaseUrl?: string;
}

/** The optional Grafana dashboard ConfigMap, picked up by the Grafana sidecar. */
export interface GrafanaDashboardOptions {
  /**
   * Namespace of the ConfigMap (where the sidecar looks).
   * @default - the provisioner's namespace
   */
  readonly namespace?: string;
  /**
   * Labels of the ConfigMap; `grafana_dashboard: "1"` is always set.
   * @default - none besides grafana_dashboard
   */
  readonly labels?: Record<string, string>;
  /**
   * Grafana folder (the sidecar's `grafana_folder` annotation).
   * @default - the sidecar's default folder
   */
  readonly folder?: string;
}

/** Props of {@link LocalVolumeProvisioner}. */
export interface LocalVolumeProvisionerProps {
  /**
   * Base name of every object (DaemonSet, ServiceAccount, ConfigMap, roles...).
   * Use another one for a second instance in the same cluster.
   * @default 'local-volume-provisioner'
   */
  readonly name?: string;
  /**
   * Namespace of the namespaced objects, and of cleanup Jobs (`MY_NAMESPACE`).
   * @default - the chart's namespace, else `name`
   */
  readonly namespace?: string;
  /**
   * Create the Namespace, labelled `pod-security.kubernetes.io/enforce: privileged`
   * (the agent's pods are privileged and use hostPath). Never for a namespace Kubernetes
   * creates (`default`, `kube-*`), and never by two provisioners of one app.
   * A namespace that is not created must allow privileged pods.
   * @default - true when the namespace is the default one (named after the instance); false when `namespace` or the chart names it, since it may hold other workloads
   */
  readonly createNamespace?: boolean;

  /**
   * Classes of volumes discovered under directories (Helm `classes`); one StorageClass
   * and one hostPath mount each. Without classes (and without `devices`) nothing runs.
   * @default - none
   */
  readonly storageClasses?: LocalStorageClassProps[];
  /**
   * The device dialect (seed 003): devices matched by a name filter, configured per node.
   * @default - off
   */
  readonly devices?: DeviceDialectProps;
  /**
   * The node-cleanup Deployment: deletes PVs (and, for opted-in classes, claims) of
   * deleted nodes.
   * @default - off
   */
  readonly nodeCleanup?: NodeCleanupProps;

  /**
   * Node label keys copied onto each PV (Helm `nodeLabels`).
   * @default - none
   */
  readonly nodeLabelsForPV?: string[];
  /**
   * Extra labels on each PV; they win over copied node labels.
   * @default - none
   */
  readonly labelsForPV?: Record<string, string>;
  /**
   * Clean Block volumes in a Job (in the provisioner's namespace) instead of in the
   * agent, as upstream; Filesystem volumes are always cleaned in the agent. Adds the
   * Role that lets the agent manage those Jobs.
   * @default false
   */
  readonly useJobForCleaning?: boolean;
  /**
   * Tolerations of cleanup Jobs (with `useJobForCleaning`). A Job runs on the volume's
   * node, so it must tolerate that node's taints as the agent does.
   * @default - the agent's `tolerations`, without the startup-taint toleration (the Helm chart copies `tolerations`)
   */
  readonly jobTolerations?: k8s.Toleration[];
  /**
   * Upstream's informer resync period; here how long each watch of the node's PVs lasts
   * before it is renewed, randomised in [min, 2×min). Read when the agent starts.
   * @default Duration.minutes(5)
   */
  readonly minResyncPeriod?: Duration;
  /**
   * Provisioner name `local-volume-provisioner-<node>` instead of `...-<node>-<nodeUID>`.
   * @default false
   */
  readonly useNodeNameOnly?: boolean;
  /**
   * Give each PV an ownerReference to its Node, so PVs go with their Node.
   * @default false
   */
  readonly setPVOwnerRef?: boolean;
  /**
   * Remove the startup taint `provisionerNotReadyNodeTaintKey` from the Node once the
   * first discovery pass is done. Adds nodes update/patch to the ClusterRole and a
   * toleration for the taint.
   * @default false
   */
  readonly removeNodeNotReadyTaint?: boolean;
  /**
   * Key of that startup taint.
   * @default 'sig-storage-local-static-provisioner/agent-not-ready' (the Helm chart's)
   */
  readonly provisionerNotReadyNodeTaintKey?: string;
  /**
   * A cleanup running longer is killed and counted as failed (a Job gets it as
   * `activeDeadlineSeconds`). Leave it unset for `shred`-style cleaners, which run
   * for days on large disks; `cleanupStallTimeout` stops a cleaner that hangs.
   * @default - no limit (the configuration model's default)
   */
  readonly cleanupTimeout?: Duration;
  /**
   * A device cleanup (the class's command, in the agent or in a Job) during which
   * the device sees no I/O for this long is killed, counted as failed and retried
   * after a backoff.
   * @default - 10 minutes (the configuration model's default)
   */
  readonly cleanupStallTimeout?: Duration;
  /**
   * How many cleanups may run at once on a node.
   * @default - the configuration model's default
   */
  readonly maxConcurrentCleanups?: number;
  /**
   * An Available PV whose volume is gone this long is deleted.
   * @default - the configuration model's default
   */
  readonly missingVolumeGracePeriod?: Duration;
  /**
   * Also delete a Released PV whose volume is gone (after the grace period).
   * @default false
   */
  readonly deleteMissingReleasedVolumes?: boolean;

  /**
   * Fallback period of a full discovery pass (`--discovery-period`).
   * @default Duration.seconds(10)
   */
  readonly discoveryPeriod?: Duration;
  /**
   * How often the mounted ConfigMap is re-read (`--config-sync-period`).
   * @default Duration.seconds(5)
   */
  readonly configSyncPeriod?: Duration;
  /**
   * How often every volume of an xfs or ext4 pool class whose tenants are not
   * user-namespaced is walked for files given another project (`--project-scan-period`):
   * such a file is back in its volume's project within this period plus the walk of every
   * volume (docs/operations.md). Shorter costs the node more CPU and disk reads.
   * @default Duration.minutes(1)
   */
  readonly projectScanPeriod?: Duration;
  /**
   * Steady API requests per second per agent (`--kube-api-qps`).
   * @default 100
   */
  readonly kubeApiQps?: number;
  /**
   * API requests allowed in a burst (`--kube-api-burst`).
   * @default 200
   */
  readonly kubeApiBurst?: number;
  /**
   * Log level (`--log-level`).
   * @default LogLevel.INFO
   */
  readonly logLevel?: LogLevel;
  /**
   * Port of `/metrics`, `/healthz` and `/readyz` (container port `metrics`).
   * @default 8080
   */
  readonly metricsPort?: number;
  /**
   * Host directory of each node's volume record (`--state-dir`): which volumes are clean,
   * which a tenant used. Mounted at the same path into both agents, which share it. It must
   * outlive pods, upgrades and reboots (not a tmpfs): without it, every volume whose PV
   * goes while no agent watches is cleaned before it is offered again, and volumes never
   * seen are offered only when they hold nothing.
   * @default '/var/lib/local-volume-provisioner'
   */
  readonly stateDirectory?: string;
  /**
   * Pool classes' new volumes are CSI volumes of the directory agent's own node plugin
   * (`--kubelet-dir`): kubelet asks the agent to mount each into its pods and for its
   * use (a btrfs volume's is its limit, not the filesystem's). A pod on such a claim
   * starts only while its node's agent runs (kubelet retries until it does); an agent
   * restart never unmounts a running pod's volume. false: `local` PVs, which kubelet
   * mounts without the agent. PVs already made stay as they are either way.
   * @default true
   */
  readonly poolVolumesAsCsi?: boolean;
  /**
   * kubelet's root directory on the nodes (its `--root-dir`), where the agent serves its
   * node plugin: mounted into the directory agent at the same path, with Bidirectional
   * mount propagation (the mounts it makes for pods reach the node). Used with pool
   * classes and `poolVolumesAsCsi`.
   * @default '/var/lib/kubelet'
   */
  readonly kubeletDirectory?: string;

  /**
   * The claim guard: a ValidatingAdmissionPolicy (Kubernetes 1.30 or later) with which
   * the API server itself refuses to clear or change the claimRef of a PV of ours once it
   * has been bound, and refuses the creation of a PV on the provisioner's storage
   * (its directories, by path, or its classes) by anyone but the agents' ServiceAccount,
   * so that no other claim can be bound to a volume that holds a tenant's data, even
   * while no agent runs (a crash loop, an upgrade). Such a volume is offered again by
   * deleting its PV: the agent cleans it first (`volumes accept` gives a kept one to a
   * named claim). The agents check the guard is in force and say so when it is not
   * (metric `local_volume_provisioner_claim_guard_active`). Turn it off only for a
   * cluster that has no ValidatingAdmissionPolicy API.
   * @default true
   */
  readonly claimGuard?: boolean;
  /**
   * The claim routing, where a pool class is configured: a MutatingAdmissionPolicy
   * (Kubernetes 1.36 or later) with which the API server labels each claim of a pool class
   * with the node the scheduler put it on, so that each node's agent lists and watches
   * only its own claims: a claim written anywhere costs the other nodes nothing. The
   * agents check it is in force and, where it is not, watch every claim of the cluster as
   * before, saying so (metric `local_volume_provisioner_claim_routing_active`). One agent
   * at a time labels the claims made before it was installed. Turn it off only for a
   * cluster that has no MutatingAdmissionPolicy API.
   * @default true
   */
  readonly claimRouting?: boolean;
  /**
   * Create the ClusterRole, Role and bindings (Helm `rbac.create`).
   * @default true
   */
  readonly createRbac?: boolean;
  /**
   * Rules appended, as given, to the agents' ClusterRole (Helm `rbac.extraRules`).
   * @default - none
   */
  readonly extraRbacRules?: k8s.PolicyRule[];
  /**
   * Create the ServiceAccount (Helm `serviceAccount.create`).
   * @default true
   */
  readonly createServiceAccount?: boolean;
  /**
   * Name of the agent's ServiceAccount (Helm `serviceAccount.name`).
   * @default - `name`; with `createServiceAccount: false`, the namespace's `default` ServiceAccount (as the Helm chart)
   */
  readonly serviceAccountName?: string;

  /**
   * Image of the agent, of cleanup Jobs (`JOB_CONTAINER_IMAGE`) and of node cleanup.
   * @default - `DEFAULT_IMAGE`: ghcr.io/local-volume-provisioner/local-volume-provisioner:<package.json version>
   */
  readonly image?: string;
  /**
   * Image pull policy.
   * @default ImagePullPolicy.IF_NOT_PRESENT
   */
  readonly imagePullPolicy?: ImagePullPolicy;
  /**
   * Names of Secrets used to pull the image.
   * @default - none
   */
  readonly imagePullSecrets?: string[];
  /**
   * Resources of the agent container.
   * @default - requests 50m CPU / 192Mi memory (an idle agent's RSS is 60–100 MiB, docs/benchmarks.md), limit 512Mi memory (no CPU limit: throttling only slows cleanups)
   */
  readonly resources?: k8s.ResourceRequirements;
  /**
   * Run the agent privileged (needed to open, wipe and inspect block devices).
   * @default true
   */
  readonly privileged?: boolean;
  /**
   * Security context of the agent container, written as given, with `privileged` (the
   * prop above) added when it sets none (Helm `securityContext`).
   * @default - `privileged`, `runAsUser: 0`, `runAsNonRoot: false`, `readOnlyRootFilesystem: false`
   */
  readonly securityContext?: k8s.SecurityContext;
  /**
   * Extra environment variables of the agent container, after the construct's own
   * (`MY_NODE_NAME`, `MY_NAMESPACE`, `JOB_CONTAINER_IMAGE`), which they may not redefine.
   * @default - none
   */
  readonly env?: k8s.EnvVar[];
  /**
   * Path of a kubeconfig file in the agent container, used instead of the ServiceAccount
   * (env `KUBECONFIG`, Helm `kubeConfigEnv`). Mount the file with `extraVolumes` and
   * `extraVolumeMounts`.
   * @default - none: the in-cluster ServiceAccount
   */
  readonly kubeConfigEnv?: string;
  /**
   * Share the host's PID namespace (Helm `hostPID`). With it the agent sees every pod's
   * mounts and processes, so a Released volume still mounted by a pod that did not go,
   * or still written to, is not emptied under it; without it the agent sees only its own
   * container's (docs/operations.md, "What the agent guarantees"). The chart's default is
   * false; the agent is privileged either way.
   * @default true
   */
  readonly hostPid?: boolean;
  /**
   * Mount the host's `/dev` (block volumes, device symlinks).
   * @default true
   */
  readonly mountDevVolume?: boolean;
  /**
   * Extra annotations on the agent's pods.
   * @default - none
   */
  readonly podAnnotations?: Record<string, string>;
  /**
   * Extra labels on the agent's pods.
   * @default - none
   */
  readonly podLabels?: Record<string, string>;
  /**
   * Priority class of the agent's pods. `system-node-critical` suits a node agent, but
   * managed clusters often limit it by ResourceQuota outside `kube-system`.
   * @default - none (the cluster's default priority), as in the Helm chart
   */
  readonly priorityClassName?: string;
  /**
   * Node selector, merged with `kubernetes.io/os: linux`.
   * @default - every Linux node
   */
  readonly nodeSelector?: Record<string, string>;
  /**
   * Tolerations of the agent's pods. The startup taint is tolerated as well when
   * `removeNodeNotReadyTaint` is on.
   * @default - tolerate every taint, like other node storage agents: disks are often on dedicated, tainted nodes
   */
  readonly tolerations?: k8s.Toleration[];
  /**
   * Affinity of the agent's pods.
   * @default - none
   */
  readonly affinity?: k8s.Affinity;
  /**
   * DaemonSet update strategy.
   * @default - RollingUpdate, maxUnavailable 1
   */
  readonly updateStrategy?: k8s.DaemonSetUpdateStrategy;
  /**
   * Init containers of the agent's pods.
   * @default - none
   */
  readonly initContainers?: k8s.Container[];
  /**
   * Extra volumes of the agent's pods (Helm `additionalVolumes`).
   * @default - none
   */
  readonly extraVolumes?: k8s.Volume[];
  /**
   * Extra volume mounts of the agent container (Helm `additionalVolumeMounts`).
   * @default - none
   */
  readonly extraVolumeMounts?: k8s.VolumeMount[];
  /**
   * Liveness probe of the agent.
   * @default - GET /healthz on `metrics` every 10s, 3 failures
   */
  readonly livenessProbe?: k8s.Probe;
  /**
   * Readiness probe of the agent.
   * @default - GET /readyz on `metrics` every 10s
   */
  readonly readinessProbe?: k8s.Probe;
  /**
   * Startup probe of the agent.
   * @default - none (the liveness probe's endpoint answers from the start)
   */
  readonly startupProbe?: k8s.Probe;

  /**
   * Create a Service exposing the agents' metrics port (needed by the ServiceMonitor).
   * @default true
   */
  readonly metricsService?: boolean;
  /**
   * Create a prometheus-operator ServiceMonitor (Helm `serviceMonitor`).
   * @default - none
   */
  readonly serviceMonitor?: ServiceMonitorOptions;
  /**
   * Create a prometheus-operator PrometheusRule with the provisioner's alerts.
   * @default - none
   */
  readonly prometheusRule?: PrometheusRuleOptions;
  /**
   * Create a Grafana dashboard ConfigMap for the Grafana sidecar.
   * @default - none
   */
  readonly grafanaDashboard?: GrafanaDashboardOptions;
}

/** How much the agents log (`--log-level`). */
export enum LogLevel {
  TRACE = 'trace',
  DEBUG = 'debug',
  INFO = 'info',
  WARN = 'warn',
  ERROR = 'error',
}

/** When the kubelet pulls the agents' image (a container's `imagePullPolicy`). */
export enum ImagePullPolicy {
  /** Every time a container starts. */
  ALWAYS = 'Always',
  /** Only when the node does not have the image. */
  IF_NOT_PRESENT = 'IfNotPresent',
  /** Never: the image must be on the node. */
  NEVER = 'Never',
}

/** How a PV is consumed (a PV's `volumeMode`). */
export enum VolumeMode {
  /** A filesystem, mounted into the pod. */
  FILESYSTEM = 'Filesystem',
  /** The raw block device, given to the pod as a device. */
  BLOCK = 'Block',
}

/** How many nodes and pods may use a PV at once (a PV's `accessModes`). */
export enum AccessMode {
  /** Read-write by one node. */
  READ_WRITE_ONCE = 'ReadWriteOnce',
  /** Read-only by many nodes (a local volume has one node, so: its pods). */
  READ_ONLY_MANY = 'ReadOnlyMany',
  /** Read-write by many nodes (a local volume has one node, so: its pods). */
  READ_WRITE_MANY = 'ReadWriteMany',
  /** Read-write by one pod. */
  READ_WRITE_ONCE_POD = 'ReadWriteOncePod',
}

/** What happens to a volume once its claim is deleted (a StorageClass's and PV's `reclaimPolicy`). */
export enum ReclaimPolicy {
  /** The volume is cleaned and offered again as a new PV. */
  DELETE = 'Delete',
  /** The PV and its data stay until an administrator deletes the PV. */
  RETAIN = 'Retain',
}

/** The filesystem kubelet formats a device dialect's Filesystem-mode device with. */
export enum DeviceFsType {
  EXT4 = 'ext4',
  XFS = 'xfs',
  BTRFS = 'btrfs',
}

/** How a pool class limits each volume to its claim's size. */
export enum PoolBackend {
  /** A btrfs subvolume per volume, in a quota group of its own (simple quotas, Linux 6.7+). */
  BTRFS = 'btrfs',
  /**
   * A directory per volume on XFS mounted with `prjquota`, with a project ID of its own
   * and that project's hard limits. The class says whose pods use it
   * (`projectQuotaTenants`): the limit binds pods in a user namespace of their own
   * (`hostUsers: false`) at once, others once the agent's walk finds what they moved out.
   */
  XFS = 'xfs',
  /**
   * A directory per volume on ext4 made with `-O quota,project` and mounted with
   * `prjquota`, limited as for XFS.
   */
  EXT4 = 'ext4',
  /**
   * A thin logical volume per volume, of the claim's size, in the class's `thinPool`
   * (`hostDir: '/dev/<volume group>'`): Block claims get the device, Filesystem ones the
   * class's `fsType` (ext4 by default, or xfs) on it. Needs LVM on the node, `hostPid`
   * and `mountDevVolume`.
   */
  LVM_THIN = 'lvm-thin',
}

/**
 * Whose pods use an XFS or ext4 pool class. A pod in the host's user namespace (the
 * default on containerd and CRI-O) can move the files it owns out of its volume's
 * project, to no limit or to a neighbour's; the agent walks every volume and sets each
 * back, within the bound docs/operations.md gives. A choice, never a default.
 */
export enum ProjectQuotaTenants {
  /**
   * Only pods with a user namespace of their own (`hostUsers: false`): the kernel keeps
   * them in their project, and the limits hold at once. A file the walk finds moved out
   * is said as a pod of the host's user namespace using the class.
   */
  USER_NAMESPACED = 'user-namespaced',
  /**
   * Any pod. What a pod of the host's user namespace moves out of its project counts
   * against no limit, or against a neighbour's (whose writes may then be refused), until
   * the walk finds it: up to a minute plus the time the walk takes through the class's
   * volumes on the node (about 2 600 files a second of work, a quarter of a core). Where
   * that is not acceptable, use `PoolBackend.BTRFS` or `PoolBackend.LVM_THIN`.
   */
  ANY_LIMITS_RESTORED_BY_SCAN = 'any-limits-restored-by-scan',
}

/** How much of a device the device dialect's wipe zeroes. */
export enum DeviceWipe {
  /** Every byte: no tenant's data reaches the next one. */
  FULL = 'full',
  /**
   * Only 100 MiB at 0, 1, 10, 100 and 1000 GiB, as the device-selecting provisioner
   * did: most of the previous tenant's data stays readable by the next.
   */
  UPSTREAM_RANGES = 'upstream-ranges',
}
