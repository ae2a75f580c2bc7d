/**
 * Hot reload of a configuration: re-read on a period, applied only when its
 * content changed and it is valid. An invalid new configuration is reported and
 * the last good one stays in force, so a typo in a ConfigMap edit never stops a
 * running node agent.
 */
import { ConfigMapData, formatIssue, ParseResult } from '../../config';
import { codeUnitOrder } from '../code-unit-order';

/** A configuration that can be used: the config, its warnings and the classes left out of it. */
export type AppliedConfig<T> = Extract<ParseResult<T>, { ok: true }>;


export class ConfigReloader<T> {
  private lastData: string | undefined;
  private lastRejection: string | undefined;
  private good: AppliedConfig<T> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly applyListeners: ((applied: AppliedConfig<T>) => void)[] = [];
  private readonly rejectListeners: ((message: string) => void)[] = [];

  constructor(
    /** Where the configuration comes from, e.g. a mounted ConfigMap directory. */
    private readonly source: { readonly describe: string; readonly read: () => ConfigMapData },
    private readonly parse: (data: ConfigMapData) => ParseResult<T>,
    /** How often `start` re-reads it. */
    private readonly periodMs: number,
  ) {}

  /** Called with a new valid configuration (also the first one), or the one in force again after a rejected edit was reverted. */
  onApply(listener: (applied: AppliedConfig<T>) => void): void {
    this.applyListeners.push(listener);
  }

  /** Called with a changed configuration that cannot be used; the message names every problem. */
  onReject(listener: (message: string) => void): void {
    this.rejectListeners.push(listener);
  }

  /** The configuration in force, if any was ever valid. */
  get current(): T | undefined {
    return this.good?.config;
  }

  /**
   * Reads the source once. Returns the problems of a rejected configuration, or
   * an empty list when it was applied or had not changed.
   */
  reload(): string[] {
    let data: ConfigMapData;
    try {
      data = this.source.read();
    } catch (e) {
      return this.reject(`${this.source.describe}: cannot be read: ${(e as Error).message}`);
    }
    const key = JSON.stringify(Object.entries(data).sort(([a], [b]) => codeUnitOrder(a, b)));
    if (key === this.lastData) {
      // A rejected edit reverted: the configuration in force is the one the source holds again.
      if (this.lastRejection !== undefined && this.good !== undefined) {
        this.lastRejection = undefined;
        this.applied(this.good);
      }
      return [];
    }
    const result = this.parse(data);
    if (!result.ok) {
      const problems = result.errors.map(formatIssue).join('\n  ');
      return this.reject(`${this.source.describe} is invalid${this.good ? '; keeping the last good configuration' : ''}:\n  ${problems}`);
    }
    this.lastData = key;
    this.lastRejection = undefined;
    this.good = result;
    this.applied(result);
    return [];
  }

  /** Reads the source now, then every period until stopped. */
  start(): void {
    this.reload();
    this.timer = setInterval(() => this.reload(), this.periodMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private reject(message: string): string[] {
    // Report a bad configuration once, not on every period.
    if (message !== this.lastRejection) for (const listener of this.rejectListeners) listener(message);
    this.lastRejection = message;
    return [message];
  }

  private applied(config: AppliedConfig<T>): void {
    for (const listener of this.applyListeners) listener(config);
  }
}
