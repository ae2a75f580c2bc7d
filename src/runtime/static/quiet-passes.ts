/**
 * Passes that would repeat the last one are skipped. The periodic pass is the
 * fallback for what the watchers miss, and with thousands of volumes it is most of
 * an idle agent's CPU. A pass is skipped when every input it reads is the one the
 * last full pass read, and that pass left nothing behind: nothing to do, to warn
 * about or to wait for. It would then decide everything the same way, and write
 * nothing.
 *
 * The inputs (PassInputs): the configuration (a reload makes a new object), the
 * Node, the PV cache's revision (every change, watched or written by us), the
 * mount table (the reader keeps one object while its text and the diskseq of each
 * disk in it are unchanged), and each discovery directory's stamp (an entry made,
 * removed or renamed). What they cannot show is why some outcomes never let the
 * next pass be skipped: a block-device entry
 * (its symlinks may come to lead to another device with no input changing), a
 * rejected symlink (what it leads to may become a volume), an entry that could not
 * be read or measured, a class directory that cannot be read, a volume not offered yet, a PV
 * whose volume is missing, another disk or not configured, a PV to bring under the
 * cleanup protocol, and any release or cleanup under way. Whatever the inputs, a
 * full pass still runs at least every FULL_PASS_AT_LEAST_EVERY_MS.
 *
 * Data safety never rests on this: the cleaner verifies each volume afresh
 * through its own handles, and a Released PV changes the PV cache's revision.
 */
import type { ProvisionerConfig } from '../../config';
import type { ClassDiscovery, MountTable, RejectionCode } from '../discovery';
import type { NodeInfo } from '../pv';
import type { VolumeVerdict } from './pv-stewardship';

/** The longest run of skipped passes: what no input shows is seen within this. */
export const FULL_PASS_AT_LEAST_EVERY_MS = 5 * 60_000;

/** What a pass reads, beside what the files and devices say. */
export interface PassInputs {
  readonly config: ProvisionerConfig;
  readonly node: NodeInfo;
  /** NodePvCache.revision. */
  readonly pvRevision: number;
  /** VolumeRecord.revision: a line changed by another agent or an administrator's command, or the record's health. */
  readonly recordRevision: number;
  readonly mountTable: MountTable;
  /** directoryStamp of each class's directory, in the configuration's order (undefined: none to trust). */
  readonly directoryStamps: ReadonlyArray<string | undefined>;
  /** When these were read, on a monotonic clock (performance.now): a clock stepped back stretches no wait. */
  readonly readAtMs: number;
}

/** What a full pass left behind, for `leftNothingBehind`. */
export interface PassOutcome {
  /** Deleter.atRest after the pass. */
  readonly deleterAtRest: boolean;
  /** PVs that needed the cleanup finalizer or their identity recorded. */
  readonly stewardWrites: number;
  /** Each PV of ours, against what is at its path. */
  readonly verdicts: Iterable<VolumeVerdict>;
  readonly classes: readonly ClassDiscovery[];
  /** Volumes the plan would create, and its skips that warn. */
  readonly planned: { readonly create: number; readonly warnings: number };
}

/** Rejections of an entry that is no symlink that only a change of an input (the directory, the mount table) can lift. */
const LASTING_REJECTIONS: ReadonlySet<RejectionCode> = new Set(['not-a-mount-point', 'directory-in-block-class', 'unsupported-entry']);

/** True when the same inputs would lead to the same outcome, with nothing to write or report. */
export function leftNothingBehind(outcome: PassOutcome): boolean {
  if (!outcome.deleterAtRest || outcome.stewardWrites > 0 || outcome.planned.create > 0 || outcome.planned.warnings > 0) return false;
  for (const verdict of outcome.verdicts) {
    if (verdict.kind !== 'ok' || !verdict.configured) return false;
  }
  return outcome.classes.every((c) => c.problem === undefined
    && c.volumes.every((v) => v.source === 'mount-point')
    && c.rejections.every((r) => LASTING_REJECTIONS.has(r.code) && r.viaSymlink !== true));
}

export function sameInputs(a: PassInputs, b: PassInputs): boolean {
  return a.config === b.config
    && a.pvRevision === b.pvRevision
    && a.recordRevision === b.recordRevision
    && a.mountTable === b.mountTable
    && sameNode(a.node, b.node)
    && a.directoryStamps.length === b.directoryStamps.length
    && a.directoryStamps.every((stamp, i) => stamp !== undefined && stamp === b.directoryStamps[i]);
}

function sameNode(a: NodeInfo, b: NodeInfo): boolean {
  if (a === b) return true;
  if (a.name !== b.name || a.uid !== b.uid) return false;
  const keys = Object.keys(a.labels);
  return keys.length === Object.keys(b.labels).length && keys.every((k) => a.labels[k] === b.labels[k]);
}

/** Remembers the last full pass that left nothing behind, and answers whether the next may be skipped. */
export class QuietPasses {
  private settled: PassInputs | undefined;

  constructor(private readonly fullPassEveryMs: number = FULL_PASS_AT_LEAST_EVERY_MS) {}

  /**
   * True when a pass over `inputs` would repeat the last full one. Otherwise that pass
   * is forgotten: only the full pass about to run can settle again, once it completes.
   */
  canSkip(inputs: PassInputs): boolean {
    const last = this.settled;
    if (last !== undefined && inputs.readAtMs - last.readAtMs < this.fullPassEveryMs && sameInputs(last, inputs)) return true;
    this.settled = undefined;
    return false;
  }

  /** Records the full pass over `inputs` that has just completed. */
  ran(inputs: PassInputs, outcome: PassOutcome): void {
    this.settled = leftNothingBehind(outcome) ? inputs : undefined;
  }
}
