import type { CommonOptions } from '../lifecycle/agent';

/** What `runDeviceProvisioner` needs: the device provisioner's flags and `LP_*` environment, resolved. */
export interface DeviceRunOptions extends CommonOptions {
  readonly listenAddress: string;
  readonly metricsPath: string;
  readonly nodeName: string;
  readonly pollingIntervalMs: number;
  /** Namespace of the PV spec ConfigMaps. */
  readonly namespace: string;
  /** PV spec ConfigMap for nodes without the annotation; empty when unset. */
  readonly defaultPvSpecConfigMap: string;
  /** The host directory of the node's volume record (record/volume-record.ts). */
  readonly stateDir: string;
  /** The claim guard's name (agent/claim-guard-check.ts); empty when none is known. */
  readonly claimGuard: string;
}
