/**
 * Whether the claim guard is in force: the admission policy (the construct's
 * claim-guard.ts) with which the API server refuses to clear or change the claimRef
 * of a PV of ours once it has been bound, so that no claim is ever bound to a volume
 * holding another tenant's data, even while no agent runs. The agent cannot enforce
 * that itself (it is the time it is not running that matters), so it checks the
 * guard at start and every few minutes, and says so when it is not in force: a
 * Warning on the Node, a log line, and `claim_guard_active 0`.
 *
 * Objects that exist can still refuse nothing (a binding narrowed by a selector, a policy
 * edited, the admission plugin off), so where a PV of this node is bound to a claim, the
 * check also asks the server, in a dry run, to clear its claimRef: the guard is in force
 * only if the server refuses that in the guard's name.
 */
import type { V1PersistentVolume, V1ValidatingAdmissionPolicy, V1ValidatingAdmissionPolicyBinding } from '@kubernetes/client-node';
import type { KubeApi } from '../kube/api-client';
import { Clock, systemClock } from '../kube/clock';
import { isForbidden, isNotFound } from '../kube/errors';
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import type { Runner } from '../lifecycle/runners';
import { EventReasons, Logger, ProvisionerMetrics } from '../observability';

/** How often the guard is read again; sooner after a read that failed. */
const CHECK_PERIOD_MS = 5 * 60_000;
const RETRY_PERIOD_MS = 30_000;

/** What an inactive guard leaves open, said after why. */
const EXPOSURE = 'while no agent runs on a node, an administrator who clears the claimRef of a Released PV of ours lets the next claim be bound '
  + 'to it with its last tenant\'s data (docs/operations.md, guarantee 14)';

export type ClaimGuardVerdict = { readonly active: true } | { readonly active: false; readonly why: string };

/** Whether the policy and its binding, as read, refuse what the guard refuses. */
export function claimGuardVerdict(name: string, policy: V1ValidatingAdmissionPolicy | undefined,
  binding: V1ValidatingAdmissionPolicyBinding | undefined): ClaimGuardVerdict {
  if (!policy) {
    return { active: false, why: `the claim guard, ValidatingAdmissionPolicy "${name}", does not exist (deleted, or a cluster older than Kubernetes 1.30)` };
  }
  if (!binding) return { active: false, why: `the claim guard's ValidatingAdmissionPolicyBinding "${name}" does not exist, so its policy applies to nothing` };
  const bound = binding.spec?.policyName;
  if (bound !== name) return { active: false, why: `the claim guard's binding "${name}" applies policy "${bound ?? ''}", not "${name}"` };
  const actions = binding.spec?.validationActions ?? [];
  if (!actions.includes('Deny')) {
    return { active: false, why: `the claim guard's binding "${name}" has validationActions [${actions.join(', ')}], without Deny: it refuses nothing` };
  }
  return { active: true };
}

/** A PV of these bound to a claim (its claimRef carries a UID), not being deleted: one the guard protects. */
export function boundPv(pvs: readonly V1PersistentVolume[]): V1PersistentVolume | undefined {
  return pvs.find((pv) => pv.spec?.claimRef?.uid && !pv.metadata?.deletionTimestamp);
}

export interface ClaimGuardCheckDeps {
  readonly api: KubeApi;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly nodeName: string;
  /** The guard's name (`--claim-guard`); empty when none is known. */
  readonly name: string;
  /** A PV of this node bound to a claim (Bound or Released, not being deleted), to probe the guard with; none while there is none. */
  readonly boundPv: () => V1PersistentVolume | undefined;
  readonly clock?: Clock;
}

export class ClaimGuardCheck implements Runner {
  private readonly clock: Clock;
  private cancel?: () => void;
  private last?: ClaimGuardVerdict;
  /** The last dry run was accepted: asked again sooner, and said if it is accepted again. */
  private suspected = false;
  private stopped = false;

  constructor(private readonly deps: ClaimGuardCheckDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /** Checks now, without holding up the agent's start (a failure is reported, never thrown), then on its period. */
  start(): void {
    void this.checkAndSchedule();
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
  }

  private async checkAndSchedule(): Promise<void> {
    const answered = await this.check();
    if (!this.stopped) this.cancel = this.clock.setTimer(answered ? CHECK_PERIOD_MS : RETRY_PERIOD_MS, () => void this.checkAndSchedule());
  }

  /** Reads the guard and reports a change; false when it could not be read (the last verdict stands). */
  private async check(): Promise<boolean> {
    const { api, name } = this.deps;
    if (name === '') {
      this.report({ active: false, why: 'no claim guard is known to this agent (--claim-guard, LVP_CLAIM_GUARD; the construct installs one and sets it)' });
      return true;
    }
    let verdict: ClaimGuardVerdict;
    try {
      verdict = claimGuardVerdict(name, await api.getValidatingAdmissionPolicy(name), await api.getValidatingAdmissionPolicyBinding(name));
      const accepted = verdict.active ? await this.probe() : undefined;
      if (accepted !== undefined) {
        // The server applies a policy a moment after it is stored: one that refuses nothing is said only when asked twice.
        this.suspected = !this.suspected;
        if (this.suspected) return false;
        verdict = {
          active: false,
          why: `the claim guard "${name}" is installed but refuses nothing: clearing the claimRef of PV ${accepted} was accepted (a dry run; nothing was changed), `
            + 'so its policy or binding was edited, or the API server runs without the ValidatingAdmissionPolicy admission plugin',
        };
      } else {
        this.suspected = false;
      }
    } catch (err) {
      if (!isForbidden(err)) {
        this.deps.logger.warn({ err: (err as Error).message }, `cannot read the claim guard "${name}"; trying again in ${RETRY_PERIOD_MS / 1000} s`);
        if (this.last === undefined) this.deps.metrics.setClaimGuardActive(false);
        return false;
      }
      verdict = {
        active: false,
        why: `this agent may not read the claim guard "${name}", so it cannot tell whether it is in force (add {apiGroups: ["admissionregistration.k8s.io"], `
          + `resources: ["validatingadmissionpolicies", "validatingadmissionpolicybindings"], verbs: ["get"], resourceNames: ["${name}"]} to its ClusterRole)`,
      };
    }
    this.report(verdict);
    return true;
  }

  /**
   * Asks the server, in a dry run, to clear a bound PV's claimRef: the PV's name when it
   * would accept it, undefined when it refuses in the guard's name or when that cannot be
   * asked (no such PV, no `patch` on PVs, the PV gone meanwhile) and the objects' verdict stands.
   */
  private async probe(): Promise<string | undefined> {
    const pv = this.deps.boundPv()?.metadata?.name;
    if (pv === undefined) return undefined;
    try {
      await this.deps.api.dryRunClearClaimRef(pv);
    } catch (err) {
      if (isForbidden(err) || isNotFound(err)) return undefined;
      throw err;
    }
    return pv;
  }

  /** A verdict that differs from the last one is said once: a Warning and a log line when inactive, a log line when in force again. */
  private report(verdict: ClaimGuardVerdict): void {
    const last = this.last;
    this.last = verdict;
    this.deps.metrics.setClaimGuardActive(verdict.active);
    if (verdict.active) {
      if (last?.active !== true) this.deps.logger.info({ claimGuard: this.deps.name }, 'the claim guard is in force');
      return;
    }
    if (last !== undefined && !last.active && last.why === verdict.why) return;
    const message = `${verdict.why}: ${EXPOSURE}`;
    this.deps.logger.warn({ claimGuard: this.deps.name }, message);
    this.deps.events.warning(nodeReference(this.deps.nodeName), EventReasons.ClaimGuardInactive.reason, message);
  }
}
