/**
 * `local-volume-provisioner volumes`: an administrator's word on the node's volume
 * record, run in the agent's pod (`kubectl exec`). `list` shows every line;
 * `reclaim PATH` has a held dirty volume cleaned and then offered again whatever its
 * reclaim policy (a pool volume kept under Retain: destroyed); `accept PATH` has it offered as it is (the administrator cleaned it
 * by hand, or gives its data on knowingly), to one claim with `--for NAMESPACE/CLAIM`.
 * The agent acts on the word at its next pass.
 */
import * as fs from 'node:fs';
import { AdminWord, VolumeRecordEntry } from './record-entry';
import { VolumeRecord } from './volume-record';
import { StartupError } from '../startup-error';

export interface VolumesCommandOptions {
  readonly stateDir: string;
  readonly action: 'list' | AdminWord;
  /** The volume's path (`spec.local.path`) or identity, for reclaim and accept. */
  readonly volume?: string;
  /** accept: the one claim (`namespace/name`) to give the volume to; else whichever claim of its class binds first. */
  readonly handTo?: string;
}

/** Runs the command; returns what it prints. Throws StartupError (exit 2) for a word that cannot be taken. */
export async function runVolumesCommand(options: VolumesCommandOptions): Promise<string> {
  if (!fs.existsSync(options.stateDir)) throw new StartupError(`there is no volume record in ${options.stateDir} (--state-dir)`);
  const { record } = VolumeRecord.open(options.stateDir);
  const health = record.health();
  if (!health.ok) throw new StartupError(health.problem);
  if (options.action === 'list') return formatLines(record.entries());
  const word = options.action;
  const wanted = options.volume ?? '';
  return record.update((r) => {
    const lines = r.entries().filter((e) => e.hostPath === wanted || e.identity === wanted);
    if (lines.length === 0) throw new StartupError(`the volume record has no line for ${JSON.stringify(wanted)}; "volumes list" shows them`);
    const dirty = lines.filter((e) => e.state === 'dirty');
    if (dirty.length === 0) throw new StartupError(`${wanted} is ${lines.map((e) => e.state).join(', ')}, not dirty: there is nothing to ${word}`);
    const pool = dirty.some((e) => e.dialect === 'pool');
    if (pool && word === 'accept') throw new StartupError(`${wanted} is a pool volume: it is never given to another claim; "volumes reclaim" destroys it`);
    const since = new Date().toISOString();
    const what = word === 'reclaim' ? (pool ? 'destroy it' : 'clean it, then offer it')
      : options.handTo ? `give it as it is to claim ${options.handTo} only` : 'offer it as it is';
    const writes = dirty.map((e): VolumeRecordEntry => ({
      ...e, admin: word, ...(options.handTo ? { handTo: options.handTo } : {}), since, reason: `an administrator said "${word}" (${what}); it was: ${e.reason}`,
    }));
    const warning = word === 'accept' && !options.handTo
      ? 'its data goes to whichever claim of its class is bound to it first; "--for NAMESPACE/CLAIM" gives it to that claim only\n'
      : '';
    return { writes, result: `${writes.map((e) => `${e.hostPath} (${e.identity}): ${word}`).join('\n')}\n${warning}the agent acts on it at its next pass\n` };
  });
}

function formatLines(entries: readonly VolumeRecordEntry[]): string {
  const rows = [['STATE', 'PATH', 'CLASS', 'PV', 'SINCE', 'REASON'],
    ...[...entries].sort((a, b) => (a.hostPath < b.hostPath ? -1 : a.hostPath > b.hostPath ? 1 : 0))
      .map((e) => [e.state + (e.admin ? ` (${e.admin})` : ''), e.hostPath, e.storageClass, e.pvName ?? '', e.since, e.reason])];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const table = rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n') + '\n';
  return entries.some((e) => e.state === 'dirty') ? `${table}\n${RELEASE_HINT}` : table;
}

/** How an administrator releases a dirty volume's PV that is still in the cluster (Released, or stuck) safely. */
const RELEASE_HINT = 'A dirty volume whose PV is still in the cluster (Released, or stuck) is offered again only after that PV goes. To release it safely:\n'
  + '  kubectl delete pv <its PV>\n'
  + 'The agent then cleans the volume (reclaim policy Delete) or holds it (Retain: then "volumes reclaim PATH" or "volumes accept PATH") '
  + 'before it offers it again. Never clear or change the PV\'s claimRef: the next claim would be bound to the data (the claim guard refuses it).\n';
