import type { CoreV1Event, V1Node, V1ObjectReference, V1PersistentVolume } from '@kubernetes/client-node';
import { KubeApi } from './api-client';
import { Clock, systemClock } from './clock';
import { isNotFound } from './errors';
import { EventCorrelator, EventCorrelatorOptions, EventInput } from './event-correlator';
import { KubeLogger, silentLogger } from './logger';
import { EVENT_COMPONENT } from '../well-known';

export interface EventRecorderOptions {
  /** `source.host` of every Event: this node. */
  readonly nodeName: string;
  /** `source.component`. @default 'local-volume-provisioner' */
  readonly component?: string;
  /** Deduplication window and per-object rate limit. */
  readonly correlator?: EventCorrelatorOptions;
  /** Events waiting to be written; beyond it new ones are dropped (API down). @default 1000 */
  readonly maxPending?: number;
  /** Told about each Event that could not be written, for a failure counter. */
  readonly onFailure?: (err: unknown, event: EventInput) => void;
  readonly logger?: KubeLogger;
  /** Drives the dedup window and rate limit. @default systemClock */
  readonly clock?: Clock;
  /** Wall time for the Events' timestamps. @default () => new Date() */
  readonly wallClock?: () => Date;
}

/**
 * Writes core/v1 Events about our PVs and Node, deduplicated like client-go's recorder
 * (a repeat patches count and lastTimestamp of the Event already written). Recording
 * never blocks and never throws: Events are written in order in the background, and a
 * failure is logged and counted.
 */
export class EventRecorder {
  private readonly component: string;
  private readonly correlator: EventCorrelator;
  private readonly logger: KubeLogger;
  private readonly maxPending: number;
  private readonly wallClock: () => Date;
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private sequence = 0;

  constructor(private readonly api: KubeApi, private readonly options: EventRecorderOptions) {
    this.component = options.component ?? EVENT_COMPONENT;
    this.correlator = new EventCorrelator(`${this.component}\u0000${options.nodeName}`, options.clock ?? systemClock, options.correlator);
    this.logger = options.logger ?? silentLogger;
    this.maxPending = options.maxPending ?? 1000;
    this.wallClock = options.wallClock ?? (() => new Date());
  }

  normal(involvedObject: V1ObjectReference, reason: string, message: string): void {
    this.record({ involvedObject, type: 'Normal', reason, message });
  }

  warning(involvedObject: V1ObjectReference, reason: string, message: string): void {
    this.record({ involvedObject, type: 'Warning', reason, message });
  }

  record(event: EventInput): void {
    if (this.pending >= this.maxPending) {
      this.fail(new Error(`event queue full (${this.maxPending} pending)`), event);
      return;
    }
    this.pending++;
    this.queue = this.queue.then(() => this.write(event)).catch((err) => this.fail(err, event)).finally(() => {
      this.pending--;
    });
  }

  /** Resolves once every Event recorded so far has been written or given up. */
  flush(): Promise<void> {
    return this.queue;
  }

  private async write(event: EventInput): Promise<void> {
    const decision = this.correlator.decide(event);
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
    this.logger.warn({ err: String(err), reason: event.reason, object: event.involvedObject.name }, 'could not write event');
    try {
      this.options.onFailure?.(err, event);
    } catch {
      // A broken counter must not break recording.
    }
  }
}

/** The PV an Event is about. */
export function persistentVolumeReference(pv: V1PersistentVolume): V1ObjectReference {
  return { apiVersion: 'v1', kind: 'PersistentVolume', name: pv.metadata?.name, uid: pv.metadata?.uid };
}

/**
 * The Node an Event is about, for node-wide problems. Given only a name, the UID is the
 * name, as the kubelet does; `kubectl describe node` finds Events under either.
 */
export function nodeReference(node: V1Node | string): V1ObjectReference {
  if (typeof node === 'string') return { apiVersion: 'v1', kind: 'Node', name: node, uid: node };
  return { apiVersion: 'v1', kind: 'Node', name: node.metadata?.name, uid: node.metadata?.uid ?? node.metadata?.name };
}
