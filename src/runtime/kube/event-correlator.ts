import type { V1ObjectReference } from '@kubernetes/client-node';
import { Clock } from './clock';
import { LruMap } from './lru';
import { TokenBucket } from './rate-limiter';

export type EventType = 'Normal' | 'Warning';

/** One thing to report: what happened (reason, message) to which object. */
export interface EventInput {
  readonly involvedObject: V1ObjectReference;
  readonly type: EventType;
  readonly reason: string;
  readonly message: string;
}

export interface EventCorrelatorOptions {
  /** A repeat within this time of the last one sent updates the same Event. @default 3600000 (1 h, the Event TTL) */
  readonly windowMs?: number;
  /**
   * Repeats within this time of the last one sent are only counted; the next repeat
   * after it carries the count. A lasting condition seen on every pass thus costs one
   * request per interval, and none of the object's rate limit meanwhile.
   * @default 600000 (10 min)
   */
  readonly repeatIntervalMs?: number;
  /** Events one object may get at once. @default 25 (client-go) */
  readonly burstPerObject?: number;
  /** Steady events per second per object after the burst. @default 1/300 (client-go) */
  readonly qpsPerObject?: number;
  /** Remembered events and objects; the least recent are forgotten beyond it. @default 4096 */
  readonly maxEntries?: number;
}

/** What the recorder should send for one input. */
export type EventDecision =
  /** A new Event, under a fresh name. */
  | { readonly action: 'create'; readonly key: string }
  /** A repeat: bump count and lastTimestamp of the Event already sent under `name`. */
  | { readonly action: 'patch'; readonly key: string; readonly name: string; readonly count: number; readonly firstTimestamp: Date }
  /** A repeat too soon after the last one sent: counted, sent with a later repeat. */
  | { readonly action: 'hold' }
  /** Over this object's rate limit: send nothing. */
  | { readonly action: 'drop' };

interface Seen {
  name: string;
  count: number;
  firstTimestamp: Date;
  lastSent: number;
}

/**
 * Deduplication and spam control like client-go's EventCorrelator: the same
 * (source, object, type, reason, message) within the window becomes one Event whose
 * count grows; each object has a token bucket so a flapping volume cannot flood etcd.
 * Unlike client-go, repeats are deduplicated before the rate limit, and sent at most
 * once per repeat interval, and the budget is per object *and reason*: a condition
 * re-found on every pass, or thirty rejected entries, cannot use up the Node's budget
 * for another kind of Event about it (a ConfigInvalid still goes out).
 */
export class EventCorrelator {
  private readonly windowMs: number;
  private readonly repeatIntervalMs: number;
  private readonly seen: LruMap<string, Seen>;
  private readonly limits: LruMap<string, TokenBucket>;

  constructor(private readonly source: string, private readonly clock: Clock, private readonly options: EventCorrelatorOptions = {}) {
    this.windowMs = options.windowMs ?? 3_600_000;
    this.repeatIntervalMs = options.repeatIntervalMs ?? 600_000;
    this.seen = new LruMap(options.maxEntries ?? 4096);
    this.limits = new LruMap(options.maxEntries ?? 4096);
  }

  decide(input: EventInput): EventDecision {
    const key = eventKey(this.source, input);
    const now = this.clock.now();
    const last = this.seen.get(key);
    const repeat = last !== undefined && now - last.lastSent < this.windowMs;
    if (repeat && now - last.lastSent < this.repeatIntervalMs) {
      last.count += 1;
      return { action: 'hold' };
    }
    if (!this.allow(`${objectKey(input.involvedObject)}\u0000${input.reason}`)) return { action: 'drop' };
    if (!repeat) return { action: 'create', key };
    last.count += 1;
    last.lastSent = now;
    return { action: 'patch', key, name: last.name, count: last.count, firstTimestamp: last.firstTimestamp };
  }

  /** Remembers the Event created for `key`, so that repeats patch it. */
  created(key: string, name: string, firstTimestamp: Date): void {
    this.seen.set(key, { name, count: 1, firstTimestamp, lastSent: this.clock.now() });
  }

  /** Forgets `key` after its Event could not be written, so the next repeat creates one. */
  forget(key: string): void {
    this.seen.delete(key);
  }

  private allow(object: string): boolean {
    let bucket = this.limits.get(object);
    if (!bucket) {
      bucket = new TokenBucket({ qps: this.options.qpsPerObject ?? 1 / 300, burst: this.options.burstPerObject ?? 25, clock: this.clock });
      this.limits.set(object, bucket);
    }
    return bucket.tryTake();
  }
}

/** Identity of an object for rate limiting: kind, namespace, name, UID, apiVersion. */
export function objectKey(o: V1ObjectReference): string {
  return [o.kind, o.namespace, o.name, o.uid, o.apiVersion].map((p) => p ?? '').join('\u0000');
}

/** Identity of an event for deduplication: source, object, type, reason and message. */
export function eventKey(source: string, e: EventInput): string {
  return [source, objectKey(e.involvedObject), e.type, e.reason, e.message].join('\u0000');
}
