/**
 * The bench's two tables (figures beside the Go peer's, and the rest), printed as rows
 * come in and written as markdown, and the formatting the rows share.
 */
import * as os from 'node:os';

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

export const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
export const millis = (ms: number) => `${ms.toFixed(0)} ms`;
export const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

interface Row {
  readonly figure: string;
  readonly value: string;
  readonly goal: string;
  /** yes / NO, or '—' for a figure without a goal. */
  readonly met: string;
}

interface PeerRow {
  readonly figure: string;
  readonly ours: string;
  readonly peer: string;
  /** ours ÷ peer, or '—'. */
  readonly ratio: string;
  readonly goal: string;
  readonly met: string;
}

const rows: Row[] = [];
const peerRows: PeerRow[] = [];

/** A figure, with its goal when it has one. */
export function row(figure: string, value: string, goal = '—', met?: boolean): void {
  const r = { figure, value, goal, met: met === undefined ? '—' : met ? 'yes' : 'NO' };
  rows.push(r);
  console.log(`  ${r.figure}: ${r.value}  [goal: ${r.goal}; met: ${r.met}]`);
}

/** A figure beside the Go peer's; `goal` is checked against `ours`. */
export function peerRow(figure: string, ours: number, peer: number | undefined, format: (n: number) => string,
  goal?: { readonly text: string; readonly ok: (n: number) => boolean }): void {
  const r = {
    figure,
    ours: format(ours),
    peer: peer === undefined ? '—' : format(peer),
    ratio: peer === undefined || peer === 0 ? '—' : `${(ours / peer).toFixed(2)}×`,
    goal: goal?.text ?? '—',
    met: goal === undefined ? '—' : goal.ok(ours) ? 'yes' : 'NO',
  };
  peerRows.push(r);
  console.log(`  ${r.figure}: ${r.ours} (Go ${r.peer}, ${r.ratio})  [goal: ${r.goal}; met: ${r.met}]`);
}

function machine(): string[] {
  const cpus = os.cpus();
  return [
    `- CPU: ${cpus[0]?.model ?? 'unknown'}, ${cpus.length} cores`,
    `- Memory: ${(os.totalmem() / GiB).toFixed(1)} GiB`,
    `- Kernel: ${os.release()}`,
    `- Node.js: ${process.version}`,
    `- Date: ${new Date().toISOString()}`,
  ];
}

/** A markdown table: a header row, then one line per row. */
function table(header: string[], lines: string[][]): string[] {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...lines.map((l) => `| ${l.map(cell).join(' | ')} |`),
  ];
}

/** docs/benchmarks.md: the machine, both tables, then `notes` (bench/notes.md). */
export function markdown(intro: string, notes: string): string {
  return [
    '# Benchmarks',
    '',
    intro,
    '',
    '## Machine',
    '',
    ...machine(),
    '',
    '## Beside the Go static provisioner (issue 16)',
    '',
    ...table(['Figure', 'Ours', 'Go peer', 'Ours ÷ Go', 'Goal', 'Met'], peerRows.map((r) => [r.figure, r.ours, r.peer, r.ratio, r.goal, r.met])),
    '',
    '## Figures',
    '',
    ...table(['Figure', 'Value', 'Goal', 'Met'], rows.map((r) => [r.figure, r.value, r.goal, r.met])),
    '',
    notes.trimEnd(),
    '',
  ].join('\n');
}
