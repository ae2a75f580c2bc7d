/**
 * The standard `process_*` metrics of Prometheus client libraries and a few `nodejs_*`
 * ones, read from /proc and V8 when scraped: nothing runs between scrapes (no event
 * loop sampling timer, no GC observer), so an idle agent stays idle.
 */
import * as fs from 'node:fs';
import { Collector, Counter, Gauge } from './prometheus';

const START_TIME_SECONDS = Math.round(Date.now() / 1000 - process.uptime());

export class ProcessMetrics implements Collector {
  collect(lines: string[]): void {
    const cpu = process.cpuUsage();
    const status = procStatus();
    const memory = process.memoryUsage();
    const families = [
      counter('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', cpu.user / 1e6),
      counter('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', cpu.system / 1e6),
      counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', (cpu.user + cpu.system) / 1e6),
      gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', START_TIME_SECONDS),
      gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', status.VmRSS ?? memory.rss),
      ...(status.VmSize !== undefined ? [gauge('process_virtual_memory_bytes', 'Virtual memory size in bytes.', status.VmSize)] : []),
      ...(status.VmData !== undefined ? [gauge('process_heap_bytes', 'Process heap size in bytes.', status.VmData)] : []),
      ...fdFamilies(),
      gauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', memory.heapTotal),
      gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', memory.heapUsed),
      gauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', memory.external),
      activeResources(),
      versionInfo(),
    ];
    for (const f of families) f.collect(lines);
  }
}

function counter(name: string, help: string, value: number): Counter {
  const c = new Counter(name, help);
  c.inc({}, value);
  return c;
}

function gauge(name: string, help: string, value: number): Gauge {
  const g = new Gauge(name, help);
  g.set(value);
  return g;
}

/** VmRSS, VmSize, VmData of /proc/self/status, in bytes (empty where there is no /proc). */
function procStatus(): Partial<Record<'VmRSS' | 'VmSize' | 'VmData', number>> {
  const out: Partial<Record<'VmRSS' | 'VmSize' | 'VmData', number>> = {};
  try {
    for (const m of fs.readFileSync('/proc/self/status', 'utf8').matchAll(/^(VmRSS|VmSize|VmData):\s+(\d+) kB$/gm)) {
      out[m[1] as 'VmRSS' | 'VmSize' | 'VmData'] = Number(m[2]) * 1024;
    }
  } catch {
    // Not Linux: the families are left out.
  }
  return out;
}

function fdFamilies(): Gauge[] {
  try {
    const open = fs.readdirSync('/proc/self/fd').length - 1; // the directory read itself holds one
    const limit = /^Max open files\s+(\d+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return [
      gauge('process_open_fds', 'Number of open file descriptors.', open),
      ...(limit ? [gauge('process_max_fds', 'Maximum number of open file descriptors.', Number(limit[1]))] : []),
    ];
  } catch {
    return [];
  }
}

function activeResources(): Gauge<'type'> {
  const g = new Gauge('nodejs_active_resources', 'Number of active resources keeping the event loop alive, by type.', ['type']);
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  for (const [type, count] of counts) g.set({ type }, count);
  return g;
}

function versionInfo(): Gauge<'version' | 'major' | 'minor' | 'patch'> {
  const g = new Gauge('nodejs_version_info', 'Node.js version info.', ['version', 'major', 'minor', 'patch']);
  const [major, minor, patch] = process.versions.node.split('.');
  g.set({ version: process.version, major, minor, patch }, 1);
  return g;
}
