/**
 * The catalogue of Kubernetes Event reasons the runtime records. One place, so the
 * recorder, the docs (docs/operations.md) and alerting agree on the words.
 *
 * An Event is recorded on the PV it is about; problems that have no PV yet (an entry
 * that cannot be offered) or that concern the whole node (configuration) go on the
 * Node. Messages are one line and name the path, class or object concerned.
 */

export type EventType = 'Normal' | 'Warning';
/** The kind of object an Event is recorded on. */
export type EventRegarding = 'PersistentVolume' | 'Node' | 'PersistentVolumeClaim' | 'VolumeSnapshot' | 'VolumeSnapshotContent';

export interface EventReasonSpec {
  /** The Event's `reason` (CamelCase, as Kubernetes components write them). */
  readonly reason: string;
  readonly type: EventType;
  /** The kind of object an Event is recorded on (each of them, when several). */
  readonly regarding: EventRegarding | readonly EventRegarding[];
  /** What it means and what happens next, in one line. */
  readonly meaning: string;
  /** A typical message. */
  readonly example: string;
}

export const EventReasons = {
  // Directory and device discovery.
  ProvisioningSucceeded: {
    reason: 'ProvisioningSucceeded',
    type: 'Normal',
    regarding: 'PersistentVolume',
    meaning: 'A PV was created for a discovered volume or device; it is Available.',
    example: 'created for "/mnt/disks/vol1" (10Gi, Filesystem) in StorageClass "fast-disks"',
  },
  VolumeAdopted: {
    reason: 'VolumeAdopted',
    type: 'Normal',
    regarding: 'PersistentVolume',
    meaning: 'An existing PV of this node (e.g. created by the Go provisioner) was taken over and labelled; no new PV is made.',
    example: 'adopted PV for "/mnt/disks/vol1": added label local.storage.k8s.io/node=worker-1',
  },
  VolumeNotMountPoint: {
    reason: 'VolumeNotMountPoint',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A directory in a Filesystem class is not a mount point in the container (not mounted, or mount propagation missing); no PV until it is.',
    example: 'path "/mnt/disks/vol1" is not a valid mount point',
  },
  VolumeRejected: {
    reason: 'VolumeRejected',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A discovery entry cannot be offered (regular file, broken symlink, directory in a Block class, unreadable size); the other entries go on.',
    example: 'path "/mnt/disks/notes.txt" in StorageClass "fast-disks" is a regular file, not a directory or block device',
  },
  DuplicatePath: {
    reason: 'DuplicatePath',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'Another PV already has this entry\'s path (e.g. the class was renamed); no second PV is created for it.',
    example: 'path "/mnt/disks/vol1" already belongs to PV "local-pv-1a2b3c4d" (StorageClass "old-name")',
  },
  NameCollision: {
    reason: 'NameCollision',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'Two entries map to the same PV name, or the name is taken by a PV of another path or node; neither is changed.',
    example: 'PV name "local-worker-1-sda" is wanted by "/dev/disk/by-id/a" and "/dev/disk/by-id/b"',
  },
  StorageClassMissing: {
    reason: 'StorageClassMissing',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A configured StorageClass object does not exist; its volumes get PVs once it is created.',
    example: 'StorageClass "fast-disks" not found; 3 volumes under "/mnt/disks" wait for it',
  },
  ProvisioningFailed: {
    reason: 'ProvisioningFailed',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'Creating a PV failed with an error retrying will not fix (Forbidden, Invalid); retried after the next change or period.',
    example: 'creating PV "local-pv-1a2b3c4d" for "/mnt/disks/vol1": persistentvolumes is forbidden',
  },
  // Device dialect.
  NoPVSpecConfigMap: {
    reason: 'NoPVSpecConfigMap',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'Neither the Node annotation nor --default-pv-spec-configmap names a PV spec ConfigMap; nothing is provisioned on this node.',
    example: 'no PV spec ConfigMap: set the annotation local-pv-provisioner.cybozu.io/pv-spec-configmap or --default-pv-spec-configmap',
  },
  PVSpecChanged: {
    reason: 'PVSpecChanged',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'The PV spec changed while PVs made from the old spec remain; they keep the old spec until deleted, new PVs follow the new one.',
    example: '2 PVs still have volumeMode "Block" from the previous spec; new PVs use "Filesystem"',
  },
  DeviceHoldsData: {
    reason: 'DeviceHoldsData',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A device with no PV carries a filesystem, partition table or other signature; it is neither wiped nor offered until an operator clears it.',
    example: 'device "/dev/disk/by-path/pci-0000:3c:00.0-sas-phy0-lun-0" holds an ext4 signature; not wiped',
  },
  DeviceError: {
    reason: 'DeviceError',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A device could not be opened, sized, wiped or turned into a PV; the other devices go on (local_pv_provisioner_error_devices).',
    example: 'device "/dev/disk/by-id/nvme-x": open: EIO',
  },
  // Configuration and permissions.
  PermissionMissing: {
    reason: 'PermissionMissing',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'The agent runs with less RBAC than it can use (e.g. the Go provisioner\'s ClusterRole); it works as the replaced provisioner did, and the message names the rule to add for what it cannot do.',
    example: 'this agent may not patch PersistentVolumes (the Go provisioner\'s RBAC): Released volumes are cleaned as the Go provisioner cleans them, … this node\'s PVs are found as the Go provisioner finds them, by watching every PV in the cluster … Add {apiGroups: [""], resources: ["persistentvolumes"], verbs: ["patch"]} to the agent\'s ClusterRole and restart it for the cleanup finalizer and a watch of this node\'s PVs only, …',
  },
  ConfigInvalid: {
    reason: 'ConfigInvalid',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'The configuration (mounted ConfigMap or PV spec ConfigMap) is invalid; the last good one stays in use.',
    example: 'storageClassMap.fast-disks.volumeMode: "block" is not one of Filesystem, Block',
  },
  StorageClassSkipped: {
    reason: 'StorageClassSkipped',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A class of the configuration has problems confined to it, so the agent runs without it (its volumes are not offered or cleaned, its PVs are left as they are) and the other classes run. The Go provisioner refused the whole configuration for some of these problems and loaded the class only to fail later for others.',
    example: 'storageClassMap.fast-disks is left out: storageClassMap.fast-disks.hostDir: "mnt/disks" is not an absolute path; the other classes run',
  },
  // Cleanup of Released PVs.
  CleanupStarted: {
    reason: 'CleanupStarted',
    type: 'Normal',
    regarding: 'PersistentVolume',
    meaning: 'The Released PV\'s volume is being cleaned, in this process or by a Job.',
    example: 'cleaning "/mnt/disks/vol1" with /scripts/shred.sh 2 (process)',
  },
  CleanupSucceeded: {
    reason: 'CleanupSucceeded',
    type: 'Normal',
    regarding: 'PersistentVolume',
    meaning: 'Cleaning finished and the PV goes (deleted, or its cleanup finalizer removed so its deletion completes); the volume is offered again on the next pass.',
    example: 'cleaned "/mnt/disks/vol1" with /scripts/shred.sh in the agent in 42.0s; PV deleted',
  },
  CleanupFailed: {
    reason: 'CleanupFailed',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'The cleaner failed (non-zero exit, failed Job); the PV stays Released and cleaning is retried. A failed Job\'s Event quotes its '
      + 'cleaner\'s end and last output lines, read from its pod (the construct grants `list` on pods in its namespace; under the Helm '
      + 'chart\'s RBAC, only the Job\'s condition).',
    example: 'cleaner /scripts/shred.sh exited with code 1: shred: /dev/loop3: Input/output error',
  },
  CleanupTimedOut: {
    reason: 'CleanupTimedOut',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'The cleaner ran past `cleanupTimeout` (if set) and was stopped; the PV stays Released and cleaning is retried. A cleaner whose device saw no I/O for `cleanupStallTimeout` is stopped too, reported as `CleanupFailed` with the reason `no I/O reached the device for …`.',
    example: 'cleaner /scripts/shred.sh 2 still running after 2h0m0s; stopped',
  },
  CleanupRefused: {
    reason: 'CleanupRefused',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'A PV of ours to be cleaned cannot be cleaned here (its class is not configured, its path is outside every configured directory, it is not what its volumeMode says); nothing is wiped and the PV is kept until it can be.',
    example: 'PV "local-pv-1a2b3c4d" cannot be cleaned here: StorageClass "old-disks" is not configured on this node',
  },
  VolumeIdentityMismatch: {
    reason: 'VolumeIdentityMismatch',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'The PV\'s path now holds another disk or filesystem than the one recorded when the PV was made (a device name or mount moved); it is never cleaned and its volume is not offered again.',
    example: '"/mnt/disks/sdb" is not the volume PV "local-pv-1a2b3c4d" was made for: it recorded wwid:naa.5000c500a0b1c2d3, the path now holds wwid:naa.5000c500e4f5a6b7',
  },
  VolumeInUse: {
    reason: 'VolumeInUse',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'The volume to be cleaned (or a pool volume to be destroyed) is still mounted elsewhere or held open by a process (e.g. a pod whose container did not stop); it is cleaned (destroyed) once nothing uses it.',
    example: '"/mnt/disks/vol1" is still in use: mounted at /var/lib/kubelet/pods/…/volumes/kubernetes.io~local-volume/local-pv-1a2b3c4d (mount namespace of pid 1 systemd)',
  },
  VolumeFailedDelete: {
    reason: 'VolumeFailedDelete',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'Deleting a Released PV failed at the API (before its cleanup with the finalizer, after it without); retried, its volume cleaned again first when it was cleaned (upstream\'s reason, kept).',
    example: 'deleting PV "local-pv-1a2b3c4d": the server is currently unable to handle the request',
  },
  VolumeUnsupportedReclaimPolicy: {
    reason: 'VolumeUnsupportedReclaimPolicy',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'A Released PV has reclaim policy Recycle, which local volumes do not support; it is left as is (upstream\'s reason, kept).',
    example: 'PV "local-pv-1a2b3c4d" has reclaim policy Recycle, which local volumes do not support; its data is kept',
  },
  VolumeUnknownReclaimPolicy: {
    reason: 'VolumeUnknownReclaimPolicy',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'A Released PV has a reclaim policy that is neither Delete, Retain nor Recycle; it is left as is (upstream\'s reason, kept).',
    example: 'PV "local-pv-1a2b3c4d" has unknown reclaim policy "Shred"; its data is kept',
  },
  VolumeMissing: {
    reason: 'VolumeMissing',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'The PV\'s path no longer exists on this node (disk removed or unmounted); the PV is kept and nothing is cleaned.',
    example: 'path "/mnt/disks/vol1" of PV "local-pv-1a2b3c4d" does not exist',
  },
  VolumeNotConfigured: {
    reason: 'VolumeNotConfigured',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'The configuration no longer offers this PV\'s volume (namePattern narrowed, class removed, hostDir changed); as upstream, a configuration change never deletes a PV, so it is left as it is.',
    example: 'PV "local-pv-1a2b3c4d" for "/mnt/disks/vol1": the configuration no longer offers its entry (namePattern, class or hostDir changed); a configuration change never deletes a PV, so it is left as it is',
  },
  // The node's volume record (record/volume-record.ts).
  VolumeWithdrawn: {
    reason: 'VolumeWithdrawn',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'The PV is Available but the node\'s volume record says a tenant used its volume (e.g. an administrator cleared its claimRef); it is deleted so no claim binds it, and the volume is cleaned or held by its reclaim policy.',
    example: 'PV "local-pv-1a2b3c4d" is Available but its volume was used by a tenant and is not clean yet; the PV is deleted so that no claim binds it, and its volume is cleaned or held by its reclaim policy',
  },
  VolumeRebound: {
    reason: 'VolumeRebound',
    type: 'Warning',
    regarding: ['PersistentVolume', 'PersistentVolumeClaim'],
    meaning: 'The PV is bound to a claim other than the one whose tenant used its volume (or is a PV the agent did not make, put in place of one that '
      + 'went unseen), with no clean in between: it was bound while no agent ran, after an administrator cleared its claimRef without the claim guard '
      + 'in force, or made it anew from a copy. The new tenant can read the last one\'s data; the volume is never cleaned under it, and is cleaned '
      + '(or held) by its reclaim policy once it is released.',
    example: 'PV "local-pv-1a2b3c4d" (/mnt/disks/vol1) is bound to claim team-b/data-0 (uid 5b1e…) but its volume still holds the data of claim '
      + 'team-a/db-0 (uid 0c7f…), which used it and was never cleaned away: it was bound while no agent ran; '
      + 'the volume is cleaned (or kept, Retain) only once this claim releases it',
  },
  VolumeHeldDirty: {
    reason: 'VolumeHeldDirty',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A volume a tenant used has no PV any more and is not cleaned (reclaim policy Retain, or its class is not configured): it is never offered until an administrator runs `volumes reclaim` or `volumes accept` (operations.md).',
    example: '/mnt/disks/vol1 (fs:/@wwid:naa.5000c500a1b2c3d4) was used by a tenant and is not clean: its reclaim policy Retain keeps the data; it is never offered until an administrator runs "local-volume-provisioner volumes reclaim /mnt/disks/vol1" (clean it, then offer it) or "volumes accept /mnt/disks/vol1" (offer it as it is)',
  },
  VolumeHoldsUnknownData: {
    reason: 'VolumeHoldsUnknownData',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A volume the node\'s record has never seen, with no PV, is not empty (or a device not blank): nothing proves whose data it is, so it is not offered until it holds nothing (an administrator empties it, or makes a new filesystem on it).',
    example: '/mnt/disks/vol1 holds data the volume record knows nothing of (3 entries, e.g. "db"); it is not offered until it holds nothing (empty it, or make a new filesystem on it)',
  },
  VolumeOverlaps: {
    reason: 'VolumeOverlaps',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A volume shares storage with another that is offered or used (a disk and its partition, a filesystem and a directory inside it, the two dialects over one disk); it is not offered.',
    example: '/mnt/disks/sub (fs:/data@wwid:naa.5000c500a1b2c3d4) shares storage with /mnt/disks/vol1 (fs:/@wwid:naa.5000c500a1b2c3d4, offered); it is not offered',
  },
  VolumeRecordUnusable: {
    reason: 'VolumeRecordUnusable',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'The node\'s volume record cannot be read whole (its directory deleted, a file damaged): nothing is offered or cleaned until it can, because a guess could call dirty data clean.',
    example: 'volume record file /var/lib/local-volume-provisioner/volumes/3f2a.json is not JSON (Unexpected end of JSON input); nothing is offered or cleaned on this node until it is repaired',
  },
  VolumeRecordNotDurable: {
    reason: 'VolumeRecordNotDurable',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'The state directory was not there at start, so it is no host directory the DaemonSet mounts: the record lives in the container and is lost when the pod is replaced; mount a hostPath there (the construct does).',
    example: 'state directory /var/lib/local-volume-provisioner did not exist, so it is not a host directory: the volume record is lost when this pod is replaced; mount a hostPath at /var/lib/local-volume-provisioner (the construct does)',
  },
  // The claim guard (agent/claim-guard-check.ts).
  ClaimGuardInactive: {
    reason: 'ClaimGuardInactive',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'The claim guard, the admission policy that keeps a used volume\'s PV from being bound again while no agent runs, is not in force '
      + '(not configured, deleted, its binding not Deny, unreadable under this RBAC, a cluster older than 1.30); said at start and on each change.',
    example: 'the claim guard, ValidatingAdmissionPolicy "local-volume-provisioner-claim-guard", does not exist (deleted, or a cluster older than Kubernetes 1.30): '
      + 'while no agent runs on a node, an administrator who clears the claimRef of a Released PV of ours lets the next claim be bound to it with its last '
      + 'tenant\'s data (docs/operations.md, guarantee 14)',
  },
  ClaimRoutingInactive: {
    reason: 'ClaimRoutingInactive',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'The claim routing, the admission policy that labels each pool class\'s claim with its node, is not in force (not configured, deleted, '
      + 'unreadable under this RBAC, a cluster older than 1.36): the agent lists and watches every claim of the cluster, whose every write is sent to it, '
      + 'instead of its own node\'s; said at start and on each change.',
    example: 'the claim routing, MutatingAdmissionPolicy "local-volume-provisioner-claim-routing", does not exist (deleted, or a cluster older than Kubernetes '
      + '1.36); so this agent lists and watches every claim of the cluster, and each claim written anywhere is sent to it (docs/operations.md, "Claims at scale")',
  },
  // Pools: volumes made for claims from a node's own storage.
  PoolVolumeProvisioned: {
    reason: 'PoolVolumeProvisioned',
    type: 'Normal',
    regarding: 'PersistentVolumeClaim',
    meaning: 'A pool class made a volume for the claim on the node the scheduler chose, limited to its size, and a PV bound to it.',
    example: 'made /mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b (limit 10Gi) on node "worker-1"; PV pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b',
  },
  PoolClaimRescheduled: {
    reason: 'PoolClaimRescheduled',
    type: 'Warning',
    regarding: 'PersistentVolumeClaim',
    meaning: 'The pool on the chosen node cannot hold the claim (its capacity object was a little stale); the node choice is given back to the scheduler, which picks again.',
    example: 'pool /mnt/pool of class "local-pool" on node "worker-1" has 3Gi left, the claim asks 10Gi; given back to the scheduler',
  },
  PoolClaimWaiting: {
    reason: 'PoolClaimWaiting',
    type: 'Normal',
    regarding: 'PersistentVolumeClaim',
    meaning: 'The claim\'s data source is not ready yet (a snapshot being taken, a claim not bound yet); its volume is made once it is.',
    example: 'its data source VolumeSnapshot "db-snap" is not ready to use yet',
  },
  PoolClaimSourceElsewhere: {
    reason: 'PoolClaimSourceElsewhere',
    type: 'Warning',
    regarding: 'PersistentVolumeClaim',
    meaning: 'The claim is to be filled from a snapshot or a claim whose data is on another node, where alone its volume can be made; the node choice is given back to the scheduler. Pin the claim\'s pod to that node (docs/construct.md, "Snapshots, restores and clones").',
    example: 'its data source VolumeSnapshot "db-snap" is on node "worker-2", and a pool volume is made from it only there; given back to the scheduler: pin the pod to node "worker-2"',
  },
  PoolClaimRefused: {
    reason: 'PoolClaimRefused',
    type: 'Warning',
    regarding: 'PersistentVolumeClaim',
    meaning: 'The claim asks what a pool class cannot give (a Block volume, a data source, no size); nothing is made until the claim changes.',
    example: 'a pool class gives Filesystem volumes only; class local-pool cannot give a Block volume',
  },
  SnapshotTaken: {
    reason: 'SnapshotTaken',
    type: 'Normal',
    regarding: ['VolumeSnapshotContent', 'VolumeSnapshot'],
    meaning: 'The agent, its driver\'s snapshotter, took the snapshot the content asks for on its node: read-only, sharing its volume\'s blocks; the content is ready to use.',
    example: 'took snapshot-4b1f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b of pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b (10Gi) in pool /mnt/pool on node "worker-1"',
  },
  SnapshotFailed: {
    reason: 'SnapshotFailed',
    type: 'Warning',
    regarding: ['VolumeSnapshotContent', 'VolumeSnapshot'],
    meaning: 'The snapshot the content asks for cannot be taken (its pool takes no snapshot, its volume is not on the node, a command failed); the reason is in the content\'s and the VolumeSnapshot\'s status.error, and it is tried again.',
    example: 'ext4 pools take no snapshot: ext4 cannot share blocks between files, so a snapshot would be a whole copy made while its tenant writes; btrfs, lvm-thin and XFS (with reflink) pools take them',
  },
  SnapshotDeleted: {
    reason: 'SnapshotDeleted',
    type: 'Normal',
    regarding: 'VolumeSnapshotContent',
    meaning: 'The content was deleted under its policy Delete: its snapshot is deleted, with what only it held, and the content goes.',
    example: 'deleted snapshot-4b1f2a3c-5d6e-4f70-8a9b-0c1d2e3f4a5b in pool /mnt/pool on node "worker-1"',
  },
  PoolVolumeExpanded: {
    reason: 'PoolVolumeExpanded',
    type: 'Normal',
    regarding: 'PersistentVolumeClaim',
    meaning: 'The claim asked for more: its pool volume\'s limit was raised, and the PV\'s and the claim\'s capacity say the new size.',
    example: 'pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b grown from 10Gi to 20Gi',
  },
  PoolExpansionRefused: {
    reason: 'PoolExpansionRefused',
    type: 'Warning',
    regarding: 'PersistentVolumeClaim',
    meaning: 'The claim asks for more than its node\'s pool can still give; the volume keeps its size, and the resize is done once the pool has the space.',
    example: 'pool /mnt/pool of class "local-pool" has 3Gi left; growing pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b from 10Gi to 20Gi needs 10Gi',
  },
  PoolVolumeDeleted: {
    reason: 'PoolVolumeDeleted',
    type: 'Normal',
    regarding: 'PersistentVolume',
    meaning: 'The claim is gone and the policy is Delete: the pool volume and its data were destroyed, its space is free, and the PV goes.',
    example: 'destroyed /mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b and its limit; the PV goes',
  },
  PoolVolumeKept: {
    reason: 'PoolVolumeKept',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'A PV of policy Retain was deleted: its pool volume and data stay on the node, using space (its line in the volume record says so), until an '
      + 'administrator has it destroyed with `volumes reclaim`.',
    example: 'PV deleted with reclaimPolicy Retain: /mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b stays; remove it with '
      + '"local-volume-provisioner volumes reclaim /mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b" (in the agent\'s pod) when its data is no longer wanted',
  },
  PoolVolumeStrayDestroyed: {
    reason: 'PoolVolumeStrayDestroyed',
    type: 'Normal',
    regarding: 'Node',
    meaning: 'A pool volume had no PV and no claim, and no line in the volume record (made, and the agent killed before it recorded it: no PV was ever '
      + 'made for it), and its class\'s policy is Delete; or an administrator said `volumes reclaim`. It was destroyed, by its identity.',
    example: '/mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b had no PV and no claim; destroyed under the policy Delete, its space given back',
  },
  PoolVolumeStrayKept: {
    reason: 'PoolVolumeStrayKept',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A pool volume has no PV and no claim, and its data is to be kept (its PV\'s policy was Retain, or its class keeps volumes, or the class cannot '
      + 'be read): it stays, using space, until an administrator has it destroyed with `volumes reclaim`.',
    example: '/mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b has no PV and no claim, and its PV\'s reclaim policy was Retain; it stays until '
      + '"local-volume-provisioner volumes reclaim /mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b" (in the agent\'s pod)',
  },
  PoolVolumeHeld: {
    reason: 'PoolVolumeHeld',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A pool volume the record knows has no PV and no claim, and no agent saw its PV go (the PV was deleted with its finalizer stripped while no '
      + 'agent could act on it): what the record last knew of its policy may be old (a Retain set meanwhile), so the data is held, using space, until an '
      + 'administrator has it destroyed with `volumes reclaim`, or copies it out first.',
    example: '/mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b has no PV and no claim, and its PV pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b went while no agent '
      + 'could act on it (deleted with its finalizer stripped), so its data is held, not destroyed on the record\'s word; it stays until '
      + '"local-volume-provisioner volumes reclaim /mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b" (in the agent\'s pod)',
  },
  PoolUnusable: {
    reason: 'PoolUnusable',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'A pool class\'s directory cannot give volumes whose limits hold (missing, not the filesystem its backend needs, quotas off or in a mode '
      + 'a tenant escapes, its storage claimed by another class); the class makes no volumes on this node and its capacity object is withdrawn. '
      + 'Its existing volumes are still destroyed when their claims go.',
    example: 'pool /mnt/pool of class "local-pool": /mnt/pool is not on a btrfs filesystem; a btrfs pool needs one',
  },
  PoolBlockVolumesRefused: {
    reason: 'PoolBlockVolumesRefused',
    type: 'Warning',
    regarding: 'Node',
    meaning: 'An lvm-thin pool class gives no Block volume on this node: the node\'s LVM, asked with its own configuration, reads physical volumes on loop '
      + 'devices, as kubelet maps Block volumes, so a tenant\'s volume group would be listed beside the node\'s and activated at the next boot, where a volume '
      + 'it names like a neighbour\'s takes the neighbour\'s /dev path. Filesystem volumes are still given. Said once per cause; the metric '
      + 'pool_block_volumes_refused goes back to 0 once the node\'s LVM is confined (a devices file, or a global_filter accepting only its own disks).',
    example: 'pool /dev/vg0 of class "local-thin" gives no Block volume on this node: the node\'s LVM reads physical volumes on loop devices (it listed a probe '
      + 'on /dev/loop3 as /dev/disk/by-diskseq/41), as kubelet maps every Block volume: a tenant\'s volume group on its own device would be listed beside the '
      + 'node\'s, and activated at the next boot; confine it to the node\'s own disks: "use_devicesfile = 1" in /etc/lvm/lvmlocal.conf (devices section), then '
      + '"lvm lvmdevices --adddev <disk>" for each disk of the node\'s volume groups, or a global_filter that accepts only those disks and rejects everything else ("r|.*|" last)',
  },
  PoolVolumeLimitEscaped: {
    reason: 'PoolVolumeLimitEscaped',
    type: 'Warning',
    regarding: 'PersistentVolume',
    meaning: 'Something inside the pool volume was counted against another limit than the volume\'s (on btrfs, a subvolume its tenant made naming '
      + 'another quota group; on XFS and ext4, a file or directory its tenant gave another project, or a directory it took the inherit flag off, from '
      + 'the host\'s user namespace); it was put back under the volume\'s limit, which holds again, less what was written in between.',
    example: 'subvolume pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b/x (ID 263) inside volume pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b counted to 1/258, '
      + 'not to the volume\'s 1/259; moved into it, so what it holds counts against the volume\'s limit',
  },
  PoolVolumeFailed: {
    reason: 'PoolVolumeFailed',
    type: 'Warning',
    regarding: ['PersistentVolumeClaim', 'PersistentVolume'],
    meaning: 'A pool volume could not be made, resized or destroyed (the backend\'s words follow); it is tried again on every pass, and the node '
      + 'serves its other claims meanwhile. A volume that could not be destroyed keeps its PV (the cleanup finalizer) and its space stays out of the capacity.',
    example: 'destroying /mnt/pool/pvc-0b9f1c2e-4c1d-4e5f-9a8b-7c6d5e4f3a2b: btrfs subvolume delete --subvolid 263 /mnt/pool failed: ERROR: Could not destroy '
      + 'subvolume/snapshot: Device or resource busy; tried again next pass',
  },
  // Node cleanup (the node-cleanup command).
  StaleVolumeDeleted: {
    reason: 'StaleVolumeDeleted',
    type: 'Normal',
    regarding: 'PersistentVolume',
    meaning: 'The PV\'s Node is gone; node cleanup deleted the PV.',
    example: 'node "worker-7" no longer exists; PV deleted',
  },
  StaleClaimDeleted: {
    reason: 'StaleClaimDeleted',
    type: 'Normal',
    regarding: 'PersistentVolumeClaim',
    meaning: 'The claim was bound to a local PV of a gone Node; node cleanup deleted it so the workload can get a new volume.',
    example: 'PV "local-pv-1a2b3c4d" is on node "worker-7", which no longer exists; claim deleted',
  },
} as const satisfies Record<string, EventReasonSpec>;

export type EventReason = keyof typeof EventReasons;

/** Every reason, in catalogue order. */
export const EVENT_REASONS: readonly EventReasonSpec[] = Object.values(EventReasons);
