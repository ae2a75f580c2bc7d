/**
 * The bench's cluster and agent: the tests' real control plane (etcd, kube-apiserver,
 * controller manager, scheduler) with this node, the agent's namespace and one class, and
 * the real bin, bundled as the image runs it, talking to the apiserver through the fault
 * proxy, which counts its requests and bytes. The bench reads PVs from a watched copy,
 * straight from the apiserver, so its own reads are neither counted nor slow the agent.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CoreV1Api, V1PersistentVolume } from '@kubernetes/client-node';
import { Chart, Testing } from 'cdk8s';
import { ProvisionerConfigInput } from '../src/config';
import { LocalVolumeProvisioner } from '../src/constructs';
import { directoryPVName } from '../src/runtime/pv';
import { AgentProcess, bundledBin, REPO } from '../test/support/agent-process';
import { writeConfigDir } from '../test/support/class-config';
import { Kubernetes } from '../test/support/kubernetes';
import { makeTempDir } from '../test/support/privileged';
import { Watched } from '../test/support/watched';

export const NODE = 'bench-node';
export const NAMESPACE = 'local-volume-provisioner';
export const CLASS = 'local-fs';
/** Where bench/run.ts bundles the bin. */

/** NODE_OPTIONS as the image sets them (image/Dockerfile): the bench runs the agent as the image does, and once without them. */
export const IMAGE_NODE_OPTIONS = (() => {
  const dockerfile = fs.readFileSync(path.join(REPO, 'image/Dockerfile'), 'utf8');
  const match = /^ENV .*\bNODE_OPTIONS="([^"]*)"/m.exec(dockerfile);
  if (!match) throw new Error('image/Dockerfile sets no NODE_OPTIONS="..."');
  return match[1];
})();

export /** The `--kube-api-qps` and `--kube-api-burst` args the construct gives the agent by default. */
function constructRateLimitArgs(): string[] {
  const chart = new Chart(Testing.app(), 'bench');
  new LocalVolumeProvisioner(chart, 'lvp', { storageClasses: [{ name: CLASS, hostDir: '/mnt/disks' }] });
  const ds = Testing.synth(chart).find((m) => m.kind === 'DaemonSet');
  return (ds!.spec.template.spec.containers[0].args as string[]).filter((a) => /^--kube-api-(qps|burst)=/.test(a));
}

export const pvName = (entry: string) => directoryPVName(entry, NODE, CLASS);

/** Polls `condition` every `pollMs` until it holds, or fails naming what was awaited. */
export async function until(condition: () => boolean, what: string, timeoutMs = 120_000, pollMs = 2): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export class BenchCluster {
  /** A control plane with this node, the namespace and the class's StorageClass, and a watched copy of its PVs. */
  static async start(): Promise<BenchCluster> {
    // No audit log: each request would wait for its line to be written, a cost no cluster's agent sees.
    const k = await Kubernetes.start({ controllers: true, audit: false });
    await k.createNode({ metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } });
    await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
    await k.create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: CLASS },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    const kc = k.plane.kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    return new BenchCluster(k, await Watched.start<V1PersistentVolume>(kc, '/api/v1/persistentvolumes', () => core.listPersistentVolume()));
  }

  private constructor(readonly k: Kubernetes, private readonly pvs: Watched<V1PersistentVolume>) {}

  pv(name: string): V1PersistentVolume | undefined {
    return this.pvs.get(name);
  }

  pvCount(): number {
    return this.pvs.list().length;
  }

  /** The PV exists, is Available and (given `notUid`) is not that one. */
  available(name: string, notUid?: string): boolean {
    const p = this.pv(name);
    return p !== undefined && p.status?.phase === 'Available' && p.metadata!.uid !== notUid;
  }

  /** A kubeconfig file for the agent: through the proxy, as the administrator. */
  async kubeconfigFile(): Promise<string> {
    const file = path.join(makeTempDir('lvp-bench-'), 'kubeconfig');
    await this.k.writeKubeconfig(file);
    return file;
  }

  /**
   * The bundled bin's `run` with one Filesystem class over `dir` (or the classes given), the bin's
   * default flags and `nodeOptions` in NODE_OPTIONS, as the agent of `nodeName` (a Node that exists).
   */
  async startAgent(dir: string, extraArgs: string[] = [], nodeOptions = IMAGE_NODE_OPTIONS,
    storageClassMap: ProvisionerConfigInput['storageClassMap'] = { [CLASS]: { hostDir: dir, mountDir: dir } }, nodeName = NODE): Promise<AgentProcess> {
    const configDir = writeConfigDir(makeTempDir('lvp-bench-config-'), { storageClassMap });
    return AgentProcess.start(
      ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--state-dir', makeTempDir('lvp-bench-state-'), ...extraArgs],
      { KUBECONFIG: await this.kubeconfigFile(), MY_NODE_NAME: nodeName, MY_NAMESPACE: NAMESPACE, NODE_OPTIONS: nodeOptions },
      { entry: [bundledBin()], containerEnv: true },
    );
  }

  async stop(): Promise<void> {
    await this.pvs.stop();
    await this.k.stop();
  }
}
