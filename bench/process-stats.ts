/** What a process costs its node, read from /proc: RSS and CPU time, its children's included. */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';

/** USER_HZ: /proc/<pid>/stat counts CPU time in these. */
const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

export function rssBytes(pid: number): number {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

/** The process's children (the agent's findmnt --poll): their memory and CPU are the agent's too. */
function childrenOf(pid: number): number[] {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** User + system CPU seconds of the process and its living children. */
export function cpuSeconds(pid: number): number {
  const own = (p: number) => {
    const fields = fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  };
  return [pid, ...childrenOf(pid)].reduce((sum, p) => sum + own(p), 0);
}

/**
 * User + system CPU seconds of the process and its living children, each with those of the
 * children it has waited for: the commands the agent's command shells ran, and its own.
 */
export function cpuWithCommands(pid: number): number {
  const withWaited = (p: number) => fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ').slice(11, 15)
    .reduce((sum, f) => sum + Number(f), 0) / CLOCK_TICKS;
  return [pid, ...childrenOf(pid)].reduce((sum, p) => sum + withWaited(p), 0);
}

/** VmRSS of the process and of its living children. */
export function rssWithChildren(pid: number): { agent: number; children: number } {
  return { agent: rssBytes(pid), children: childrenOf(pid).reduce((sum, p) => sum + rssBytes(p), 0) };
}

/**
 * What the process and its living children hold in memory, three ways: RSS (every resident
 * page, the node binary's shared file pages included), private memory (RssAnon: the pages no
 * other process could share) and PSS (each shared page divided among its sharers).
 */
export function memoryWithChildren(pid: number): { rss: number; private: number; pss: number } {
  const kib = (text: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0) * 1024;
  const one = (p: number) => {
    const status = fs.readFileSync(`/proc/${p}/status`, 'utf8');
    const rollup = fs.readFileSync(`/proc/${p}/smaps_rollup`, 'utf8');
    return { rss: kib(status, 'VmRSS'), private: kib(status, 'RssAnon'), pss: kib(rollup, 'Pss') };
  };
  return [pid, ...childrenOf(pid)].map(one).reduce((a, b) => ({ rss: a.rss + b.rss, private: a.private + b.private, pss: a.pss + b.pss }));
}

/** RSS (its file-backed part: the node binary's pages; its private part, RssAnon) of an idle node process of the same binary running `args`. */
export async function nodeRss(args: string[]): Promise<{ rss: number; file: number; private: number }> {
  const child = spawn(process.execPath, args, { stdio: 'ignore' });
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const field = (name: string) => Number(/^\S+:\s+(\d+)/.exec(status.split('\n').find((l) => l.startsWith(`${name}:`))!)![1]) * 1024;
    return { rss: field('VmRSS'), file: field('RssFile'), private: field('RssAnon') };
  } finally {
    child.kill();
  }
}
