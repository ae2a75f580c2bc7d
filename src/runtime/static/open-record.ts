/**
 * Opens the node's volume record for an agent (both dialects): a state directory
 * that was not there at start is no host directory the DaemonSet mounts (a Helm
 * chart's or the device provisioner's own DaemonSet, only the image changed), so
 * the record lives in the container: the agent runs on, and says once, loudly,
 * that the record is lost when the pod is replaced and what to mount.
 */
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import { EventReasons, Logger, ProvisionerMetrics } from '../observability';
import { VolumeRecord } from '../record';
import type { ReboundReporter } from './rebound-reporter';
import { RecordKeeper } from './record-keeper';

export interface OpenRecordDeps {
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly nodeName: string;
  readonly rebound: ReboundReporter;
}

export function openRecordKeeper(stateDir: string, deps: OpenRecordDeps): RecordKeeper {
  const { record, madeDirectory } = VolumeRecord.open(stateDir);
  deps.metrics.setVolumeRecordDurable(!madeDirectory);
  if (madeDirectory) {
    const message = `state directory ${stateDir} did not exist, so it is not a host directory: the volume record is lost when this pod is replaced; `
      + `mount a hostPath at ${stateDir} (the construct does)`;
    deps.logger.warn(message);
    deps.events.warning(nodeReference(deps.nodeName), EventReasons.VolumeRecordNotDurable.reason, message);
  }
  const keeper = new RecordKeeper({ record, ...deps });
  keeper.check();
  return keeper;
}
