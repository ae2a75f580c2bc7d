/**
 * The CSI Node service as kubelet calls it, over its unix socket: real btrfs pool volumes
 * (BtrfsPool, on a loop device) and a real device with ext4 (a loop device standing in for
 * an LVM thin volume, which needs device-mapper this machine lacks; the node VM suite runs
 * those), published into targets below a kubelet directory of the test's own.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { status } from '@grpc/grpc-js';
import { type NodeVolume, nodeService, VolumesNotKnownYet } from '../../../src/runtime/csi/node-service';
import { loadProtos } from '../../../src/runtime/csi/protos';
import { SocketServer } from '../../../src/runtime/csi/socket-server';
import { BtrfsPool } from '../../../src/runtime/pool/btrfs';
import { call, csiClients, type Stub } from '../../support/csi-client';
import { cleanupPrivileged, createLoopDevice, describePrivileged, makeTempDir, mkfsBtrfs, mkfsExt4, mount } from '../../support/privileged';

const MiB = 1024 * 1024;
const MOUNT = { mount: { fs_type: '', mount_flags: [] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } };
const BLOCK = { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } };

describePrivileged('the CSI Node service', () => {
  let pool: BtrfsPool;
  let poolDir: string;
  let kubeletDir: string;
  let server: SocketServer;
  let node: Stub;
  /** The volumes the service finds, by identity (the agent's wiring finds them in their pools). */
  const volumes = new Map<string, () => Promise<NodeVolume>>();
  /** Each lookup the service made: whether the call was to mount the volume (its name checked against its identity) or to read its use. */
  const asked: Array<{ id: string; toMount: boolean }> = [];

  beforeAll(async () => {
    const loop = createLoopDevice(512 * MiB);
    mkfsBtrfs(loop.device);
    poolDir = makeTempDir('lvp-csi-pool-');
    mount(loop.device, poolDir, { type: 'btrfs' });
    pool = new BtrfsPool(poolDir);
    await pool.open();
    kubeletDir = makeTempDir('lvp-kubelet-');
    const socketPath = path.join(makeTempDir('lvp-csi-'), 'csi.sock');
    server = new SocketServer(socketPath, [{
      definition: loadProtos().node,
      implementation: nodeService({
        nodeId: 'node-a',
        topology: { 'kubernetes.io/hostname': 'node-a' },
        kubeletDir,
        volume: async (id, toMount) => {
          asked.push({ id, toMount });
          return volumes.get(id)?.();
        },
      }),
    }]);
    await server.start();
    node = csiClients(socketPath).node;
  });
  afterAll(async () => {
    node?.close();
    await server?.stop();
    // What a test left published, deepest first.
    const published = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4]).filter((p) => p?.startsWith(`${kubeletDir}/`));
    for (const at of published.reverse()) execFileSync('umount', [at]);
    cleanupPrivileged();
  });

  /** A btrfs pool volume limited to `limit`, found by its identity with its use as the pool reads it now. */
  async function directoryVolume(limit: number): Promise<{ id: string; dir: string }> {
    const name = `pvc-${crypto.randomUUID()}`;
    const id = await pool.create(name, limit);
    const dir = path.join(poolDir, name);
    volumes.set(id, async () => ({ directory: dir, usage: (await pool.inspect()).volumes.get(id) }));
    return { id, dir };
  }

  /** A device with a filesystem, found by its identity, as an LVM thin volume is. */
  function deviceVolume(size: number, fsType: 'ext4' | 'xfs' = 'ext4'): { id: string; device: string; backingFile: string } {
    const loop = createLoopDevice(size);
    if (fsType === 'ext4') mkfsExt4(loop.device);
    else execFileSync('mkfs.xfs', ['-q', loop.device]);
    const id = crypto.randomUUID();
    volumes.set(id, async () => ({ device: loop.device, fsType, mountOptions: ['discard'] }));
    return { id, device: loop.device, backingFile: loop.backingFile };
  }

  /** A pod's target for the volume, as kubelet names it; its parent made, as kubelet makes it. */
  function target(leaf = 'mount'): string {
    const dir = path.join(kubeletDir, 'pods', crypto.randomUUID(), 'volumes', 'kubernetes.io~csi', 'pv');
    fs.mkdirSync(dir, { recursive: true });
    return path.join(dir, leaf);
  }

  const isMountPoint = (p: string) => fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === p);
  const codeOf = (promise: Promise<unknown>) => promise.then(() => 'OK', (e: { code: number }) => status[e.code]);

  test('GetInfo names the node and its topology; the capabilities are stats and expansion', async () => {
    expect(await call(node, 'NodeGetInfo')).toEqual({
      node_id: 'node-a', max_volumes_per_node: '0', accessible_topology: { segments: { 'kubernetes.io/hostname': 'node-a' } },
    });
    expect(await call(node, 'NodeGetCapabilities')).toEqual({
      capabilities: [{ rpc: { type: 'GET_VOLUME_STATS' }, type: 'rpc' }, { rpc: { type: 'EXPAND_VOLUME' }, type: 'rpc' }],
    });
  });

  test('a directory volume published is the volume at the target: what the pod writes there is in it', async () => {
    const { id, dir } = await directoryVolume(16 * MiB);
    const at = target();
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: MOUNT });
    fs.writeFileSync(path.join(at, 'data'), 'tenant');
    expect(fs.readFileSync(path.join(dir, 'data'), 'utf8')).toBe('tenant');
  });

  test('published again (kubelet restarted) it is left as it is; unpublished, the mount and the target go; again, nothing is done', async () => {
    const { id } = await directoryVolume(16 * MiB);
    const at = target();
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: MOUNT });
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: MOUNT });
    expect(fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === at)).toHaveLength(1);
    await call(node, 'NodeUnpublishVolume', { volume_id: id, target_path: at });
    expect(isMountPoint(at)).toBe(false);
    expect(fs.existsSync(at)).toBe(false);
    await call(node, 'NodeUnpublishVolume', { volume_id: id, target_path: at });
  });

  test('published read-only, the pod cannot write to it', async () => {
    const { id } = await directoryVolume(16 * MiB);
    const at = target();
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: MOUNT, readonly: true });
    expect(() => fs.writeFileSync(path.join(at, 'data'), 'x')).toThrow(/EROFS/);
  });

  test('a volume this node does not have is NOT_FOUND; a target outside kubelet\'s directory, or none, is refused', async () => {
    const { id } = await directoryVolume(16 * MiB);
    expect(await codeOf(call(node, 'NodePublishVolume', { volume_id: 'no-such-volume', target_path: target(), volume_capability: MOUNT }))).toBe('NOT_FOUND');
    const outside = path.join(makeTempDir('lvp-elsewhere-'), 'mount');
    expect(await codeOf(call(node, 'NodePublishVolume', { volume_id: id, target_path: outside, volume_capability: MOUNT }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(call(node, 'NodePublishVolume', { volume_id: id, target_path: `${kubeletDir}/../escape`, volume_capability: MOUNT })))
      .toBe('INVALID_ARGUMENT');
    expect(await codeOf(call(node, 'NodePublishVolume', { volume_id: id, volume_capability: MOUNT }))).toBe('INVALID_ARGUMENT');
    expect(fs.existsSync(outside)).toBe(false);
  });

  test('a target with another volume mounted is not covered: ALREADY_EXISTS', async () => {
    const first = await directoryVolume(16 * MiB);
    const second = await directoryVolume(16 * MiB);
    const at = target();
    await call(node, 'NodePublishVolume', { volume_id: first.id, target_path: at, volume_capability: MOUNT });
    expect(await codeOf(call(node, 'NodePublishVolume', { volume_id: second.id, target_path: at, volume_capability: MOUNT }))).toBe('ALREADY_EXISTS');
    expect(fs.readdirSync(at)).toEqual(fs.readdirSync(first.dir));
  });

  test('a directory volume\'s stats are its limit and what it holds, not its filesystem\'s (btrfs: statfs gives the whole pool)', async () => {
    const { id } = await directoryVolume(16 * MiB);
    const at = target();
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: MOUNT });
    fs.writeFileSync(path.join(at, 'data'), Buffer.alloc(4 * MiB, 1));
    execFileSync('btrfs', ['filesystem', 'sync', poolDir]);
    const { usage } = await call(node, 'NodeGetVolumeStats', { volume_id: id, volume_path: at }) as { usage: Array<Record<string, string>> };
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ unit: 'BYTES', total: String(16 * MiB) });
    expect(Number(usage[0].used)).toBeGreaterThanOrEqual(4 * MiB);
    expect(Number(usage[0].used) + Number(usage[0].available)).toBe(16 * MiB);
  });

  test('a volume is looked up to be mounted for a publish and an expansion, and only to be read of for its stats (once a minute per volume)', async () => {
    const { id } = deviceVolume(320 * MiB, 'xfs');
    const at = target();
    asked.length = 0;
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: MOUNT });
    await call(node, 'NodeGetVolumeStats', { volume_id: id, volume_path: at });
    await call(node, 'NodeExpandVolume', { volume_id: id, volume_path: at, capacity_range: { required_bytes: String(320 * MiB) } });
    expect(asked).toEqual([{ id, toMount: true }, { id, toMount: false }, { id, toMount: true }]);
  });

  test('a device volume with a filesystem is mounted at the target with its options; its stats are its filesystem\'s', async () => {
    const { id, device } = deviceVolume(64 * MiB);
    const at = target();
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: { ...MOUNT, mount: { fs_type: 'ext4', mount_flags: [] } } });
    const line = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[4] === at)!;
    expect(line).toContain(' - ext4 ');
    expect(line).toContain('discard');
    const st = fs.statSync(device);
    expect(line.split(' ')[2]).toBe(`${Math.floor(st.rdev / 256)}:${st.rdev % 256}`);
    const { usage } = await call(node, 'NodeGetVolumeStats', { volume_id: id, volume_path: at }) as { usage: Array<Record<string, string>> };
    expect(usage.map((u) => u.unit)).toEqual(['BYTES', 'INODES']);
    expect(Number(usage[0].total)).toBeGreaterThan(50 * MiB);
    await call(node, 'NodeUnpublishVolume', { volume_id: id, target_path: at });
    expect(fs.existsSync(at)).toBe(false);
  });

  // XFS here: growing ext4 online needs CAP_SYS_RESOURCE, which this machine's root lacks (the node VM suite grows ext4).
  test('expanded, a device volume\'s filesystem grows to the device\'s size, mounted', async () => {
    const { id, device, backingFile } = deviceVolume(320 * MiB, 'xfs');
    const at = target();
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: MOUNT });
    const size = () => fs.statfsSync(at).blocks * fs.statfsSync(at).bsize;
    const before = size();
    // The agent's resize grew the device (lvextend); a loop device grows with its file.
    fs.truncateSync(backingFile, 640 * MiB);
    execFileSync('losetup', ['--set-capacity', device]);
    const response = await call(node, 'NodeExpandVolume', { volume_id: id, volume_path: at, capacity_range: { required_bytes: String(640 * MiB) } });
    expect(response.capacity_bytes).toBe(String(640 * MiB));
    expect(size()).toBeGreaterThanOrEqual(before + 300 * MiB); // the device's 320 MiB more, the log's share aside
  });

  test('a Block volume is its device bound onto the target file; its stats are the device\'s size', async () => {
    const { id, device } = deviceVolume(64 * MiB);
    const at = target('dev');
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: BLOCK });
    expect(fs.statSync(at).isBlockDevice()).toBe(true);
    expect(fs.statSync(at).rdev).toBe(fs.statSync(device).rdev);
    await call(node, 'NodePublishVolume', { volume_id: id, target_path: at, volume_capability: BLOCK });
    const { usage } = await call(node, 'NodeGetVolumeStats', { volume_id: id, volume_path: at }) as { usage: Array<Record<string, string>> };
    expect(usage).toEqual([{ unit: 'BYTES', total: String(64 * MiB), used: '0', available: '0' }]);
    await call(node, 'NodeUnpublishVolume', { volume_id: id, target_path: at });
    expect(fs.existsSync(at)).toBe(false);
  });

  test('a directory volume has no Block access', async () => {
    const { id } = await directoryVolume(16 * MiB);
    expect(await codeOf(call(node, 'NodePublishVolume', { volume_id: id, target_path: target('dev'), volume_capability: BLOCK }))).toBe('INVALID_ARGUMENT');
  });

  test('asked while the agent cannot tell yet (its pools not read since it started): UNAVAILABLE, which kubelet tries again', async () => {
    volumes.set('not-known-yet', async () => {
      throw new VolumesNotKnownYet('the agent has not read its pools yet since it started; try again');
    });
    expect(await codeOf(call(node, 'NodePublishVolume', { volume_id: 'not-known-yet', target_path: target(), volume_capability: MOUNT }))).toBe('UNAVAILABLE');
  });

  test('two calls for one volume at once: the second is ABORTED (kubelet tries it again), the first done', async () => {
    const { id } = await directoryVolume(16 * MiB);
    const [a, b] = [target(), target()];
    const results = await Promise.all([
      codeOf(call(node, 'NodePublishVolume', { volume_id: id, target_path: a, volume_capability: MOUNT })),
      codeOf(call(node, 'NodePublishVolume', { volume_id: id, target_path: b, volume_capability: MOUNT })),
    ]);
    expect(results.sort()).toEqual(['ABORTED', 'OK']);
  });
});
