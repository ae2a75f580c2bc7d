/**
 * csi-sanity (kubernetes-csi/csi-test v5, from the Go module proxy) against the agent's CSI
 * endpoint: the real bin serving a btrfs pool class. Which of its specs run and pass, and
 * which it skips and why, are printed (the closing notes list them); none may fail.
 *
 * Not run: the Controller service's specs, and the Node specs that make their volume with
 * the Controller's CreateVolume. The agent serves no Controller service (its plugin
 * capabilities say so): it provisions, resizes and snapshots from the API objects on its
 * own node, as the standard sidecars would drive a controller, with no sidecar. csi-sanity
 * calls ControllerGetCapabilities whatever the plugin's capabilities say.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { POOL_PROVISIONER } from '../../../src/config';
import { AgentProcess } from '../../support/agent-process';
import { writeConfigDir } from '../../support/class-config';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';
import { csiTools } from '../../support/snapshot-controller';

const MiB = 1024 * 1024;
const NODE = 'sanity-node';
const CLASS = 'sanity-pool';
/** The specs of the Controller service, and the Node specs that make their volume with its CreateVolume. */
const NEEDS_CONTROLLER = [
  '\\[Controller Server\\]',
  'NodeUnpublishVolume should remove target path',
  'NodeGetVolumeStats should fail when volume does not exist on the specified path',
  'NodeExpandVolume should fail when no volume path is provided',
  'NodeExpandVolume should work if node-expand is called after node-publish',
];

/** One spec of ginkgo's JSON report, as far as it is read. */
interface SpecReport {
  readonly LeafNodeText: string;
  readonly ContainerHierarchyTexts?: readonly string[];
  readonly State: string;
  readonly Failure?: { readonly Message: string };
}

describePrivileged('csi-sanity against the agent\'s CSI endpoint', () => {
  let k: Kubernetes;
  let agent: AgentProcess;
  let kubeletDir: string;
  let work: string;

  beforeAll(async () => {
    k = await Kubernetes.forSuite({ controllers: true });
    await k.reset();
    await k.ensure({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'lvp' } });
    await k.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } });
    work = makeTempDir('lvp-sanity-');
    const loop = createLoopDevice(256 * MiB);
    mkfsBtrfs(loop.device);
    const poolDir = path.join(work, 'pool');
    fs.mkdirSync(poolDir);
    mount(loop.device, poolDir, { type: 'btrfs' });
    kubeletDir = path.join(work, 'kubelet');
    const configDir = writeConfigDir(path.join(work, 'config'), { storageClassMap: { [CLASS]: { hostDir: poolDir, mountDir: poolDir, pool: 'btrfs' } } });
    fs.mkdirSync(path.join(work, 'state'));
    await k.writeKubeconfig(path.join(work, 'kubeconfig'));
    agent = AgentProcess.start(['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--state-dir', path.join(work, 'state'), '--kubelet-dir', kubeletDir],
      { KUBECONFIG: path.join(work, 'kubeconfig'), MY_NODE_NAME: NODE, MY_NAMESPACE: 'lvp' });
    await agent.waitReady();
  });

  afterAll(async () => {
    await agent?.stop();
    await k?.reset();
    cleanupPrivileged();
  });

  test('runs its specs for the services the agent serves (Identity, Node) with none failing, and says which it skips and why', () => {
    const report = path.join(work, 'sanity.json');
    const pods = path.join(kubeletDir, 'pods', 'csi-sanity');
    fs.mkdirSync(pods, { recursive: true });
    const ran = spawnSync(path.join(csiTools(), 'csi-sanity'), [
      `--csi.endpoint=unix://${path.join(kubeletDir, 'plugins', POOL_PROVISIONER, 'csi.sock')}`,
      // Targets below kubelet's directory: the agent publishes nowhere else.
      `--csi.mountdir=${path.join(pods, 'target')}`,
      `--csi.stagingdir=${path.join(pods, 'staging')}`,
      `--ginkgo.json-report=${report}`,
      `--ginkgo.skip=${NEEDS_CONTROLLER.join('|')}`,
      '--ginkgo.no-color',
    ], { encoding: 'utf8', timeout: 10 * 60_000 });
    const specs = (JSON.parse(fs.readFileSync(report, 'utf8')) as Array<{ SpecReports: SpecReport[] }>)[0].SpecReports.filter((s) => s.LeafNodeText);
    const line = (s: SpecReport) => `${s.State.padEnd(8)} ${[...s.ContainerHierarchyTexts ?? [], s.LeafNodeText].join(' / ')}${s.Failure ? `: ${s.Failure.Message.split('\n')[0]}` : ''}`;
    process.stdout.write(`csi-sanity: ${specs.length} specs\n${specs.map(line).join('\n')}\n`);
    expect(specs.filter((s) => s.State === 'failed' || s.State === 'panicked').map(line)).toEqual([]);
    expect(specs.filter((s) => s.State === 'passed').length).toBeGreaterThan(0);
    expect(ran.status).toBe(0);
  });
});
