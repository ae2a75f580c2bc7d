/**
 * The real bin's `devices` subcommand (the device-selecting provisioner's job)
 * as a child process against a real control plane, on loop devices symlinked
 * into a temporary deviceDir: readiness, metrics, how quickly a new device and
 * a spec edit take effect (upstream polls every 5 minutes; the polling interval
 * here is left at that default so only the watches can be quick), adoption of
 * upstream's PVs, and a Released device wiped and re-offered.
 *
 * The bin runs from the TypeScript sources through ts-node (transpile only), in
 * this test's private mount namespace, so it sees the loop devices.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CoreV1Api, V1PersistentVolume } from '@kubernetes/client-node';
import { blockSpec, fillPattern, isZero, NAMESPACE, NODE_NAME, SMALL } from './fixture';
import { PV_SPEC_CONFIGMAP_ANNOTATION } from '../../../src/config';
import { upstreamDevicePVName } from '../../../src/runtime/pv';
import { AgentProcess } from '../../support/agent-process';
import { Kubernetes } from '../../support/kubernetes';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir } from '../../support/privileged';
import { eventually } from '../kube/fixtures';
import { seedCluster } from '../static/fixture';


const pvName = (device: string) => upstreamDevicePVName(NODE_NAME, device);

/** A running `local-volume-provisioner devices`. */
function startDevices(env: Record<string, string>): AgentProcess {
  return AgentProcess.start(['devices', '--metrics-addr', '127.0.0.1:0'], { LP_NODE_NAME: NODE_NAME, LP_NAMESPACE_NAME: NAMESPACE, ...env });
}

describePrivileged('the devices subcommand of the bin', () => {
  let server: Kubernetes | undefined;
  const bins: AgentProcess[] = [];
  afterEach(async () => {
    for (const bin of bins.splice(0)) {
      if (bin.running) await bin.kill('SIGKILL');
    }
    await server?.reset();
    server = undefined;
  });
  afterAll(cleanupPrivileged);

  async function setUp() {
    server = await Kubernetes.forSuite({ controllers: true });
    await seedCluster(server);
    const deviceDir = makeTempDir('lvp-bin-devices-');
    const kubeconfig = path.join(makeTempDir('lvp-bin-'), 'kubeconfig');
    await server.writeKubeconfig(kubeconfig);
    const s = server;
    const addDevice = (name: string) => {
      const loop = createLoopDevice(SMALL);
      fs.symlinkSync(loop.device, path.join(deviceDir, name));
      return { ...loop, link: path.join(deviceDir, name) };
    };
    const setSpec = async (name: string, data: Record<string, string>) => {
      await s.delete('v1', 'ConfigMap', name, NAMESPACE);
      await s.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NAMESPACE }, data });
    };
    const start = (env: Record<string, string>) => {
      const bin = startDevices({ KUBECONFIG: kubeconfig, ...env });
      bins.push(bin);
      return bin;
    };
    const pv = (name: string) => s.get<V1PersistentVolume>('v1', 'PersistentVolume', name);
    return { server: s, deviceDir, addDevice, setSpec, start, pv, core: s.kubeConfig().makeApiClient(CoreV1Api) };
  }

  test('through the default ConfigMap: ready after the first pass, metrics, a new device offered within seconds, SIGTERM stops it', async () => {
    const { deviceDir, addDevice, setSpec, start, pv } = await setUp();
    addDevice('sda');
    (await setSpec('pv-spec', blockSpec(deviceDir)));
    const bin = start({ LP_DEFAULT_PV_SPEC_CONFIGMAP: 'pv-spec' });
    await bin.waitReady();
    expect((await pv(pvName('sda')))?.spec?.local?.path).toBe(path.join(deviceDir, 'sda'));
    await eventually(async () => /^local_pv_provisioner_available_devices\{node="worker-1"\} 1$/m.test((await bin.get('/metrics')).body),
      'available_devices is 1');
    expect((await bin.get('/metrics')).body).toMatch(/^local_pv_provisioner_error_devices\{node="worker-1"\} 0$/m);

    const started = performance.now();
    addDevice('sdb');
    await eventually(async () => (await pv(pvName('sdb')))?.status?.phase === 'Available', 'the new device has an Available PV', 20_000);
    const ms = performance.now() - started;
    process.stdout.write(`devices: new loop device to Available PV: ${ms.toFixed(0)} ms (upstream polls every 5 min)\n`);
    expect(ms).toBeLessThan(20_000);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('a new device in a subdirectory of deviceDir (the walk is recursive) is offered within seconds too', async () => {
    const { deviceDir, setSpec, start, pv } = await setUp();
    const sub = path.join(deviceDir, 'by-path');
    fs.mkdirSync(sub);
    (await setSpec('pv-spec', blockSpec(deviceDir)));
    const first = createLoopDevice(SMALL);
    fs.symlinkSync(first.device, path.join(sub, 'pci-0000:3c:00.0-sas-0x5000-lun-0'));
    const bin = start({ LP_DEFAULT_PV_SPEC_CONFIGMAP: 'pv-spec' });
    await bin.waitReady();
    expect(await pv(pvName('pci-0000:3c:00.0-sas-0x5000-lun-0'))).toBeDefined();

    const started = performance.now();
    const second = createLoopDevice(SMALL);
    fs.symlinkSync(second.device, path.join(sub, 'pci-0000:3c:00.0-sas-0x5000-lun-1'));
    await eventually(async () => (await pv(pvName('pci-0000:3c:00.0-sas-0x5000-lun-1'))) !== undefined, 'the new device in the subdirectory has a PV', 20_000);
    process.stdout.write(`devices: new loop device in a subdirectory to PV: ${(performance.now() - started).toFixed(0)} ms\n`);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('through the Node annotation: an edited ConfigMap applies without waiting for the polling interval', async () => {
    const { server: s, deviceDir, addDevice, setSpec, start, pv } = await setUp();
    addDevice('sda');
    addDevice('sdb');
    (await setSpec('node-spec', blockSpec(deviceDir, { deviceNameFilter: '^sda$' })));
    const node = await s.get('v1', 'Node', NODE_NAME);
    await s.delete('v1', 'Node', NODE_NAME);
    await s.create({ ...node, metadata: { name: NODE_NAME, labels: node.metadata.labels, annotations: { [PV_SPEC_CONFIGMAP_ANNOTATION]: 'node-spec' } } });
    const bin = start({});
    await bin.waitReady();
    expect(await pv(pvName('sda'))).toBeDefined();
    expect(await pv(pvName('sdb'))).toBeUndefined();

    const started = performance.now();
    (await setSpec('node-spec', blockSpec(deviceDir, { deviceNameFilter: '^sd[ab]$', storageClassName: 'fast' })));
    await eventually(async () => (await pv(pvName('sdb'))) !== undefined, 'the edited spec offers sdb', 20_000);
    process.stdout.write(`devices: spec ConfigMap edit to new PV: ${(performance.now() - started).toFixed(0)} ms\n`);
    expect((await pv(pvName('sdb')))?.spec?.storageClassName).toBe('fast');
    expect((await pv(pvName('sda')))?.spec?.storageClassName).toBe('local-storage');
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('a Node annotated while it runs gets its devices without waiting for the polling interval', async () => {
    const { server: s, deviceDir, addDevice, setSpec, start, pv, core } = await setUp();
    addDevice('sda');
    (await setSpec('node-spec', blockSpec(deviceDir)));
    const bin = start({});
    await bin.waitReady();
    await eventually(async () => (await s.list('v1', 'Event', 'default')).some((e: any) => e.reason === 'NoPVSpecConfigMap'), 'a NoPVSpecConfigMap Event');
    expect(await pv(pvName('sda'))).toBeUndefined();

    const started = performance.now();
    const node = await core.readNode({ name: NODE_NAME });
    node.metadata!.annotations = { ...node.metadata!.annotations, [PV_SPEC_CONFIGMAP_ANNOTATION]: 'node-spec' };
    await core.replaceNode({ name: NODE_NAME, body: node });
    await eventually(async () => (await pv(pvName('sda'))) !== undefined, 'the annotated node gets its PV', 20_000);
    process.stdout.write(`devices: Node annotation to PV: ${(performance.now() - started).toFixed(0)} ms\n`);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('adopts upstream\'s PVs at start, and wipes and re-offers one when it is Released', async () => {
    const { server: s, deviceDir, addDevice, setSpec, start, pv, core } = await setUp();
    const sda = addDevice('sda');
    fillPattern(sda.link, 0, SMALL);
    (await setSpec('pv-spec', blockSpec(deviceDir)));
    const theirs = await s.create({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: pvName('sda'), labels: { 'local-pv-provisioner.cybozu.io/node': NODE_NAME } },
      spec: {
        capacity: { storage: '8Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: 'local-storage',
        volumeMode: 'Block',
        local: { path: sda.link },
        nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [NODE_NAME] }] }] } },
      },
    });
    const bin = start({ LP_DEFAULT_PV_SPEC_CONFIGMAP: 'pv-spec' });
    await bin.waitReady();
    expect((await pv(pvName('sda')))?.metadata?.labels?.['local.storage.k8s.io/node']).toBe(NODE_NAME);
    expect((await pv(pvName('sda')))?.metadata?.uid).toBe(theirs.metadata.uid);

    await s.bindNewClaim(pvName('sda'), 'data');
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'data', namespace: 'default' });
    const started = performance.now();
    await eventually(async () => {
      const now = (await pv(pvName('sda')));
      return now !== undefined && now.metadata?.uid !== theirs.metadata.uid && now.status?.phase === 'Available';
    }, 'the device is offered again with a new PV', 20_000);
    process.stdout.write(`devices: Released to wiped and Available again: ${(performance.now() - started).toFixed(0)} ms\n`);
    expect(isZero(sda.backingFile, 0, SMALL)).toBe(true);
    expect(await bin.kill('SIGTERM')).toBe(0);
  });

  test('a restart (after kill -9) never wipes a device that already has a PV', async () => {
    const { deviceDir, addDevice, setSpec, start, pv } = await setUp();
    const sda = addDevice('sda');
    (await setSpec('pv-spec', blockSpec(deviceDir)));
    const first = start({ LP_DEFAULT_PV_SPEC_CONFIGMAP: 'pv-spec' });
    await first.waitReady();
    const uid = (await pv(pvName('sda')))?.metadata?.uid;
    expect(uid).toBeDefined();
    await first.kill('SIGKILL');
    fillPattern(sda.link, 0, SMALL);
    const second = start({ LP_DEFAULT_PV_SPEC_CONFIGMAP: 'pv-spec' });
    await second.waitReady();
    expect((await pv(pvName('sda')))?.metadata?.uid).toBe(uid);
    expect(isZero(sda.backingFile, 0, 4096)).toBe(false);
    expect(fs.readFileSync(sda.backingFile).subarray(0, SMALL).every((b) => b === 0xa5)).toBe(true);
    expect(await second.kill('SIGTERM')).toBe(0);
  });

  test('devices --help names every flag with its LP_ variable', async () => {
    const { code, out } = await runToEnd(['devices', '--help'], {});
    expect(code).toBe(0);
    for (const flag of ['--node-name', '--polling-interval', '--namespace-name', '--default-pv-spec-configmap', '--metrics-addr']) expect(out).toContain(flag);
    for (const env of ['LP_NODE_NAME', 'LP_POLLING_INTERVAL', 'LP_NAMESPACE_NAME', 'LP_DEFAULT_PV_SPEC_CONFIGMAP', 'LP_METRICS_ADDR']) expect(out).toContain(env);
  });

  test('devices without a node name or namespace exits 2 naming both', async () => {
    const { code, out } = await runToEnd(['devices'], { LP_NODE_NAME: '', LP_NAMESPACE_NAME: '' });
    expect(code).toBe(2);
    expect(out).toContain('LP_NODE_NAME');
    expect(out).toContain('LP_NAMESPACE_NAME');
  });

  test('plan --pv-spec-dir prints the devices that would be wiped and provisioned', async () => {
    const deviceDir = makeTempDir('lvp-plan-devices-');
    const loop = createLoopDevice(SMALL);
    fs.symlinkSync(loop.device, path.join(deviceDir, 'sda'));
    const specDir = makeTempDir('lvp-plan-spec-');
    for (const [k, v] of Object.entries(blockSpec(deviceDir))) fs.writeFileSync(path.join(specDir, k), v);
    const { code, out } = await runToEnd(['plan', '--pv-spec-dir', specDir, '--node-name', NODE_NAME], {});
    expect(code).toBe(0);
    expect(out).toContain(pvName('sda'));
    expect(out).toContain(path.join(deviceDir, 'sda'));
    expect(out).toContain('8Mi');
    expect(out).toContain('wipe-and-provision (blank)');
  });
});

/** Runs the bin to its end; its exit code and everything it printed. */
async function runToEnd(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const bin = AgentProcess.start(args, env);
  const code = await bin.exited();
  return { code, out: bin.log() };
}
