/**
 * The upstream snapshot controller (external-snapshotter v8, cmd/snapshot-controller) and
 * its CRDs, built from the Go module proxy by scripts/csi-tools.sh, run beside the test
 * control plane: the agent meets the same controller a cluster runs.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { CollectedProcess } from './collected-process';
import type { Kubernetes } from './kubernetes';
import { eventually } from '../runtime/kube/fixtures';

const REPO = path.resolve(__dirname, '../..');
let tools: string | undefined;

/** The directory of the snapshot controller, csi-sanity and the snapshot CRDs, built on first use. */
export function csiTools(): string {
  tools ??= execFileSync(path.join(REPO, 'scripts/csi-tools.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return tools;
}

/** The snapshot CRDs (and group snapshots', which the controller watches too), each established once this returns. */
export async function installSnapshotCrds(k: Kubernetes): Promise<void> {
  const dir = path.join(csiTools(), 'crds');
  const crds = fs.readdirSync(dir).map((file) => parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { metadata: { name: string } } & object);
  for (const crd of crds) await k.ensure(crd as never);
  for (const { metadata: { name } } of crds) {
    await eventually(async () => {
      const crd = await k.get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>('apiextensions.k8s.io/v1', 'CustomResourceDefinition', name);
      return crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') === true;
    }, `CRD ${name} is established`);
  }
}

/**
 * The snapshot controller, with distributed snapshotting on (each content labelled with its
 * volume's node, for that node's agent), against the cluster of `kubeconfig`.
 */
export function startSnapshotController(kubeconfig: string): CollectedProcess & { stop(): Promise<void> } {
  const child = spawn(path.join(csiTools(), 'snapshot-controller'), [
    `--kubeconfig=${kubeconfig}`, '--leader-election=false', '--enable-distributed-snapshotting', '--resync-period=30s', '--v=4',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  const process = new CollectedProcess(child);
  return Object.assign(process, {
    async stop() {
      if (process.running) child.kill('SIGTERM');
      await process.exited();
    },
  });
}
