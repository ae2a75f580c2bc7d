/** Requests and response bytes per verb and resource, for benchmarks and request-count assertions. */

export interface Count {
  requests: number;
  bytes: number;
}

export class Counters {
  private readonly counts = new Map<string, Count>();

  private slot(verb: string, resource: string): Count {
    const key = `${verb} ${resource}`;
    let c = this.counts.get(key);
    if (!c) {
      c = { requests: 0, bytes: 0 };
      this.counts.set(key, c);
    }
    return c;
  }

  request(verb: string, resource: string): void {
    this.slot(verb, resource).requests++;
  }

  bytes(verb: string, resource: string, n: number): void {
    this.slot(verb, resource).bytes += n;
  }

  /** The count for one verb and resource (e.g. `list`, `persistentvolumes`); zero when none. */
  get(verb: string, resource: string): Count {
    const c = this.counts.get(`${verb} ${resource}`);
    return c ? { ...c } : { requests: 0, bytes: 0 };
  }

  /** Sum over every verb and resource matching the filters. */
  total(filter: { verb?: string; resource?: string } = {}): Count {
    const out = { requests: 0, bytes: 0 };
    for (const [key, c] of this.counts) {
      const [verb, resource] = key.split(' ');
      if ((filter.verb && filter.verb !== verb) || (filter.resource && filter.resource !== resource)) continue;
      out.requests += c.requests;
      out.bytes += c.bytes;
    }
    return out;
  }

  /** Every count, keyed `verb resource`. */
  snapshot(): Record<string, Count> {
    return Object.fromEntries([...this.counts].map(([k, c]) => [k, { ...c }]));
  }

  reset(): void {
    this.counts.clear();
  }
}
