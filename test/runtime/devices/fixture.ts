/**
 * A whole device-dialect controller against a real control plane (test/support/kubernetes.ts),
 * for the integration tests next to this file: this node and its namespace in the
 * cluster, a temporary deviceDir holding symlinks to real loop devices (so no
 * real disk is ever in scope), and the runtime's real parts wired as
 * run-devices.ts wires them (KubeApi, NodePvCache, EventRecorder,
 * ProvisionerMetrics, process table, Deleter, DeviceController).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CoreV1Event, V1ConfigMap, V1PersistentVolume } from '@kubernetes/client-node';
import { ConfigMapData, PV_SPEC_CONFIGMAP_ANNOTATION } from '../../../src/config';
import { adoptUnlabelledPersistentVolumes, upstreamDeviceNode } from '../../../src/runtime/kube/adoption';
import { KubeApi } from '../../../src/runtime/kube/api-client';
import { createLogger } from '../../../src/runtime/observability';
import { DevicePassResult, DeviceController } from '../../../src/runtime/static/device-controller';
import { AgentParts } from '../../support/agent-parts';
import { Kubernetes } from '../../support/kubernetes';
import { cachedPvText, pvGone, pvIs, PvState } from '../../support/persistent-volumes';
import { createLoopDevice, LoopDevice, makeTempDir } from '../../support/privileged';
import { eventually, JOB_NAMESPACE as NAMESPACE, NODE_NAME, seedCluster } from '../static/fixture';

export { eventually, NAMESPACE, NODE_NAME };

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

/** A small device: wipes of it are clipped at its end, so a pass stays quick. */
export const SMALL = 8 * MiB;

export interface DeviceFixtureOptions {
  /** The `--default-pv-spec-configmap` value. @default "" (none) */
  readonly defaultPvSpecConfigMap?: string;
  /** Reuse this cluster, seeded already (another agent's fixture on the node); the fixture leaves it as it is. */
  readonly server?: Kubernetes;
  /** The node's volume record, shared with another agent on the node. @default a new directory */
  readonly stateDir?: string;
}

/** A spec ConfigMap's data over the fixture's deviceDir: Block, every device. */
export function blockSpec(deviceDir: string, extra: ConfigMapData = {}): ConfigMapData {
  return { storageClassName: 'local-storage', volumeMode: 'Block', deviceDir, deviceNameFilter: '.*', ...extra };
}

export class DeviceFixture extends AgentParts {
  static async start(options: DeviceFixtureOptions = {}): Promise<DeviceFixture> {
    const server = options.server ?? await Kubernetes.forSuite({ controllers: true });
    // Whatever an earlier test of the suite left (one that failed before its stop()) is gone first.
    if (!options.server) await server.reset();
    if (!options.server) await seedCluster(server);
    const fx = new DeviceFixture(server, makeTempDir('lvp-devices-'), options.defaultPvSpecConfigMap ?? '', !options.server, options.stateDir);
    await fx.cache.start();
    return fx;
  }

  readonly controller: DeviceController;
  private readonly specs = new Map<string, V1ConfigMap>();

  private constructor(
    readonly server: Kubernetes,
    /** The spec's deviceDir: symlinks to the test's loop devices. */
    readonly deviceDir: string,
    defaultPvSpecConfigMap: string,
    private readonly ownsServer: boolean,
    stateDir: string | undefined,
  ) {
    super(new KubeApi(server.kubeConfig(), { backoff: { initialMs: 5, maxMs: 50 } }), NODE_NAME,
      { maxConcurrent: 2, timeoutMs: 60_000, backoff: { initialMs: 200, maxMs: 1000 }, stateDir });
    this.controller = new DeviceController({
      api: this.api,
      mode: this.mode,
      cache: this.cache,
      events: this.events,
      metrics: this.metrics,
      logger: this.logger,
      deleter: this.deleter,
      keeper: this.keeper,
      limiter: this.limiter,
      stallTimeoutMs: 60_000,
      namespace: NAMESPACE,
      defaultPvSpecConfigMap,
      // What the agent's watched copy holds (run-devices): the ConfigMaps as setSpec last wrote them.
      configMap: (name) => this.specs.get(name),
    });
  }

  /** A new loop device of `sizeBytes`, symlinked into deviceDir (or a subdirectory) as `name`. */
  addDevice(name: string, sizeBytes = SMALL, dir = this.deviceDir): LoopDevice & { link: string } {
    const loop = createLoopDevice(sizeBytes);
    fs.mkdirSync(dir, { recursive: true });
    const link = path.join(dir, name);
    fs.symlinkSync(loop.device, link);
    return { ...loop, link };
  }

  /** Writes (creates or replaces) a spec ConfigMap in the provisioner's namespace. */
  async setSpec(name: string, data: ConfigMapData): Promise<void> {
    await this.server.delete('v1', 'ConfigMap', name, NAMESPACE);
    this.specs.set(name, await this.server.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NAMESPACE }, data }));
  }

  /** Sets (or with undefined removes) the Node's spec ConfigMap annotation, through the API. */
  async annotate(configMapName: string | undefined): Promise<void> {
    const node = (await this.api.getNode(NODE_NAME))!;
    const annotations = { ...node.metadata?.annotations };
    if (configMapName === undefined) delete annotations[PV_SPEC_CONFIGMAP_ANNOTATION];
    else annotations[PV_SPEC_CONFIGMAP_ANNOTATION] = configMapName;
    await this.api.replaceNode({ ...node, metadata: { ...node.metadata, annotations } });
  }

  /** run-devices.ts's adoption pass: our node label on the PVs the device-selecting provisioner made here. */
  async adopt(): Promise<string[]> {
    const logger = createLogger({ level: 'fatal' });
    const result = await adoptUnlabelledPersistentVolumes(this.api, { nodeName: NODE_NAME, criterion: upstreamDeviceNode(NODE_NAME), logger });
    await eventually(() => result.adopted.every((n) => this.cache.get(n) !== undefined), `the cache has ${result.adopted.join(', ')}`);
    return result.adopted;
  }

  /** One controller pass with the Node as the server has it; waits until the cache has the PVs it created. */
  async pass(): Promise<DevicePassResult> {
    const node = (await this.api.getNode(NODE_NAME))!;
    const result = await this.controller.pass(node);
    if (result.state === 'provisioned') {
      await eventually(() => result.created.every((n) => this.cache.get(n) !== undefined), `the cache has ${result.created.join(', ')}`);
    }
    await this.events.flush();
    return result;
  }

  serverPv(name: string): Promise<V1PersistentVolume | undefined> {
    return this.server.get('v1', 'PersistentVolume', name);
  }

  serverPvs(): Promise<V1PersistentVolume[]> {
    return this.server.list<V1PersistentVolume>('v1', 'PersistentVolume');
  }

  async serverPvNames(): Promise<string[]> {
    return (await this.serverPvs()).map((p) => p.metadata!.name!).sort();
  }

  /** Events recorded so far, optionally of one reason. */
  async recordedEvents(reason?: string): Promise<CoreV1Event[]> {
    await this.events.flush();
    // The agent's own: the controller manager writes Events about PVs too, with no host.
    return (await this.server.list<CoreV1Event>('v1', 'Event'))
      .filter((e) => e.source?.host === NODE_NAME && (reason === undefined || e.reason === reason));
  }

  /** Events of this reason about this Node. */
  async nodeEvents(reason: string): Promise<CoreV1Event[]> {
    return (await this.recordedEvents(reason)).filter((e) => e.involvedObject.kind === 'Node' && e.involvedObject.name === NODE_NAME);
  }

  /** The available and error device gauges of this node. */
  async deviceGauges(): Promise<{ available?: number; error?: number }> {
    return {
      available: await this.metric('local_pv_provisioner_available_devices', { node: NODE_NAME }),
      error: await this.metric('local_pv_provisioner_error_devices', { node: NODE_NAME }),
    };
  }

  async waitForPv(name: string, options: PvState = {}): Promise<V1PersistentVolume> {
    await eventually(() => pvIs(this.cache.get(name), options), cachedPvText(name, options));
    return this.cache.get(name)!;
  }

  async waitForPvGone(name: string, uid?: string): Promise<void> {
    await eventually(() => pvGone(this.cache.get(name), uid), `PV ${name} is gone from the cache`, 20_000);
  }

  /** A user's new claim for the PV, which the PV binder binds to it. Returns the claim's name. */
  bind(pvName: string): Promise<string> {
    return this.server.bindNewClaim(pvName, `claim-${pvName}`.slice(0, 253));
  }

  /** Binds a claim to the PV, deletes the claim, and waits until the cache sees the PV Released. */
  async release(pvName: string): Promise<V1PersistentVolume> {
    const claim = await this.bind(pvName);
    await this.waitForPv(pvName, { phase: 'Bound' });
    await this.core.deleteNamespacedPersistentVolumeClaim({ name: claim, namespace: 'default' });
    return this.waitForPv(pvName, { phase: 'Released' });
  }

  async stop(): Promise<void> {
    await this.stopParts();
    if (this.ownsServer) await this.server.reset();
  }
}

/** Fills `length` bytes at `offset` of a file or device (user data) with a non-zero pattern, fsync'd. */
export function fillPattern(file: string, offset: number, length: number, byte = 0xa5): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const chunk = Buffer.alloc(Math.min(length, 4 * MiB), byte);
    for (let done = 0; done < length; done += chunk.length) {
      fs.writeSync(fd, chunk, 0, Math.min(chunk.length, length - done), offset + done);
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads `length` bytes at `offset` of a file. */
export function readBytes(file: string, offset: number, length: number): Buffer {
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.alloc(length);
    const n = fs.readSync(fd, buf, 0, length, offset);
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/** True when every byte of the range is zero (read in chunks, so 100 MiB ranges cost little memory; compared natively, not byte by byte in JS). */
export function isZero(file: string, offset: number, length: number): boolean {
  const zeros = Buffer.alloc(4 * MiB);
  for (let done = 0; done < length; done += zeros.length) {
    const chunk = readBytes(file, offset + done, Math.min(zeros.length, length - done));
    if (!chunk.equals(zeros.subarray(0, chunk.length))) return false;
  }
  return true;
}

/** Detaches a loop device and waits until it is really gone (losetup -d only marks a device that is still held open). */
/**
 * The loop device stays attached (so no other test's `losetup --find` can take its
 * number meanwhile) with a capacity of 0: its backing file emptied and its size read again.
 */
export function emptyLoopDevice(loop: { device: string; backingFile: string }): void {
  fs.truncateSync(loop.backingFile, 0);
  execFileSync('losetup', ['--set-capacity', loop.device]);
  const size = `/sys/class/block/${path.basename(loop.device)}/size`;
  if (fs.readFileSync(size, 'utf8').trim() !== '0') throw new Error(`${loop.device} still has a size after losetup --set-capacity`);
}

export function detach(device: string): void {
  execFileSync('losetup', ['--detach', device]);
  const size = `/sys/class/block/${path.basename(device)}/size`;
  for (let i = 0; i < 500 && fs.readFileSync(size, 'utf8').trim() !== '0'; i++) execFileSync('sleep', ['0.01']);
  if (fs.readFileSync(size, 'utf8').trim() !== '0') throw new Error(`${device} is still attached`);
}
