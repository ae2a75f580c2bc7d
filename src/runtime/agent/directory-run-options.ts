import type { CommonOptions } from '../lifecycle/agent';

/** What `runDirectoryProvisioner` needs: the Go static provisioner's flags and environment, resolved. */
export interface DirectoryRunOptions extends CommonOptions {
  readonly listenAddress: string;
  readonly metricsPath: string;
  readonly discoveryPeriodMs: number;
  readonly configSyncPeriodMs: number;
  /** The mounted provisioner ConfigMap, one file per key. */
  readonly configDir: string;
  readonly nodeName: string;
  /** Namespace of cleanup Jobs and Events. */
  readonly namespace: string;
  /** Image of cleanup Jobs; empty when unset. */
  readonly jobContainerImage: string;
  /** The host directory of the node's volume record (record/volume-record.ts). */
  readonly stateDir: string;
  /** The claim guard's name (agent/claim-guard-check.ts); empty when none is known. */
  readonly claimGuard: string;
  /** The claim routing's name (constructs/claim-routing.ts); empty when none is known: every claim is watched. */
  readonly claimRouting: string;
  /** kubelet's root directory, where the agent serves its CSI node plugin (csi/node-plugin.ts); empty: none. */
  readonly kubeletDir: string;
  /** How often the volumes of xfs and ext4 pool classes are walked (pool/project-scan.ts). */
  readonly projectScanPeriodMs: number;
}
