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

export interface ConfigReloaderHooks<T> {
  /** A new valid configuration (also the first one), or the one in force again after a rejected edit was reverted. */
  readonly onApply: (applied: AppliedConfig<T>) => void;
  /** A changed configuration that cannot be used; `message` names every problem. */
  readonly onReject: (message: string) => void;
}

export class ConfigReloader<T> {
  private lastData: string | undefined;
  private lastRejection: string | undefined;
  private good: AppliedConfig<T> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    /** Where the configuration comes from, e.g. a mounted ConfigMap directory. */
    private readonly source: { readonly describe: string; readonly read: () => ConfigMapData },
    private readonly parse: (data: ConfigMapData) => ParseResult<T>,
    private readonly hooks: ConfigReloaderHooks<T>,
  ) {}

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
        this.hooks.onApply(this.good);
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
    this.hooks.onApply(result);
    return [];
  }

  /** Re-reads every `periodMs` until stopped. */
  start(periodMs: number): void {
    this.timer = setInterval(() => this.reload(), periodMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private reject(message: string): string[] {
    // Report a bad configuration once, not on every period.
    if (message !== this.lastRejection) this.hooks.onReject(message);
    this.lastRejection = message;
    return [message];
  }
}
