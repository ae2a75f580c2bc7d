import type { V1Lease, V1LeaseSpec, V1MicroTime } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { Clock, systemClock } from './clock';
import { isAlreadyExists, isConflict } from './errors';
import { KubeLogger, silentLogger } from './logger';

export interface LeaderElectionOptions {
  /** Namespace of the Lease. */
  readonly namespace: string;
  /** Lease name, e.g. `local-volume-provisioner-node-cleanup`. */
  readonly name: string;
  /** This candidate, unique among candidates (e.g. the Pod name). */
  readonly identity: string;
  /** How long a leader's claim holds without renewal; whole seconds. @default 15000 */
  readonly leaseDurationMs?: number;
  /** A leader that cannot renew for this long steps down. @default 10000 */
  readonly renewDeadlineMs?: number;
  /** Between attempts to acquire or renew. @default 2000 */
  readonly retryPeriodMs?: number;
  /** Hand the Lease over at once when stopped, instead of letting it expire. @default true */
  readonly releaseOnCancel?: boolean;
  readonly logger?: KubeLogger;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Wall time written into the Lease. @default () => new Date() */
  readonly wallClock?: () => Date;
}

export interface LeaderCallbacks {
  /** Runs while we lead; `signal` aborts when we stop leading. */
  readonly onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  readonly onStoppedLeading?: () => void;
  /** Another (or this) candidate was seen holding the Lease. */
  readonly onNewLeader?: (identity: string) => void;
}

/**
 * Lease-based leader election on coordination.k8s.io/v1, with client-go's semantics:
 * a Lease is taken over only when its holder has not renewed it for leaseDuration as
 * measured on our own clock (so clock skew between nodes does not matter), every write
 * carries the resourceVersion read (so two candidates cannot both win), and release
 * empties holderIdentity so that a successor need not wait.
 */
export class LeaderElector {
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly logger: KubeLogger;
  private readonly clock: Clock;
  private readonly wallClock: () => Date;
  private observed?: { record: string; at: number; holder: string };
  private lease?: V1Lease;
  private leading = false;

  constructor(private readonly api: KubeApi, private readonly options: LeaderElectionOptions) {
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    if (this.leaseDurationMs < 1000 || this.renewDeadlineMs >= this.leaseDurationMs || this.retryPeriodMs >= this.renewDeadlineMs) {
      throw new Error('leader election needs leaseDuration >= 1s > renewDeadline > retryPeriod, '
        + `got ${this.leaseDurationMs}/${this.renewDeadlineMs}/${this.retryPeriodMs} ms`);
    }
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.wallClock = options.wallClock ?? (() => new Date());
  }

  isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaigns until elected, leads until the Lease cannot be renewed or `signal` aborts,
   * then returns (after releasing the Lease, by default). Call again to campaign again.
   */
  async run(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<void> {
    if (!(await this.acquire(callbacks, signal))) return;
    const term = new AbortController();
    this.leading = true;
    this.logger.info({ lease: this.options.name, identity: this.options.identity }, 'became leader');
    const work = Promise.resolve().then(() => callbacks.onStartedLeading(term.signal)).catch((err: unknown) => {
      this.logger.error({ err: String(err) }, 'leader work failed');
    });
    try {
      await this.renewWhileLeading(signal);
    } finally {
      this.leading = false;
      term.abort(new Error('leadership ended'));
      if (signal.aborted && (this.options.releaseOnCancel ?? true)) await this.release();
      this.logger.info({ lease: this.options.name, identity: this.options.identity }, 'stopped leading');
      callbacks.onStoppedLeading?.();
      await work;
    }
  }

  /**
   * One attempt to take or keep the Lease: true when we hold it afterwards. Never throws;
   * an API failure counts as "not now".
   */
  async tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const callOptions = { maxAttempts: 1, signal };
    try {
      const now = this.wallClock();
      const current = await this.api.getLease(namespace, name, callOptions);
      if (!current) {
        this.lease = await this.api.createLease(namespace, {
          apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace }, spec: this.spec(microTime(now), microTime(now), 0),
        }, callOptions);
        this.observe(this.lease);
        return true;
      }
      this.observe(current);
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      if (holder && holder !== identity && this.clock.now() - this.observed!.at < (spec.leaseDurationSeconds ?? 0) * 1000) {
        return false;
      }
      const mine = holder === identity;
      const transitions = (spec.leaseTransitions ?? 0) + (mine ? 0 : 1);
      const acquired = mine && spec.acquireTime ? spec.acquireTime : microTime(now);
      this.lease = await this.api.replaceLease(namespace, { ...current, spec: this.spec(acquired, microTime(now), transitions) }, callOptions);
      this.observe(this.lease);
      return true;
    } catch (err) {
      if (!isConflict(err) && !isAlreadyExists(err)) {
        this.logger.warn({ lease: name, err: String(err) }, 'could not acquire or renew the lease');
      }
      return false;
    }
  }

  private async acquire(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<boolean> {
    let lastLeader: string | undefined;
    while (!signal.aborted) {
      const won = await this.tryAcquireOrRenew(signal);
      const leader = this.observed?.holder;
      if (leader && leader !== lastLeader) {
        lastLeader = leader;
        callbacks.onNewLeader?.(leader);
      }
      if (won) return true;
      // client-go's jitter of 1.2: candidates do not move in step.
      await this.clock.sleep(this.retryPeriodMs * (1 + 1.2 * Math.random()), signal).catch(() => {});
    }
    return false;
  }

  /** Renews every retryPeriod; returns when a renewal could not be made within renewDeadline, or on `signal`. */
  private async renewWhileLeading(signal: AbortSignal): Promise<void> {
    let lastRenewal = this.clock.now();
    while (!signal.aborted) {
      await this.clock.sleep(this.retryPeriodMs, signal).catch(() => {});
      if (signal.aborted) return;
      const deadline = AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, Math.ceil(lastRenewal + this.renewDeadlineMs - this.clock.now())))]);
      if (await this.tryAcquireOrRenew(deadline)) {
        lastRenewal = this.clock.now();
      } else if (this.clock.now() - lastRenewal >= this.renewDeadlineMs || this.observed?.holder !== this.options.identity) {
        this.logger.warn({ lease: this.options.name }, 'lost the lease');
        return;
      }
    }
  }

  /** Empties holderIdentity so that another candidate may take over at once. */
  private async release(): Promise<void> {
    if (!this.lease || this.observed?.holder !== this.options.identity) return;
    const now = this.wallClock();
    const transitions = this.lease.spec?.leaseTransitions ?? 0;
    try {
      this.lease = await this.api.replaceLease(this.options.namespace, {
        ...this.lease,
        spec: { ...this.spec(microTime(now), microTime(now), transitions), holderIdentity: '', leaseDurationSeconds: 1 },
      }, { maxAttempts: 1 });
      this.observe(this.lease);
    } catch (err) {
      this.logger.warn({ lease: this.options.name, err: String(err) }, 'could not release the lease; it will expire');
    }
  }

  private spec(acquireTime: V1MicroTime, renewTime: V1MicroTime, leaseTransitions: number): V1LeaseSpec {
    return {
      holderIdentity: this.options.identity,
      leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
      acquireTime,
      renewTime,
      leaseTransitions,
    };
  }

  /** Notes when the Lease record last changed, on our own clock. */
  private observe(lease: V1Lease): void {
    const s = lease.spec ?? {};
    const record = JSON.stringify([s.holderIdentity, s.leaseDurationSeconds, s.acquireTime, s.renewTime, s.leaseTransitions]);
    if (this.observed?.record !== record) this.observed = { record, at: this.clock.now(), holder: s.holderIdentity ?? '' };
  }
}

/**
 * A metav1.MicroTime as the API server wants it: RFC 3339 with six fractional digits.
 * On the wire it is a string, whatever the generated type says.
 */
export function microTime(date: Date): V1MicroTime {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z') as unknown as V1MicroTime;
}
