import { spawnSync } from 'node:child_process';

/** One sample line of the Prometheus text format. */
export interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** Parses the samples of a Prometheus text exposition (enough for our own output). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = JSON.parse(`"${l[2]}"`);
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

/** `# TYPE` of each metric family. */
export function familyTypes(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
}

/** The samples named `name` whose labels include `labels`. */
export function samplesOf(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return parseSamples(text).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** Runs Debian's `promtool check metrics` over an exposition. */
export function promtoolCheckMetrics(text: string): { status: number | null; output: string } {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (r.error) throw new Error(`promtool could not run (install Debian's prometheus package): ${r.error.message}`);
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}
