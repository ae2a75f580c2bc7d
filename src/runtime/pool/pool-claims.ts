/**
 * The claims the pool classes act on: those the scheduler put on this node (its
 * `volume.kubernetes.io/selected-node` annotation), the only ones a node provisions or
 * resizes. Where the construct's claim routing is in force (a MutatingAdmissionPolicy
 * that labels each pool class's claim with its node: constructs/claim-routing.ts), the
 * agent lists and watches only the claims labelled with its node, and a claim written
 * anywhere else in the cluster costs it nothing. Where it is not (Kubernetes older than
 * 1.36, the policy deleted, the Helm chart's RBAC, no `--claim-routing`), every claim
 * of the cluster is watched, as before, and that is said: `claim_routing_active 0`, a
 * ClaimRoutingInactive Event on the Node. Either way only this node's claims are kept.
 *
 * The routing is read at start and every 5 minutes (sooner after a read that failed);
 * a change of verdict replaces the watch. Nothing is ever decided from a claim's absence
 * here: a pool volume is a stray only when the server says its claim is gone
 * (pool-controller.ts).
 */
import type { V1PersistentVolumeClaim, V1beta1MutatingAdmissionPolicy, V1beta1MutatingAdmissionPolicyBinding } from '@kubernetes/client-node';
import { SELECTED_NODE_ANNOTATION } from './pool-decisions';
import { POOL_CLAIM_NODE_LABEL, poolClaimNodeLabelValue } from '../../config';
import type { KubeApi } from '../kube/api-client';
import { Clock, systemClock } from '../kube/clock';
import { isForbidden } from '../kube/errors';
import { EventRecorder, nodeReference } from '../kube/event-recorder';
import { ChangeListener, Reflector } from '../kube/reflector';
import { fromWire } from '../kube/wire';
import type { Runner } from '../lifecycle/runners';
import { EventReasons, Logger, ProvisionerMetrics } from '../observability';

const CHECK_PERIOD_MS = 5 * 60_000;
const RETRY_PERIOD_MS = 30_000;

/** What watching every claim costs, said after why the routing is not in force. */
const COST = 'so this agent lists and watches every claim of the cluster, and each claim written anywhere is sent to it (docs/operations.md, "Claims at scale")';

export type ClaimRoutingVerdict = { readonly active: true } | { readonly active: false; readonly why: string };

/** Whether the policy and its binding, as read, label the claims. */
export function claimRoutingVerdict(name: string, policy: V1beta1MutatingAdmissionPolicy | undefined,
  binding: V1beta1MutatingAdmissionPolicyBinding | undefined): ClaimRoutingVerdict {
  if (name === '') return { active: false, why: 'no claim routing is known to this agent (--claim-routing, LVP_CLAIM_ROUTING; the construct installs one and sets it)' };
  if (!policy) {
    return { active: false, why: `the claim routing, MutatingAdmissionPolicy "${name}", does not exist (deleted, or a cluster older than Kubernetes 1.36)` };
  }
  if (!binding) return { active: false, why: `the claim routing's MutatingAdmissionPolicyBinding "${name}" does not exist, so its policy labels nothing` };
  if (binding.spec?.policyName !== name) {
    return { active: false, why: `the claim routing's binding "${name}" applies policy "${binding.spec?.policyName ?? ''}", not "${name}"` };
  }
  return { active: true };
}

export interface PoolClaimsDeps {
  readonly api: KubeApi;
  readonly events: EventRecorder;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly nodeName: string;
  /** The claim routing's name (`--claim-routing`); empty when none is known. */
  readonly routing: string;
  readonly clock?: Clock;
}

export class PoolClaims implements Runner {
  private readonly clock: Clock;
  private readonly listeners = new Set<ChangeListener<V1PersistentVolumeClaim>>();
  private readonly verdictListeners = new Set<(verdict: ClaimRoutingVerdict) => void>();
  private reflector?: Reflector<V1PersistentVolumeClaim>;
  /** Whether the watch is of this node's claims only (routed); undefined before the first. */
  private watchingRouted?: boolean;
  private verdict?: ClaimRoutingVerdict;
  private cancel?: () => void;
  private stopped = false;
  /** Checks and swaps run one at a time. */
  private checking = Promise.resolve();

  constructor(private readonly deps: PoolClaimsDeps) {
    this.clock = deps.clock ?? systemClock;
  }

  /** Reads the routing (a failed read watches every claim until it can be read), then lists and watches; resolves once listed. */
  async start(): Promise<void> {
    await this.check();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.cancel?.();
    await this.checking;
    await this.reflector?.stop();
  }

  /** This node's claims, as watched. */
  list(): V1PersistentVolumeClaim[] {
    return this.reflector?.list() ?? [];
  }

  /** True when the copy may be read instead of the server (listed, and not forbidden since). */
  usable(): boolean {
    return this.reflector?.usable() ?? false;
  }

  /** Whether the claims are routed (the selected watch), as last read. */
  routed(): boolean {
    return this.verdict?.active === true;
  }

  onChange(listener: ChangeListener<V1PersistentVolumeClaim>): void {
    this.listeners.add(listener);
  }

  /** Told each verdict read, the first too (the claims made before the routing are labelled once it is in force). */
  onVerdict(listener: (verdict: ClaimRoutingVerdict) => void): void {
    this.verdictListeners.add(listener);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.cancel = this.clock.setTimer(this.verdict === undefined ? RETRY_PERIOD_MS : CHECK_PERIOD_MS, () => {
      this.checking = this.checking.then(() => this.check()).then(() => this.schedule());
    });
  }

  /** Reads the routing and, when its verdict changed (or there is no watch yet), watches accordingly. */
  private async check(): Promise<void> {
    const read = await this.read();
    const verdict = read ?? this.verdict ?? { active: false, why: 'the claim routing could not be read yet' };
    if (verdict.active !== this.watchingRouted) await this.watch(verdict.active);
    if (read) this.report(read);
    for (const listener of this.verdictListeners) listener(verdict);
  }

  /** The routing's verdict, or undefined when it could not be read now. */
  private async read(): Promise<ClaimRoutingVerdict | undefined> {
    const { api, routing } = this.deps;
    if (routing === '') return claimRoutingVerdict(routing, undefined, undefined);
    try {
      return claimRoutingVerdict(routing, await api.getMutatingAdmissionPolicy(routing), await api.getMutatingAdmissionPolicyBinding(routing));
    } catch (err) {
      if (isForbidden(err)) {
        return {
          active: false,
          why: `this agent may not read the claim routing "${routing}" (add {apiGroups: ["admissionregistration.k8s.io"], resources: `
            + `["mutatingadmissionpolicies", "mutatingadmissionpolicybindings"], verbs: ["get"], resourceNames: ["${routing}"]} to its ClusterRole)`,
        };
      }
      this.deps.logger.warn({ err: (err as Error).message }, `cannot read the claim routing "${routing}"; trying again in ${RETRY_PERIOD_MS / 1000} s`);
      return undefined;
    }
  }

  /**
   * A new watch, of this node's claims (routed) or of every claim, started and listed
   * before the old one stops, so the copy is never empty meanwhile.
   */
  private async watch(routed: boolean): Promise<void> {
    const { api, logger, nodeName } = this.deps;
    const reflector = new Reflector<V1PersistentVolumeClaim>(api, {
      resource: 'persistentvolumeclaims',
      watchPath: '/api/v1/persistentvolumeclaims',
      ...routed ? { labelSelector: `${POOL_CLAIM_NODE_LABEL}=${poolClaimNodeLabelValue(nodeName)}` } : {},
      // Only this node's (a node name too long for a label shares its label value with others).
      accept: (claim) => claim.metadata?.annotations?.[SELECTED_NODE_ANNOTATION] === nodeName,
      list: (page, callOptions) => api.listPersistentVolumeClaims(page, callOptions),
      fromWire: (raw) => fromWire<V1PersistentVolumeClaim>(raw, 'V1PersistentVolumeClaim'),
      readsWithoutWatch: { whileForbidden: 'pool classes make no volume for a claim and resize none' },
      logger,
    });
    reflector.onChange((change) => {
      for (const listener of this.listeners) listener(change);
    });
    await reflector.start();
    const old = this.reflector;
    this.reflector = reflector;
    this.watchingRouted = routed;
    await old?.stop();
    logger.info({ routed }, routed ? 'watching the claims the claim routing labels with this node' : 'watching every claim of the cluster');
  }

  /** A change of verdict said: the metric always, the log line and the Node's Event once per cause. */
  private report(verdict: ClaimRoutingVerdict): void {
    this.deps.metrics.setClaimRoutingActive(verdict.active);
    const previous = this.verdict;
    this.verdict = verdict;
    if (verdict.active) {
      if (previous?.active !== true) this.deps.logger.info({ claimRouting: this.deps.routing }, 'the claim routing is in force');
      return;
    }
    if (!previous?.active && previous?.why === verdict.why) return;
    const message = `${verdict.why}; ${COST}`;
    this.deps.logger.warn({ claimRouting: this.deps.routing }, message);
    this.deps.events.warning(nodeReference(this.deps.nodeName), EventReasons.ClaimRoutingInactive.reason, message);
  }
}
