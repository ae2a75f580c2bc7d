/**
 * The container image run with podman as kubelet runs a synthesized workload's
 * container on this node: its image and args (`$(VAR)` expanded) under the image's
 * ENTRYPOINT (or its command), its env (field references resolved), its
 * securityContext's privilege and user, its memory limit, each hostPath volume at
 * its mount path with its propagation (HostToContainer is `rslave`) and read-only
 * flag, each ConfigMap volume as kubelet lays it out, and a network namespace of its
 * own (PrivateNetwork). In place of the ServiceAccount token kubelet mounts, a
 * kubeconfig for the ServiceAccount's user, named by KUBECONFIG.
 */
import { ChildProcess, execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PrivateNetwork } from './private-network';
import { Cluster, expandVars, Manifest } from '../e2e/cluster';
import { REPO } from '../support/agent-process';
import { CollectedProcess } from '../support/collected-process';

const PODMAN = path.join(REPO, 'scripts/podman.sh');
/** Where the kubeconfig standing in for the ServiceAccount token is mounted. */
const CREDENTIALS = '/var/run/lvp-test';
/** How long podman lets the container run at most, should a test run die without removing it. */
const MAX_LIFETIME_S = 3600;

/** `podman run` arguments for the container of this workload's pod on this node. */
export function podmanRunArgs(cluster: Cluster, workloadName: string, name: string): string[] {
  const { pod, container, namespace, env, kubeconfig } = cluster.podOnNode(workloadName);
  const volumes = (container.volumeMounts ?? []).map((m: Manifest) => {
    const volume = pod.volumes.find((v: Manifest) => v.name === m.name);
    return `${volumeSource(cluster, volume, namespace)}:${m.mountPath}:${mountOptions(m).join(',')}`;
  });
  const credentials = path.join(path.dirname(kubeconfig), `credentials-${name}`);
  fs.mkdirSync(credentials, { recursive: true });
  fs.copyFileSync(kubeconfig, path.join(credentials, 'kubeconfig'));
  const envArgs = Object.entries({ ...env, KUBECONFIG: `${CREDENTIALS}/kubeconfig` }).map(([k, v]) => `--env=${k}=${v}`);
  const security = container.securityContext ?? {};
  const memoryLimit = container.resources?.limits?.memory;
  return [
    'run', '--rm', `--name=${name}`, '--pull=never', '--network=host', `--timeout=${MAX_LIFETIME_S}`,
    ...(security.privileged ? ['--privileged'] : []),
    ...(security.runAsUser !== undefined ? [`--user=${security.runAsUser}`] : []),
    ...(memoryLimit ? [`--memory=${podmanMemory(memoryLimit)}`] : []),
    ...(container.command ? [`--entrypoint=${JSON.stringify(container.command)}`] : []),
    ...envArgs,
    ...volumes.map((v: string) => `--volume=${v}`),
    `--volume=${credentials}:${CREDENTIALS}:ro`,
    container.image,
    ...(container.args ?? []).map((a: string) => expandVars(a, env)),
  ];
}

/** The host directory behind a pod volume (made, as kubelet makes a DirectoryOrCreate hostPath). */
function volumeSource(cluster: Cluster, volume: Manifest | undefined, namespace: string): string {
  if (volume?.hostPath) {
    fs.mkdirSync(volume.hostPath.path, { recursive: true });
    return volume.hostPath.path;
  }
  if (volume?.configMap) return cluster.configMapVolume(volume.configMap.name, namespace).dir;
  throw new Error(`the image test does not provide the volume ${JSON.stringify(volume)}`);
}

/** A memory quantity (`512Mi`) as podman's --memory takes it (`512m`; podman's units are binary). */
function podmanMemory(quantity: string): string {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(quantity);
  if (!m) throw new Error(`the image test does not convert the memory limit ${quantity}`);
  return `${m[1]}${m[2]?.[0].toLowerCase() ?? 'b'}`;
}

function mountOptions(m: Manifest): string[] {
  const propagation: Record<string, string> = { None: 'rprivate', HostToContainer: 'rslave', Bidirectional: 'rshared' };
  return [m.readOnly ? 'ro' : 'rw', propagation[m.mountPropagation ?? 'None']];
}

/** One run of the image; its output (the agent's log) is collected line by line. */
export class PodContainer extends CollectedProcess {
  /** Starts `podman run <args>` inside the network namespace. */
  static start(network: PrivateNetwork, name: string, runArgs: string[]): PodContainer {
    const [command, ...args] = network.enter([PODMAN, ...runArgs]);
    return new PodContainer(name, spawn(command, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  private constructor(readonly name: string, child: ChildProcess) {
    super(child);
  }

  /** Sends `signal` to the container's PID 1, as kubelet does to stop it. */
  async signal(signal: NodeJS.Signals): Promise<void> {
    await promisify(execFile)(PODMAN, ['kill', `--signal=${signal}`, this.name], { cwd: REPO });
  }

  /** Removes the container if it still runs (after a failed test). */
  async remove(): Promise<void> {
    if (!this.running) return;
    await promisify(execFile)(PODMAN, ['rm', '--force', '--time=0', this.name], { cwd: REPO }).catch(() => undefined);
    await this.exited();
  }
}
