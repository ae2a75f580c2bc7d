import type { CommonOptions } from '../lifecycle/agent';

/** What `runNodeCleanup` needs: upstream node-cleanup's flags, and ours for leader election. */
export interface NodeCleanupOptions extends CommonOptions {
  readonly listenAddress: string;
  readonly metricsPath: string;
  /** The opted-in StorageClasses: only their PVs and claims are ever deleted. */
  readonly storageClassNames: string[];
  readonly pvcDeletionDelayMs: number;
  readonly stalePvDiscoveryIntervalMs: number;
  /** Namespace of the leader-election Lease. */
  readonly namespace: string;
  readonly leaderElect: boolean;
  /** This replica's identity in the Lease. */
  readonly identity: string;
}
