/**
 * The claims made before the claim routing was installed (pool-claims.ts) carry no label
 * of their node, so no routed agent sees them: a pending one is never provisioned, a bound
 * one never resized. Once the routing is in force, one agent at a time (the holder of the
 * Lease CLAIM_ROUTING_LEASE, not every node) lists every claim once and labels those of
 * the pool classes whose label is not their node's; the routing keeps every claim right
 * from its next write on. A label is written only on the claim as read (its
 * resourceVersion the precondition): a claim written meanwhile went through the routing.
 */
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { SELECTED_NODE_ANNOTATION } from './pool-decisions';
import { CLAIM_ROUTING_LEASE, POOL_CLAIM_NODE_LABEL, poolClaimNodeLabelValue } from '../../config';
import type { KubeApi } from '../kube/api-client';
import { isConflict, isNotFound } from '../kube/errors';
import { LeaderElector } from '../kube/leader-election';
import type { Runner } from '../lifecycle/runners';
import type { Logger } from '../observability';

/** After a failed campaign or backfill. */
const RETRY_MS = 30_000;

export interface ClaimBackfillDeps {
  readonly api: KubeApi;
  readonly logger: Logger;
  /** Where the Lease is (the agents' namespace). */
  readonly namespace: string;
  /** This candidate (its node's name). */
  readonly identity: string;
  /** The pool classes of the configuration now. */
  readonly poolClasses: () => readonly string[];
}

/** The label a claim of a pool class should carry: its node's, or none. */
export function wantedNodeLabel(claim: V1PersistentVolumeClaim): string | undefined {
  const node = claim.metadata?.annotations?.[SELECTED_NODE_ANNOTATION];
  return node ? poolClaimNodeLabelValue(node) : undefined;
}

export class ClaimBackfill implements Runner {
  private readonly stopper = new AbortController();
  private readonly elector: LeaderElector;
  private running?: Promise<void>;
  /** The routing is in force, as last read. */
  private inForce = false;
  /** The claims were labelled under this leadership since the routing came into force. */
  private done = false;
  private wake?: () => void;

  constructor(private readonly deps: ClaimBackfillDeps) {
    const { api, namespace, identity, logger } = deps;
    this.elector = new LeaderElector(api, { namespace, name: CLAIM_ROUTING_LEASE, identity, logger });
  }

  start(): void {
    this.running ??= this.campaign();
  }

  async stop(): Promise<void> {
    this.stopper.abort(new Error('stopped'));
    this.wake?.();
    await this.running;
  }

  /** The routing's verdict, as read: come into force (again), the claims written while it was not are labelled. */
  routing(active: boolean): void {
    if (active && !this.inForce) this.done = false;
    this.inForce = active;
    this.wake?.();
  }

  private async campaign(): Promise<void> {
    const signal = this.stopper.signal;
    while (!signal.aborted) {
      await this.elector.run({ onStartedLeading: (term) => this.lead(term) }, signal).catch((err: unknown) => {
        this.deps.logger.warn({ err: String(err) }, 'claim routing leader election failed; campaigning again');
      });
      await this.pause(signal, RETRY_MS);
    }
  }

  private async lead(term: AbortSignal): Promise<void> {
    // A new leader labels: the last one may have stopped part way.
    this.done = false;
    while (!term.aborted) {
      if (this.inForce && !this.done) {
        try {
          await this.backfill(term);
          this.done = true;
        } catch (err) {
          this.deps.logger.warn({ err: String(err) }, `labelling the claims made before the claim routing failed; tried again in ${RETRY_MS / 1000} s`);
          await this.pause(term, RETRY_MS);
        }
      } else {
        await this.pause(term);
      }
    }
  }

  /** Until woken (a verdict), `signal` aborts, or `ms` pass. */
  private pause(signal: AbortSignal, ms?: number): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(done, ms);
      timer?.unref();
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
    });
  }

  /** Every claim, a page at a time; each of a pool class whose label is not its node's labelled. */
  private async backfill(term: AbortSignal): Promise<void> {
    const classes = new Set(this.deps.poolClasses());
    let seen = 0;
    let labelled = 0;
    let continueToken: string | undefined;
    do {
      const page = await this.deps.api.listPersistentVolumeClaims({ limit: 100, continueToken }, { signal: term });
      for (const claim of page.items) {
        if (term.aborted) return;
        if (!classes.has(claim.spec?.storageClassName ?? '')) continue;
        seen++;
        const wanted = wantedNodeLabel(claim);
        if ((claim.metadata?.labels?.[POOL_CLAIM_NODE_LABEL] ?? undefined) === wanted) continue;
        const { namespace, name, resourceVersion } = claim.metadata!;
        try {
          await this.deps.api.patchPersistentVolumeClaimLabels(namespace!, name!, resourceVersion!, { [POOL_CLAIM_NODE_LABEL]: wanted ?? null });
          labelled++;
        } catch (err) {
          // Written meanwhile (through the routing), or gone: nothing left to do for it.
          if (!isConflict(err) && !isNotFound(err)) throw err;
        }
      }
      continueToken = page.metadata?._continue || undefined;
    } while (continueToken);
    this.deps.logger.info({ claims: seen, labelled }, 'claims made before the claim routing labelled with their node');
  }
}

