/**
 * The agent against a real kube-apiserver (Kubernetes' own, built from the Go module
 * proxy: test/support/control-plane.ts), under the construct's own RBAC and a real
 * ServiceAccount token. The real server does what no hand-written one did: right after
 * a restart its RBAC caches answer 403 to what RBAC grants, and it ends watch streams
 * without a clean close.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CoreV1Api, V1PersistentVolume } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { DEFAULT_IMAGE } from '../../src/constructs';
import { directoryPVName } from '../../src/runtime/pv';
import { find, Manifest, synthesize } from '../e2e/cluster';
import { AgentProcess, parseJson } from '../support/agent-process';
import { ControlPlane } from '../support/control-plane';
import { cleanupPrivileged, describePrivileged, makeMountPoint, makeTempDir } from '../support/privileged';

const NODE = 'worker-1';
const NAMESPACE = 'local-storage';
const ZONE = 'topology.example.com/zone';

const APPLIED_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ConfigMap', 'StorageClass']);

describePrivileged('a real kube-apiserver', () => {
  let plane: ControlPlane | undefined;
  let agent: AgentProcess | undefined;
  beforeAll(async () => {
    // With the controllers: the PV controller makes new PVs Available, and pv-protection lets a deleted PV go.
    plane = await ControlPlane.start({ controllers: true });
    process.stdout.write(`real kube-apiserver ${await plane.version()} at ${plane.url}\n`);
  }, 20 * 60_000);
  afterAll(async () => {
    if (agent?.running) await agent.kill('SIGKILL');
    await plane?.stop();
    cleanupPrivileged();
  });

  /** The synthesized stack applied with kubectl as the administrator, this node, and the agent as its DaemonSet's pod runs it. */
  async function deploy(mountDir: string): Promise<{ core: CoreV1Api; agent: AgentProcess }> {
    const manifests = synthesize({
      namespace: NAMESPACE, createNamespace: true, image: DEFAULT_IMAGE, storageClasses: [{ name: 'fast-disks', hostDir: mountDir }], nodeLabelsForPV: [ZONE],
    });
    const work = makeTempDir('lvp-real-');
    const admin = path.join(work, 'admin.kubeconfig');
    plane!.writeKubeconfig(admin);
    const stack = path.join(work, 'stack.k8s.yaml');
    fs.writeFileSync(stack, manifests.filter((m) => APPLIED_KINDS.has(m.kind)).map((m) => stringify(m)).join('---\n'));
    execFileSync('kubectl', ['--kubeconfig', admin, 'apply', '-f', stack], { stdio: 'pipe' });
    const core = plane!.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNode({ body: { metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE, [ZONE]: 'a' } } } });

    const daemonSet = find(manifests, 'DaemonSet');
    const pod = daemonSet.spec.template.spec;
    const token = await plane!.serviceAccountToken(NAMESPACE, pod.serviceAccountName);
    const kubeconfig = path.join(work, 'agent.kubeconfig');
    plane!.writeKubeconfig(kubeconfig, token);
    const configDir = path.join(work, 'config');
    fs.mkdirSync(configDir);
    const configMap = manifests.find((m: Manifest) => m.kind === 'ConfigMap' && pod.volumes.some((v: Manifest) => v.configMap?.name === m.metadata.name))!;
    for (const [key, value] of Object.entries(configMap.data as Record<string, string>)) fs.writeFileSync(path.join(configDir, key), value);
    const args = (pod.containers[0].args as string[])
      .map((a) => (a.startsWith('--config-dir=') ? `--config-dir=${configDir}` : a))
      .map((a) => (a.startsWith('--listen-address=') ? '--listen-address=127.0.0.1:0' : a))
      .map((a) => (a.startsWith('--state-dir=') ? `--state-dir=${makeTempDir('lvp-state-')}` : a));
    const started = AgentProcess.start(args, { KUBECONFIG: kubeconfig, MY_NODE_NAME: NODE, MY_NAMESPACE: NAMESPACE }, { containerEnv: true });
    return { core, agent: started };
  }

  async function until(condition: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await condition().catch(() => false))) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}\nagent log:\n${agent?.log().slice(-6000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  test('restarted under a running agent (RBAC on): the agent\'s watches are back within seconds, with no fall-back to reads by name', async () => {
    const mountDir = makeTempDir('lvp-real-disks-');
    const deployed = await deploy(mountDir);
    agent = deployed.agent;
    const { core } = deployed;
    await agent.waitReady();
    const pvOf = async (entry: string): Promise<V1PersistentVolume | undefined> =>
      core.readPersistentVolume({ name: directoryPVName(entry, NODE, 'fast-disks') }).catch(() => undefined);
    makeMountPoint(path.join(mountDir, 'vol1'));
    await until(async () => (await pvOf('vol1'))?.metadata?.labels?.[ZONE] === 'a', 'vol1 has its PV, labelled with the node\'s zone', 20_000);

    await plane!.restartApiServer();
    // A label change reaches new PVs through the Node watch; read by name, the Node is kept for a minute.
    await core.patchNode({ name: NODE, body: [{ op: 'replace', path: `/metadata/labels/${ZONE.replace('/', '~1')}`, value: 'b' }] });
    makeMountPoint(path.join(mountDir, 'vol2'));
    await until(async () => (await pvOf('vol2'))?.metadata?.labels?.[ZONE] === 'b', 'vol2\'s PV carries the zone the Node has now', 30_000);
    // A PV deleted by hand reaches the agent through its PV watch: its (empty) volume is offered again.
    const uid = (await pvOf('vol1'))!.metadata!.uid;
    await core.deletePersistentVolume({ name: directoryPVName('vol1', NODE, 'fast-disks') });
    await until(async () => {
      const pv = await pvOf('vol1');
      return pv !== undefined && pv.metadata?.uid !== uid && pv.metadata?.deletionTimestamp === undefined;
    }, 'vol1 is offered again under a new UID', 30_000);

    // Each resource the server forbade for a moment was watched again; none was left to reads by name.
    const records = agent.lines.map(parseJson).filter((r): r is Record<string, unknown> => r !== undefined);
    const forbidden = new Set(records.filter((r) => String(r.msg).startsWith('list/watch forbidden (403)')).map((r) => r.resource));
    const allowed = new Set(records.filter((r) => r.msg === 'list/watch allowed again; watching').map((r) => r.resource));
    expect([...forbidden].filter((r) => !allowed.has(r))).toEqual([]);
    expect(agent.errors()).toEqual([]);
    expect(await agent.kill('SIGTERM')).toBe(0);
  });
});
