/**
 * Counters, gauges and histograms with labels, and their Prometheus text exposition
 * (format 0.0.4): the part of a Prometheus client library the runtime uses, small
 * enough to read, with nothing loaded that the agent does not need.
 */

export type Labels<L extends string> = Readonly<Record<L, string>>;

/** Something that writes metric families into an exposition. */
export interface Collector {
  /** Appends the family's `# HELP`, `# TYPE` and sample lines. */
  collect(lines: string[]): void;
}

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export class Registry {
  private readonly collectors: Collector[] = [];

  register<C extends Collector>(collector: C): C {
    this.collectors.push(collector);
    return collector;
  }

  /** The text exposition of every registered family, in registration order. */
  exposition(): string {
    const lines: string[] = [];
    for (const c of this.collectors) c.collect(lines);
    lines.push('');
    return lines.join('\n');
  }
}

/** What every family shares: name, help, label names and a child per label-value combination. */
abstract class Family<L extends string, V> implements Collector {
  protected readonly children = new Map<string, { labels: Labels<L>; value: V }>();

  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly L[], private readonly type: string) {}

  /** Forgets every labelled series (the family stays, with no samples). */
  reset(): void {
    this.children.clear();
  }

  collect(lines: string[]): void {
    lines.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`);
    // A family without labels always has its one series, as client libraries do.
    if (this.labelNames.length === 0 && this.children.size === 0) this.child({} as Labels<L>);
    for (const { labels, value } of this.children.values()) this.samples(lines, labels, value);
  }

  protected child(labels: Labels<L>): { labels: Labels<L>; value: V } {
    const key = this.labelNames.map((n) => labels[n]).join('\u0000');
    let child = this.children.get(key);
    if (!child) {
      const missing = this.labelNames.filter((n) => labels[n] === undefined);
      if (missing.length > 0) throw new Error(`${this.name}: label ${missing.join(', ')} missing`);
      child = { labels: pick(labels, this.labelNames), value: this.initial() };
      this.children.set(key, child);
    }
    return child;
  }

  protected abstract initial(): V;
  protected abstract samples(lines: string[], labels: Labels<L>, value: V): void;
}

export class Counter<L extends string = never> extends Family<L, number> {
  constructor(name: string, help: string, labelNames: readonly L[] = []) {
    super(name, help, labelNames, 'counter');
  }

  inc(labels: Labels<L> = {} as Labels<L>, by = 1): void {
    if (!(by >= 0)) throw new Error(`${this.name}: a counter only goes up (got ${by})`);
    this.child(labels).value += by;
  }

  protected initial(): number {
    return 0;
  }

  protected samples(lines: string[], labels: Labels<L>, value: number): void {
    lines.push(sample(this.name, labels, value));
  }
}

export class Gauge<L extends string = never> extends Family<L, number> {
  constructor(name: string, help: string, labelNames: readonly L[] = []) {
    super(name, help, labelNames, 'gauge');
  }

  /** `set(value)` for a gauge without labels, `set(labels, value)` otherwise. */
  set(labelsOrValue: Labels<L> | number, value?: number): void {
    if (typeof labelsOrValue === 'number') this.child({} as Labels<L>).value = labelsOrValue;
    else this.child(labelsOrValue).value = value!;
  }

  inc(labels: Labels<L> = {} as Labels<L>, by = 1): void {
    this.child(labels).value += by;
  }

  protected initial(): number {
    return 0;
  }

  protected samples(lines: string[], labels: Labels<L>, value: number): void {
    lines.push(sample(this.name, labels, value));
  }
}

interface HistogramValue {
  /** Observations per bucket (not cumulative); the last is +Inf. */
  readonly counts: number[];
  sum: number;
  count: number;
}

export class Histogram<L extends string = never> extends Family<L, HistogramValue> {
  private readonly bounds: readonly number[];

  constructor(name: string, help: string, labelNames: readonly L[], buckets: readonly number[]) {
    super(name, help, labelNames, 'histogram');
    this.bounds = [...buckets].sort((a, b) => a - b);
  }

  observe(labels: Labels<L>, value: number): void {
    const v = this.child(labels).value;
    const i = this.bounds.findIndex((b) => value <= b);
    v.counts[i === -1 ? this.bounds.length : i] += 1;
    v.sum += value;
    v.count += 1;
  }

  protected initial(): HistogramValue {
    return { counts: new Array<number>(this.bounds.length + 1).fill(0), sum: 0, count: 0 };
  }

  protected samples(lines: string[], labels: Labels<L>, value: HistogramValue): void {
    let cumulative = 0;
    this.bounds.forEach((bound, i) => {
      cumulative += value.counts[i];
      lines.push(sample(`${this.name}_bucket`, labels, cumulative, ['le', formatNumber(bound)]));
    });
    lines.push(sample(`${this.name}_bucket`, labels, value.count, ['le', '+Inf']));
    lines.push(sample(`${this.name}_sum`, labels, value.sum));
    lines.push(sample(`${this.name}_count`, labels, value.count));
  }
}

/** `name{a="x",b="y"} 1`; `extra` is one more label (a histogram's `le`), written last. */
function sample(name: string, labels: Readonly<Record<string, string>>, value: number, extra?: [string, string]): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  if (extra) pairs.push(`${extra[0]}="${extra[1]}"`);
  return `${name}${pairs.length > 0 ? `{${pairs.join(',')}}` : ''} ${formatNumber(value)}`;
}

export function formatNumber(value: number): string {
  if (Number.isFinite(value)) return String(value);
  if (Number.isNaN(value)) return 'NaN';
  return value > 0 ? '+Inf' : '-Inf';
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function pick<L extends string>(labels: Labels<L>, names: readonly L[]): Labels<L> {
  const out = {} as Record<L, string>;
  for (const n of names) out[n] = String(labels[n]);
  return out;
}
