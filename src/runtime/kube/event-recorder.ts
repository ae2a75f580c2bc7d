import type { CoreV1Event, V1Node, V1ObjectReference, V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { Clock, systemClock } from './clock';
import { isForbidden, isNotFound } from './errors';
import { EventCorrelator, EventCorrelatorOptions, EventInput } from './event-correlator';
import { KubeLogger, silentLogger } from './logger';
import { EVENT_COMPONENT } from '../well-known';

/** After a refused Event, how long before the next one is tried. */
const FORBIDDEN_RETRY_MS = 10 * 60_000;

export interface EventRecorderOptions {
  /**
   * The node this recorder runs on: `source.host` of every Event, and the Node a burst's summary
   * is written on. Without it (a Deployment, as node cleanup), Events name no host and are never summarised.
   */
  readonly nodeName?: string;
  /** `source.component`. @default 'local-volume-provisioner' */
  readonly component?: string;
  /** Deduplication window and per-object rate limit. */
  readonly correlator?: EventCorrelatorOptions;
  /** Events waiting to be written; beyond it new ones are dropped (API down). @default 1000 */
  readonly maxPending?: number;
  /** How a burst of Normal Events about PVs is summarised. */
  readonly burst?: BurstOptions;
  /** Told about each Event that could not be written, for a failure counter. */
  readonly onFailure?: (err: unknown, event: EventInput) => void;
  readonly logger?: KubeLogger;
  /** Drives the dedup window, rate limit, bursts and the pause after a 403. @default systemClock */
  readonly clock?: Clock;
  /** Wall time for the Events' timestamps. @default () => new Date() */
  readonly wallClock?: () => Date;
}

/** A burst: Normal Events about PVs recorded close together (a first discovery, an adoption, a mass release). */
export interface BurstOptions {
  /** A burst ends this long after its last Event. @default 1000 */
  readonly quietMs?: number;
  /** ... or this long after its first. @default 10000 */
  readonly maxMs?: number;
  /** Up to this many Events of one reason in a burst are written one per PV; more become one Event on the Node. @default 10 */
  readonly maxSingle?: number;
}

/** Names listed in a summary's message, at most; the message stays well under the API's 1 KiB. */
const SUMMARY_NAMES_CHARS = 600;

/**
 * Writes core/v1 Events about our PVs and Node, deduplicated like client-go's recorder
 * (a repeat patches count and lastTimestamp of the Event already written, at most once
 * per repeat interval; see EventCorrelator). Recording
 * never blocks and never throws: Events are written in order in the background, and a
 * failure is logged and counted.
 *
 * Normal Events about PVs are held for a moment: when a burst brings more than a few of
 * one reason (1 000 PVs created on a node's first discovery), they are written as one
 * Event of that reason on the Node naming the PVs, not one write per PV. Warnings are
 * never held.
 */
export class EventRecorder {
  private readonly component: string;
  private readonly correlator: EventCorrelator;
  private readonly logger: KubeLogger;
  private readonly maxPending: number;
  private readonly wallClock: () => Date;
  private readonly clock: Clock;
  private readonly burstOptions: Required<BurstOptions>;
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private sequence = 0;
  /** Until when Events are not even tried, after the server refused one (403): RBAC grants none. */
  private forbiddenUntil = 0;
  private burst?: { readonly startedAt: number; readonly events: EventInput[]; cancelTimer?: () => void };

  constructor(private readonly api: KubeApi, private readonly options: EventRecorderOptions) {
    this.component = options.component ?? EVENT_COMPONENT;
    this.clock = options.clock ?? systemClock;
    this.correlator = new EventCorrelator(`${this.component}\u0000${options.nodeName ?? ''}`, this.clock, options.correlator);
    this.logger = options.logger ?? silentLogger;
    this.maxPending = options.maxPending ?? 1000;
    this.wallClock = options.wallClock ?? (() => new Date());
    this.burstOptions = { quietMs: options.burst?.quietMs ?? 1000, maxMs: options.burst?.maxMs ?? 10_000, maxSingle: options.burst?.maxSingle ?? 10 };
  }

  normal(involvedObject: V1ObjectReference, reason: string, message: string): void {
    this.record({ involvedObject, type: 'Normal', reason, message });
  }

  warning(involvedObject: V1ObjectReference, reason: string, message: string): void {
    this.record({ involvedObject, type: 'Warning', reason, message });
  }

  record(event: EventInput): void {
    if (event.type === 'Normal' && event.involvedObject.kind === 'PersistentVolume' && this.options.nodeName !== undefined) this.hold(event);
    else this.enqueue(event);
  }

  /** Resolves once every Event recorded so far (held ones included) has been written or given up. */
  flush(): Promise<void> {
    this.endBurst();
    return this.queue;
  }

  private hold(event: EventInput): void {
    const now = this.clock.now();
    const burst = this.burst ??= { startedAt: now, events: [] };
    burst.events.push(event);
    burst.cancelTimer?.();
    const delay = Math.min(this.burstOptions.quietMs, burst.startedAt + this.burstOptions.maxMs - now);
    // Held Events do not keep a stopping process alive (a clock timer never does).
    burst.cancelTimer = this.clock.setTimer(Math.max(0, delay), () => this.endBurst());
  }

  /** Writes the held Events: each one while few of a reason, else one summary per reason on the Node. */
  private endBurst(): void {
    const burst = this.burst;
    if (!burst) return;
    this.burst = undefined;
    burst.cancelTimer?.();
    const byReason = new Map<string, EventInput[]>();
    for (const e of burst.events) {
      const same = byReason.get(e.reason);
      if (same) same.push(e);
      else byReason.set(e.reason, [e]);
    }
    for (const [reason, events] of byReason) {
      if (events.length <= this.burstOptions.maxSingle) events.forEach((e) => this.enqueue(e));
      else this.enqueue({ involvedObject: nodeReference(this.options.nodeName!), type: 'Normal', reason, message: summaryMessage(events) });
    }
  }

  private enqueue(event: EventInput): void {
    if (this.pending >= this.maxPending) {
      this.fail(new Error(`event queue full (${this.maxPending} pending)`), event);
      return;
    }
    this.pending++;
    this.queue = this.queue.then(() => this.write(event)).catch((err) => this.fail(err, event)).finally(() => {
      this.pending--;
    });
  }

  private async write(event: EventInput): Promise<void> {
    if (this.clock.now() < this.forbiddenUntil) {
      this.logger.debug({ reason: event.reason, object: event.involvedObject.name, message: event.message }, 'event not written (RBAC grants no events)');
      return;
    }
    const decision = this.correlator.decide(event);
    if (decision.action === 'hold') return;
    if (decision.action === 'drop') {
      this.logger.debug({ reason: event.reason, object: event.involvedObject.name }, 'event dropped by per-object rate limit');
      return;
    }
    const namespace = event.involvedObject.namespace || 'default';
    const now = this.wallClock();
    if (decision.action === 'patch') {
      try {
        await this.api.patchEvent(namespace, decision.name, { count: decision.count, lastTimestamp: now.toISOString(), message: event.message });
        return;
      } catch (err) {
        // Events expire (1 h by default): write it anew under the same name, count kept.
        if (!isNotFound(err)) throw err;
      }
      await this.api.createEvent(namespace, this.build(event, decision.name, decision.firstTimestamp, now, decision.count));
      return;
    }
    const name = `${event.involvedObject.name}.${this.uniqueSuffix(now)}`;
    try {
      await this.api.createEvent(namespace, this.build(event, name, now, now, 1));
      this.correlator.created(decision.key, name, now);
    } catch (err) {
      this.correlator.forget(decision.key);
      throw err;
    }
  }

  private build(event: EventInput, name: string, first: Date, last: Date, count: number): CoreV1Event {
    return {
      metadata: { name, namespace: event.involvedObject.namespace || 'default' },
      involvedObject: event.involvedObject,
      type: event.type,
      reason: event.reason,
      message: event.message,
      source: { component: this.component, host: this.options.nodeName },
      reportingComponent: this.component,
      reportingInstance: this.options.nodeName,
      firstTimestamp: first,
      lastTimestamp: last,
      count,
    };
  }

  /** Like client-go's `<object>.<hex nanoseconds>`; the sequence keeps two Events of one millisecond apart. */
  private uniqueSuffix(now: Date): string {
    return (BigInt(now.getTime()) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16);
  }

  private fail(err: unknown, event: EventInput): void {
    if (isForbidden(err)) {
      // The device provisioner's RBAC grants no events: say so once, then try again only now and then.
      const first = this.forbiddenUntil === 0;
      this.forbiddenUntil = this.clock.now() + FORBIDDEN_RETRY_MS;
      const message = 'this agent may not write Events (its RBAC grants no create on events); they are logged at debug instead, and tried again every '
        + `${FORBIDDEN_RETRY_MS / 60_000} minutes. Add {apiGroups: [""], resources: ["events"], verbs: ["create", "patch"]} to its ClusterRole to see them`;
      if (first) this.logger.warn({ err: String(err), reason: event.reason, object: event.involvedObject.name }, message);
      else this.logger.debug({ err: String(err), reason: event.reason, object: event.involvedObject.name }, message);
    } else {
      this.logger.warn({ err: String(err), reason: event.reason, object: event.involvedObject.name }, 'could not write event');
    }
    try {
      this.options.onFailure?.(err, event);
    } catch {
      // A broken counter must not break recording.
    }
  }
}

/** `1000 PersistentVolumes: local-pv-a, local-pv-b, … (the first: created PV local-pv-a for /mnt/disks/vol1 (10Gi, Filesystem))` */
function summaryMessage(events: readonly EventInput[]): string {
  const names: string[] = [];
  let chars = 0;
  for (const e of events) {
    const name = e.involvedObject.name ?? '';
    if (chars + name.length > SUMMARY_NAMES_CHARS) break;
    names.push(name);
    chars += name.length + 2;
  }
  const more = events.length > names.length ? `, … (${events.length - names.length} more)` : '';
  return `${events.length} PersistentVolumes: ${names.join(', ')}${more}; the first: ${events[0].message}`;
}

/** The PV an Event is about. */
export function persistentVolumeReference(pv: V1PersistentVolume): V1ObjectReference {
  return { apiVersion: 'v1', kind: 'PersistentVolume', name: pv.metadata?.name, uid: pv.metadata?.uid };
}

/** The claim an Event is about (it is written in the claim's namespace). */
export function persistentVolumeClaimReference(claim: V1PersistentVolumeClaim): V1ObjectReference {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: claim.metadata?.namespace, name: claim.metadata?.name, uid: claim.metadata?.uid };
}

/**
 * The Node an Event is about, for node-wide problems. Given only a name, the UID is the
 * name, as the kubelet does; `kubectl describe node` finds Events under either.
 */
export function nodeReference(node: V1Node | string): V1ObjectReference {
  if (typeof node === 'string') return { apiVersion: 'v1', kind: 'Node', name: node, uid: node };
  return { apiVersion: 'v1', kind: 'Node', name: node.metadata?.name, uid: node.metadata?.uid ?? node.metadata?.name };
}
