/**
 * A one-node cluster for the end-to-end suite, built the way a user deploys the
 * product: a chart with the LocalVolumeProvisioner construct is synthesized in
 * process; its Namespace, ServiceAccounts, RBAC, ConfigMaps and StorageClasses go
 * to a real Kubernetes control plane (test/support/control-plane.ts: RBAC, the PV
 * controller, the garbage collector) through the real `kubectl apply`; the node agent
 * is the real bin, started with the synthesized DaemonSet's container args and env,
 * with a real token of the synthesized ServiceAccount, reading the synthesized
 * ConfigMap from a directory laid out as kubelet mounts it.
 *
 * What kubelet and the container image would provide is provided here, and only
 * that: field references and `$(VAR)` expansion, the ConfigMap volume, the
 * image's cleaner scripts at /scripts (a bind mount of image/scripts, in the
 * test's private mount namespace), and a loopback port of the container's own
 * (`:8080` becomes `127.0.0.1:0`, since every test shares the host's network).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  BatchV1Api, CoreV1Api, CoreV1Event, KubernetesListObject, KubernetesObject, V1ConfigMap, V1Job, V1PersistentVolume,
} from '@kubernetes/client-node';
import { Chart, Testing } from 'cdk8s';
import { stringify } from 'yaml';
import { LocalVolumeProvisioner, LocalVolumeProvisionerProps } from '../../src/constructs';
import { AgentProcess, REPO } from '../support/agent-process';
import { AdmissionRefusal, ControlPlane, Denial } from '../support/control-plane';
import { Kubernetes } from '../support/kubernetes';
import { pvIs } from '../support/persistent-volumes';
import { makeTempDir, mount, unmount } from '../support/privileged';
import { Watched } from '../support/watched';

/** Where the image keeps the cleaner scripts (image/Dockerfile). */
const IMAGE_SCRIPTS = '/scripts';
export const NODE_NAME = 'worker-1';

/** A synthesized Kubernetes object, loosely typed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Manifest = Record<string, any>;

/** The claim guard's kinds (src/constructs/claim-guard.ts). */
const CLAIM_GUARD_KINDS = new Set(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);

/** The kinds a user applies before the agents start (the workloads are what this suite plays). */
const APPLIED_KINDS = new Set([
  'Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ConfigMap', 'StorageClass', 'CSIDriver',
  ...CLAIM_GUARD_KINDS,
]);

export interface ClusterOptions {
  /**
   * Leave the claim guard out of the first apply, for installClaimGuard() to apply later:
   * PVs of a replaced provisioner are in the cluster before the construct's stack is.
   */
  readonly claimGuardLater?: boolean;
}

/** Synthesizes one LocalVolumeProvisioner in a chart, in process, as `cdk8s synth` does. */
export function synthesize(props: LocalVolumeProvisionerProps): Manifest[] {
  const chart = new Chart(Testing.app(), 'e2e');
  // The node's volume record in a directory of the test's own: the default is the host's /var/lib/local-volume-provisioner.
  new LocalVolumeProvisioner(chart, 'provisioner', { stateDirectory: makeTempDir('lvp-e2e-state-'), ...props });
  return Testing.synth(chart);
}

/** The one object of this kind and name. */
export function find(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` ${name}` : ''} in the synthesized manifests, found ${found.length}`);
  return found[0];
}

/**
 * The image's cleaner scripts at /scripts, as in the container. The bind mount is
 * undone by cleanupPrivileged(); call the returned function after it to remove
 * the /scripts directory when this made it.
 */
export function installImageScripts(): () => void {
  const created = !fs.existsSync(IMAGE_SCRIPTS);
  mount(path.join(REPO, 'image/scripts'), IMAGE_SCRIPTS, { bind: true });
  return () => {
    if (!created) return;
    try {
      fs.rmdirSync(IMAGE_SCRIPTS);
    } catch {
      // still mounted by another suite of this run, which removes it
    }
  };
}

/** A workload's pod on this node: what kubelet starts its container from. */
export interface PodOnNode {
  readonly pod: Manifest;
  readonly container: Manifest;
  readonly namespace: string;
  /** The container's env, field references resolved. */
  readonly env: Record<string, string>;
  /** A kubeconfig file for the pod's ServiceAccount. */
  readonly kubeconfig: string;
}

/** The kinds the cluster keeps a watched copy of, for the tests' synchronous reads. */
type WatchedKind = 'PersistentVolume' | 'PersistentVolumeClaim' | 'Event' | 'Job' | 'ConfigMap' | 'Node' | 'Pod';

export class Cluster {
  /**
   * A real control plane (etcd, kube-apiserver with RBAC, controller manager and
   * scheduler: test/support/control-plane.ts), this node, and the stack's objects applied
   * with kubectl as the administrator.
   */
  static async start(manifests: Manifest[], nodeAnnotations: Record<string, string> = {}, options: ClusterOptions = {}): Promise<Cluster> {
    const kubernetes = await Kubernetes.start({ controllers: true });
    const cluster = new Cluster(kubernetes, manifests, makeTempDir('lvp-e2e-'));
    const plane = kubernetes.plane;
    try {
      plane.writeKubeconfig(cluster.adminKubeconfig);
      const applied = manifests.filter((m) => APPLIED_KINDS.has(m.kind) && !(options.claimGuardLater && CLAIM_GUARD_KINDS.has(m.kind)));
      fs.writeFileSync(path.join(cluster.work, 'stack.k8s.yaml'), applied.map((m) => stringify(m)).join('---\n'));
      await cluster.kubectl('apply', '-f', path.join(cluster.work, 'stack.k8s.yaml'));
      await kubernetes.createNode({ metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_NAME }, annotations: nodeAnnotations } });
      await cluster.watch();
      await cluster.issueTokens();
      if (!options.claimGuardLater) await cluster.untilClaimGuardInForce();
    } catch (e) {
      await cluster.stop();
      throw e;
    }
    return cluster;
  }

  readonly adminKubeconfig: string;
  readonly core: CoreV1Api;
  private readonly agents: AgentProcess[] = [];
  private readonly volumes = new Map<string, ConfigMapVolume>();
  private readonly mounts: Array<{ target: string; created: string[] }> = [];
  private readonly watched = new Map<WatchedKind, Watched<KubernetesObject>>();
  /** Workload name to the kubeconfig of its pod's ServiceAccount. */
  private readonly kubeconfigs = new Map<string, string>();

  readonly plane: ControlPlane;

  private constructor(private readonly kubernetes: Kubernetes, readonly manifests: Manifest[], readonly work: string) {
    this.plane = kubernetes.plane;
    this.adminKubeconfig = path.join(work, 'admin.kubeconfig');
    this.core = kubernetes.core;
  }

  /** The apiserver's URL. */
  get url(): string {
    return this.plane.url;
  }

  /** Runs kubectl as the administrator, without blocking the event loop. */
  async kubectl(...args: string[]): Promise<string> {
    try {
      return (await promisify(execFile)('kubectl', ['--kubeconfig', this.adminKubeconfig, ...args], { encoding: 'utf8', timeout: 30_000 })).stdout;
    } catch (e) {
      const err = e as { stdout?: string; stderr?: string; message: string };
      throw new Error(`kubectl ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
    }
  }

  /** Applies the claim guard left out by `claimGuardLater` (and adds it to stack.k8s.yaml), and waits until it is in force. */
  async installClaimGuard(): Promise<void> {
    const guard = this.manifests.filter((m) => CLAIM_GUARD_KINDS.has(m.kind));
    const file = path.join(this.work, 'claim-guard.k8s.yaml');
    fs.writeFileSync(file, guard.map((m) => stringify(m)).join('---\n'));
    await this.kubectl('apply', '-f', file);
    fs.appendFileSync(path.join(this.work, 'stack.k8s.yaml'), `---\n${fs.readFileSync(file, 'utf8')}`);
    await this.untilClaimGuardInForce();
  }

  /**
   * Waits until the apiserver enforces the stack's claim guard (it applies a policy a moment
   * after it is stored): until a PV of one of the stack's classes, created by the
   * administrator in a dry run, is refused in the guard's name. Nothing when the stack has none.
   */
  async untilClaimGuardInForce(): Promise<void> {
    const policy = this.manifests.find((m) => m.kind === 'ValidatingAdmissionPolicy');
    const storageClass = this.manifests.find((m) => m.kind === 'StorageClass');
    if (!policy || !storageClass) return;
    const probe: V1PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'claim-guard-probe' },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: storageClass.metadata.name,
        local: { path: '/claim-guard-probe' },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } },
      },
    };
    const refused = () => this.core.createPersistentVolume({ body: probe, dryRun: 'All' })
      .then(() => false, (e: Error) => e.message.includes(`ValidatingAdmissionPolicy '${policy.metadata.name}'`));
    await this.until(refused, `the claim guard ${policy.metadata.name} is in force`);
  }

  /** Creates an object as the administrator; returns it as the server stored it. */
  create<T extends KubernetesObject>(object: T): Promise<T> {
    return this.kubernetes.create<T>(object);
  }

  /** An object of a watched kind as the cluster's watch has it now. */
  get<T extends KubernetesObject>(kind: WatchedKind, name: string, namespace?: string): T | undefined {
    return this.watched.get(kind)!.get(name, namespace) as T | undefined;
  }

  /** The objects of a watched kind (in one namespace, or all). */
  list<T extends KubernetesObject>(kind: WatchedKind, namespace?: string): T[] {
    return this.watched.get(kind)!.list(namespace) as T[];
  }

  /**
   * The pod of this DaemonSet (or Deployment) on this node, as kubelet sees it: its
   * spec and container, its env with field references resolved, and a kubeconfig with
   * a real token of its ServiceAccount.
   */
  podOnNode(workloadName: string, kind: 'DaemonSet' | 'Deployment' = 'DaemonSet'): PodOnNode {
    const workload = find(this.manifests, kind, workloadName);
    const pod = workload.spec.template.spec;
    const [container] = pod.containers;
    // A workload without a namespace (upstream's node-cleanup example) is applied to `default`.
    const namespace: string = workload.metadata.namespace ?? 'default';
    const kubeconfig = this.kubeconfigs.get(`${kind}/${workloadName}`)!;
    const env: Record<string, string> = {};
    for (const e of container.env ?? []) env[e.name] = e.value ?? fieldRef(e.valueFrom?.fieldRef?.fieldPath, namespace);
    return { pod, container, namespace, env, kubeconfig };
  }

  /**
   * Starts the container of this DaemonSet (or Deployment) as its pod on this node
   * would run it: its args and env, its ServiceAccount's credentials, its ConfigMap volumes.
   */
  startAgent(workloadName: string, kind: 'DaemonSet' | 'Deployment' = 'DaemonSet'): AgentProcess {
    const { pod, container, namespace, env, kubeconfig } = this.podOnNode(workloadName, kind);
    const written: string[] = (container.args ?? []).map((a: string) => expandVars(a, env));
    const mounted = new Map<string, string>();
    for (const m of container.volumeMounts ?? []) {
      const volume = pod.volumes.find((v: Manifest) => v.name === m.name);
      if (!volume?.configMap) continue;
      const dir = this.configMapVolume(volume.configMap.name, namespace).dir;
      // Named in an arg: the arg names the directory. Otherwise the program reads its default path (upstream's
      // chart passes no args): the volume is mounted there, in this test's private mount namespace.
      if (written.some((a) => a.endsWith(`=${m.mountPath}`))) mounted.set(m.mountPath, dir);
      else this.mountAt(dir, m.mountPath);
    }
    const args = written.map((a) => hostArg(a, mounted));
    // The container's own port 8080, which every test shares here: a free loopback one instead,
    // by the device provisioner's variable for its DaemonSet (configured by LP_* only), else by flag.
    if (!args.some((a) => /^--(listen-address|metrics-addr)=/.test(a)) && (container.ports ?? []).some((p: Manifest) => p.containerPort === 8080)) {
      if (Object.keys(env).some((name) => name.startsWith('LP_'))) env.LP_METRICS_ADDR = '127.0.0.1:0';
      else args.push('--listen-address=127.0.0.1:0');
    }
    const agent = AgentProcess.start(args, { ...env, KUBECONFIG: kubeconfig }, { containerEnv: true });
    this.agents.push(agent);
    return agent;
  }

  /** Bind-mounts `dir` at `target`, as kubelet mounts a volume into the container; undone by stop(). */
  private mountAt(dir: string, target: string): void {
    if (this.mounts.some((m) => m.target === target)) return;
    // The directories mount() makes for it, outermost last, removed again (empty) by stop().
    const created: string[] = [];
    for (let d = target; !fs.existsSync(d); d = path.dirname(d)) created.push(d);
    mount(dir, target, { bind: true });
    this.mounts.push({ target, created });
  }

  /** The directory kubelet keeps this ConfigMap in (one per ConfigMap, shared by the agents using it). */
  configMapVolume(name: string, namespace: string): ConfigMapVolume {
    let v = this.volumes.get(`${namespace}/${name}`);
    if (!v) {
      v = new ConfigMapVolume(path.join(this.work, `configmap-${name}`));
      v.write(this.get<V1ConfigMap>('ConfigMap', name, namespace)?.data ?? {});
      this.volumes.set(`${namespace}/${name}`, v);
    }
    return v;
  }

  /** Edits a ConfigMap with kubectl, then updates its volume as kubelet would on its next sync. */
  async editConfigMap(name: string, namespace: string, data: Record<string, string>): Promise<void> {
    await this.kubectl('patch', 'configmap', name, '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ data }));
    const edited = await this.core.readNamespacedConfigMap({ name, namespace });
    this.configMapVolume(name, namespace).write(edited.data ?? {});
  }

  pv(name: string): V1PersistentVolume | undefined {
    return this.get<V1PersistentVolume>('PersistentVolume', name);
  }

  pvs(): V1PersistentVolume[] {
    return this.list<V1PersistentVolume>('PersistentVolume');
  }

  events(reason?: string): CoreV1Event[] {
    return this.list<CoreV1Event>('Event').filter((e) => reason === undefined || e.reason === reason);
  }

  jobs(namespace: string): V1Job[] {
    return this.list<V1Job>('Job', namespace);
  }

  /**
   * A user's claim for this very PV (`volumeName`): the PV controller binds the two, as it
   * binds any claim that names its volume. Returns the claim's name.
   */
  /** A claim in `default` made for this PV (pre-bound), Bound by the PV controller; see Kubernetes.bindNewClaim. */
  bindClaim(pvName: string, claimName = `claim-${pvName}`): Promise<string> {
    return this.kubernetes.bindNewClaim(pvName, claimName);
  }

  async deleteClaim(claimName: string): Promise<void> {
    await this.core.deleteNamespacedPersistentVolumeClaim({ name: claimName, namespace: 'default' });
  }

  /** Ends a Job as kubelet would end its pod (see Kubernetes.finishJob). */
  finishJob(namespace: string, jobName: string, outcome: 'Complete' | 'Failed', message = ''): Promise<void> {
    return this.kubernetes.finishJob(namespace, jobName, outcome, message);
  }

  /** Waits until the PV exists (with a UID other than `notUid`) in `phase`. */
  async waitForPv(name: string, options: { phase?: string; notUid?: string; timeoutMs?: number } = {}): Promise<V1PersistentVolume> {
    await this.until(() => pvIs(this.pv(name), options), `PV ${name}${options.notUid ? ' with a new UID' : ''} is ${options.phase ?? 'there'}`, options.timeoutMs);
    return this.pv(name)!;
  }

  /** Polls `condition`; on timeout fails with what was awaited and the agents' recent log. */
  async until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition())) {
      if (Date.now() > deadline) {
        const log = this.agents.map((a) => a.lines.slice(-30).join('\n')).join('\n---\n');
        throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}\nagent log (last lines):\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Requests the apiserver refused with 403 (its audit log), each kind once. */
  get denials(): readonly Denial[] {
    return this.plane.denials();
  }

  /** Requests admission refused (the claim guard's refusals among them), in order. */
  get admissionRefusals(): readonly AdmissionRefusal[] {
    return this.plane.admissionRefusals();
  }

  async stop(): Promise<void> {
    for (const agent of this.agents.splice(0)) await agent.stop();
    for (const { target, created } of this.mounts.splice(0).reverse()) {
      unmount(target);
      for (const d of created) fs.rmdirSync(d);
    }
    for (const w of this.watched.values()) await w.stop();
    await this.kubernetes.stop();
  }

  /** Starts a watched copy of each kind the tests read, and waits until each has listed. */
  private async watch(): Promise<void> {
    const kc = this.plane.kubeConfig();
    const batch = kc.makeApiClient(BatchV1Api);
    const sources: Array<[WatchedKind, string, () => Promise<KubernetesListObject<KubernetesObject>>]> = [
      ['PersistentVolume', '/api/v1/persistentvolumes', () => this.core.listPersistentVolume()],
      ['PersistentVolumeClaim', '/api/v1/persistentvolumeclaims', () => this.core.listPersistentVolumeClaimForAllNamespaces()],
      ['Event', '/api/v1/events', () => this.core.listEventForAllNamespaces()],
      ['ConfigMap', '/api/v1/configmaps', () => this.core.listConfigMapForAllNamespaces()],
      ['Node', '/api/v1/nodes', () => this.core.listNode()],
      ['Pod', '/api/v1/pods', () => this.core.listPodForAllNamespaces()],
      ['Job', '/apis/batch/v1/jobs', () => batch.listJobForAllNamespaces()],
    ];
    for (const [kind, watchPath, list] of sources) this.watched.set(kind, await Watched.start(kc, watchPath, list));
  }

  /** A real token of each workload's ServiceAccount, once it exists, in a kubeconfig of its own. */
  private async issueTokens(): Promise<void> {
    for (const workload of this.manifests.filter((m) => m.kind === 'DaemonSet' || m.kind === 'Deployment')) {
      const pod = workload.spec.template.spec;
      const namespace: string = workload.metadata.namespace ?? 'default';
      const account: string = pod.serviceAccountName ?? pod.serviceAccount ?? 'default';
      // `default` ServiceAccounts are made by the controller manager, shortly after their namespace.
      await this.until(async () => (await this.core.readNamespacedServiceAccount({ name: account, namespace }).catch(() => undefined)) !== undefined,
        `ServiceAccount ${namespace}/${account} exists`);
      const file = path.join(this.work, `${workload.metadata.name}.kubeconfig`);
      this.plane.writeKubeconfig(file, await this.plane.serviceAccountToken(namespace, account));
      this.kubeconfigs.set(`${workload.kind}/${workload.metadata.name}`, file);
    }
  }
}

/** What kubelet resolves a fieldRef to for a pod of this DaemonSet on this node. */
function fieldRef(fieldPath: string | undefined, namespace: string): string {
  switch (fieldPath) {
    case 'spec.nodeName': return NODE_NAME;
    case 'metadata.namespace': return namespace;
    case 'metadata.name': return `${NODE_NAME}-agent`;
    default: throw new Error(`the e2e cluster does not resolve the fieldRef ${fieldPath}`);
  }
}

/** Kubelet's `$(VAR)` expansion of container args (an unknown variable stays as written). */
export function expandVars(arg: string, env: Record<string, string>): string {
  return arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);
}

/** An arg as the host sees it: a ConfigMap mount path becomes its directory, the container's port a free loopback one. */
function hostArg(arg: string, mounted: Map<string, string>): string {
  const [flag, value] = arg.split(/=(.*)/s, 2);
  if (value === undefined) return arg;
  if (mounted.has(value)) return `${flag}=${mounted.get(value)}`;
  if (flag === '--listen-address' || flag === '--metrics-addr') return `${flag}=127.0.0.1:0`;
  // No kubelet runs here: the node plugin's sockets go to a directory of this agent's own, never the machine's /var/lib/kubelet.
  if (flag === '--kubelet-dir') return `${flag}=${makeTempDir('lvp-e2e-kubelet-')}`;
  return arg;
}

/**
 * A ConfigMap volume as kubelet's atomic writer lays it out: the files in a
 * timestamped directory, `..data` a symlink to it, each key a symlink through
 * `..data`; an update swaps `..data` in one rename.
 */
export class ConfigMapVolume {
  private generation = 0;

  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }

  write(data: Record<string, string>): void {
    const stamp = `..${new Date().toISOString().replace(/[-:.TZ]/g, '_')}${this.generation++}`;
    fs.mkdirSync(path.join(this.dir, stamp));
    for (const [key, value] of Object.entries(data)) fs.writeFileSync(path.join(this.dir, stamp, key), value);
    const previous = fs.existsSync(path.join(this.dir, '..data')) ? fs.readlinkSync(path.join(this.dir, '..data')) : undefined;
    fs.symlinkSync(stamp, path.join(this.dir, '..data_tmp'));
    fs.renameSync(path.join(this.dir, '..data_tmp'), path.join(this.dir, '..data'));
    for (const key of Object.keys(data)) {
      const link = path.join(this.dir, key);
      if (!fs.existsSync(link)) fs.symlinkSync(path.join('..data', key), link);
    }
    for (const entry of fs.readdirSync(this.dir)) {
      if (!entry.startsWith('..') && !(entry in data)) fs.rmSync(path.join(this.dir, entry));
    }
    if (previous) fs.rmSync(path.join(this.dir, previous), { recursive: true });
  }
}
