/**
 * The agent (the real bin, against the real control plane) as kubelet's CSI node plugin:
 * found where kubelet's plugin watcher looks, publishing the volume it made for a claim of
 * a btrfs pool class by that volume's identity, and nothing it did not make.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { status } from '@grpc/grpc-js';
import type { V1PersistentVolume, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { POOL_PROVISIONER } from '../../../src/config';
import { POOL_VOLUME_ANNOTATION } from '../../../src/runtime/well-known';
import { AgentProcess } from '../../support/agent-process';
import { writeConfigDir } from '../../support/class-config';
import { call, csiClients } from '../../support/csi-client';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mount } from '../../support/privileged';
import { eventually } from '../kube/fixtures';

const MiB = 1024 * 1024;
const NODE = 'csi-node';
const NAMESPACE = 'lvp';
const APP = 'app';
const CLASS = 'csi-pool';

describePrivileged('the agent as kubelet\'s CSI node plugin', () => {
  let k: Kubernetes;
  let agent: AgentProcess;
  let kubeletDir: string;
  let poolDir: string;
  let args: string[];
  let env: Record<string, string>;
  const registrySocket = () => path.join(kubeletDir, 'plugins_registry', `${POOL_PROVISIONER}-reg.sock`);
  const endpoint = () => path.join(kubeletDir, 'plugins', POOL_PROVISIONER, 'csi.sock');

  beforeAll(async () => {
    k = await Kubernetes.forSuite({ controllers: true });
    await k.reset();
    for (const ns of [NAMESPACE, APP]) await k.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }).catch(() => undefined);
    await k.create({
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: CLASS }, provisioner: POOL_PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer',
    });
    await k.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } });
    const work = makeTempDir('lvp-csi-plugin-');
    const loop = createLoopDevice(512 * MiB);
    mkfsBtrfs(loop.device);
    poolDir = path.join(work, 'pool');
    fs.mkdirSync(poolDir);
    mount(loop.device, poolDir, { type: 'btrfs' });
    kubeletDir = path.join(work, 'kubelet');
    const configDir = writeConfigDir(path.join(work, 'config'), { storageClassMap: { [CLASS]: { hostDir: poolDir, mountDir: poolDir, pool: 'btrfs' } } });
    const stateDir = path.join(work, 'state');
    fs.mkdirSync(stateDir);
    await k.writeKubeconfig(path.join(work, 'kubeconfig'));
    args = ['run', '--config-dir', configDir, '--listen-address', '127.0.0.1:0', '--state-dir', stateDir, '--kubelet-dir', kubeletDir];
    env = { KUBECONFIG: path.join(work, 'kubeconfig'), MY_NODE_NAME: NODE, MY_NAMESPACE: NAMESPACE };
    agent = AgentProcess.start(args, env);
    await agent.waitReady();
  });

  afterAll(async () => {
    await agent?.stop();
    const published = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((p) => p?.startsWith(`${kubeletDir}/`));
    for (const at of published.reverse()) execFileSync('umount', [at]);
    await k?.reset();
    cleanupPrivileged();
  });

  /** A claim the scheduler put on the node; its PV, once the agent made its volume. */
  async function provisioned(name: string): Promise<V1PersistentVolume> {
    await k.create({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: APP, annotations: { 'volume.kubernetes.io/selected-node': NODE } },
      spec: { storageClassName: CLASS, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } } },
    });
    let pv: V1PersistentVolume | undefined;
    await eventually(async () => {
      const volumeName = (await k.get<V1PersistentVolumeClaim>('v1', 'PersistentVolumeClaim', name, APP))?.spec?.volumeName;
      pv = volumeName ? await k.get<V1PersistentVolume>('v1', 'PersistentVolume', volumeName) : undefined;
      return pv !== undefined;
    }, `claim ${name} gets its PV (logs:\n${agent.log()})`);
    return pv!;
  }

  function target(): string {
    const dir = path.join(kubeletDir, 'pods', crypto.randomUUID(), 'volumes', 'kubernetes.io~csi', 'pv');
    fs.mkdirSync(dir, { recursive: true });
    return path.join(dir, 'mount');
  }

  test('kubelet finds it in plugins_registry: a CSI plugin of the driver, its endpoint in a directory only root reaches', async () => {
    const { registration } = csiClients(registrySocket());
    try {
      expect(await call(registration, 'GetInfo')).toEqual({ type: 'CSIPlugin', name: POOL_PROVISIONER, endpoint: endpoint(), supported_versions: ['1.0.0'] });
      await call(registration, 'NotifyRegistrationStatus', { plugin_registered: true });
    } finally {
      registration.close();
    }
    expect(fs.statSync(path.dirname(endpoint())).mode.toString(8).slice(-3)).toBe('700');
    await eventually(() => agent.log().includes('kubelet registered the CSI node plugin'), 'the agent says kubelet registered it');
  });

  test('the Node service names the node and its hostname topology', async () => {
    const { node } = csiClients(endpoint());
    try {
      expect(await call(node, 'NodeGetInfo')).toMatchObject({ node_id: NODE, accessible_topology: { segments: { 'kubernetes.io/hostname': NODE } } });
    } finally {
      node.close();
    }
  });

  test('the volume made for a claim is published by its identity at the pod\'s target, and unpublished', async () => {
    const pv = await provisioned('published');
    const volumeId = pv.metadata!.annotations![POOL_VOLUME_ANNOTATION];
    const { node } = csiClients(endpoint());
    try {
      const at = target();
      await call(node, 'NodePublishVolume', { volume_id: volumeId, target_path: at, volume_capability: { mount: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } } });
      fs.writeFileSync(path.join(at, 'data'), 'tenant');
      expect(fs.readFileSync(path.join(poolDir, pv.metadata!.name!, 'data'), 'utf8')).toBe('tenant');
      const { usage } = await call(node, 'NodeGetVolumeStats', { volume_id: volumeId, volume_path: at }) as { usage: Array<Record<string, string>> };
      expect(usage[0]).toMatchObject({ unit: 'BYTES', total: String(16 * MiB) });
      await call(node, 'NodeUnpublishVolume', { volume_id: volumeId, target_path: at });
      expect(fs.existsSync(at)).toBe(false);
    } finally {
      node.close();
    }
  });

  test('a claim\'s PV is a CSI PV of the driver whose handle is its volume\'s identity; with the claim deleted, the volume is destroyed and the PV goes', async () => {
    const pv = await provisioned('csi-pv');
    const volumeId = pv.metadata!.annotations![POOL_VOLUME_ANNOTATION];
    expect(pv.spec!.csi).toEqual({ driver: POOL_PROVISIONER, volumeHandle: volumeId });
    expect(pv.spec!.local).toBeUndefined();
    expect(pv.spec!.nodeAffinity!.required!.nodeSelectorTerms[0].matchExpressions).toContainEqual(
      { key: 'kubernetes.io/hostname', operator: 'In', values: [NODE] });
    const volume = path.join(poolDir, pv.metadata!.name!);
    expect(fs.existsSync(volume)).toBe(true);
    await k.delete('v1', 'PersistentVolumeClaim', 'csi-pv', APP);
    await eventually(async () => (await k.get('v1', 'PersistentVolume', pv.metadata!.name!)) === undefined, `the PV goes (logs:\n${agent.log()})`);
    expect(fs.existsSync(volume)).toBe(false);
  });

  test('a subvolume in the pool that the record does not name is not published: NOT_FOUND', async () => {
    const { node } = csiClients(endpoint());
    try {
      const made = execFileSync('btrfs', ['subvolume', 'create', path.join(poolDir, `pvc-${crypto.randomUUID()}`)]);
      expect(String(made)).toMatch(/Create subvolume/);
      const uuids = String(execFileSync('btrfs', ['subvolume', 'list', '-u', poolDir])).match(/uuid ([0-9a-f-]{36})/g)!;
      const unnamed = uuids.map((u) => u.slice(5)).at(-1)!;
      const e = await call(node, 'NodePublishVolume', { volume_id: unnamed, target_path: target(), volume_capability: { mount: {} } }).catch((err) => err);
      expect(e.code).toBe(status.NOT_FOUND);
    } finally {
      node.close();
    }
  });

  test('stopped, the agent takes its sockets away (kubelet lets the plugin go) and leaves a pod\'s volume mounted', async () => {
    const pv = await provisioned('kept-mounted');
    const volumeId = pv.metadata!.annotations![POOL_VOLUME_ANNOTATION];
    const at = target();
    const { node } = csiClients(endpoint());
    try {
      await call(node, 'NodePublishVolume', { volume_id: volumeId, target_path: at, volume_capability: { mount: {} } });
    } finally {
      node.close();
    }
    await agent.stop();
    expect([fs.existsSync(registrySocket()), fs.existsSync(endpoint())]).toEqual([false, false]);
    fs.writeFileSync(path.join(at, 'still'), 'writing');
    expect(fs.readFileSync(path.join(poolDir, pv.metadata!.name!, 'still'), 'utf8')).toBe('writing');
    agent = AgentProcess.start(args, env);
    await agent.waitReady();
    expect(fs.existsSync(endpoint())).toBe(true);
    expect(fs.readFileSync(path.join(at, 'still'), 'utf8')).toBe('writing');
  });
});
