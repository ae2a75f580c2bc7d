/**
 * The deleter's one table: what it is doing with each volume it has acted on,
 * keyed as the process table is (a PV's UID; for a volume whose PV is gone, its
 * record key, cleanup/release-decision.ts recordTaskKey).
 *
 * Three tables hold a volume's state, each for one kind of fact:
 * - the node's **record** (record/volume-record.ts), on disk: whether the volume is
 *   clean, offered or dirty, which survives the agent;
 * - the **process table** (cleanup/process-table.ts): a cleanup's queue, run,
 *   timeout, result and backoff;
 * - this table: what one pass leaves for the next. A volume not in it is decided
 *   afresh, each pass, from its PV and its record line.
 *
 * Its transitions:
 *
 *     (none) ── guarded write sent ──▶ writing ── answered ──▶ (none)
 *     (none) ── cleanup started ─────▶ cleaning ── reported, cleaned ────▶ let-go ── PV no longer listed ──▶ (none)
 *                                              └─ reported, not cleaned ─▶ (none)
 *
 * `writing` keeps a quick next pass from sending the same write twice; `cleaning`
 * holds what the report of the cleanup needs; `let-go` keeps a PV the cache still
 * lists for a moment after its finalizer went from being decided again. The
 * record's line turns clean only at the end of `cleaning`, once the PV is gone.
 */
import type { CleanTarget } from '../cleanup';

/** What a finished cleanup's report needs: metrics labels, and whether it ran here or in a Job. */
export interface CleaningReport {
  readonly target: CleanTarget;
  readonly capacityBytes: number;
  readonly type: 'process' | 'job';
}

export type ReleaseState =
  | { readonly state: 'writing' }
  | { readonly state: 'cleaning'; readonly report: CleaningReport }
  | { readonly state: 'let-go' };

export class ReleaseTable {
  private readonly entries = new Map<string, ReleaseState>();

  state(key: string): ReleaseState['state'] | undefined {
    return this.entries.get(key)?.state;
  }

  /** (none) -> writing. False when the volume is in another state: the write is not sent. */
  beginWrite(key: string): boolean {
    if (this.entries.has(key)) return false;
    this.entries.set(key, { state: 'writing' });
    return true;
  }

  /** writing -> (none): the next pass decides again from what the server answered. */
  endWrite(key: string): void {
    if (this.entries.get(key)?.state === 'writing') this.entries.delete(key);
  }

  /** (none) or writing -> cleaning: the process table accepted the cleanup. */
  cleaning(key: string, report: CleaningReport): void {
    this.entries.set(key, { state: 'cleaning', report });
  }

  /** Every volume being cleaned, with its report. */
  *cleanings(): IterableIterator<[string, CleaningReport]> {
    for (const [key, entry] of this.entries) if (entry.state === 'cleaning') yield [key, entry.report];
  }

  /** cleaning -> let-go when cleaned (its PV was let go), else -> (none). */
  reported(key: string, cleaned: boolean): void {
    if (this.entries.get(key)?.state !== 'cleaning') return;
    if (cleaned) this.entries.set(key, { state: 'let-go' });
    else this.entries.delete(key);
  }

  /** let-go -> (none) for every volume whose PV is no longer listed. */
  forgetLetGoExcept(listed: ReadonlySet<string>): void {
    for (const [key, entry] of this.entries) if (entry.state === 'let-go' && !listed.has(key)) this.entries.delete(key);
  }

  /** Whether any volume is being written or cleaned, or was just let go. */
  get busy(): boolean {
    return this.entries.size > 0;
  }
}
