/**
 * The CSI Node service: kubelet's calls to put a pool volume where a pod uses it, take it
 * away, read its use and grow its filesystem. A volume is named by its identity (the PV's
 * volumeHandle, the node record's key); where it is comes from `volume`, which finds it by
 * that identity in its pool (never by a path kubelet or a PV gives), so a volume is only
 * ever published as itself.
 *
 * - A directory volume (btrfs, XFS, ext4) is bound onto the target.
 * - A device volume (LVM thin) with a filesystem is mounted there; a Block one is bound
 *   onto the target file.
 * No staging: each publish is a mount of its own, and an unpublish ends only it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { status, type sendUnaryData, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { bind, mountAt, mountFilesystem, sameFile, unmount } from './mounts';
import type { Logger } from '../observability';
import type { PublishableVolume } from '../pool/backend';
import { run } from '../pool/command';
import { blockDeviceSize } from '../volume/block-device-size';
import { type DeviceNumber, deviceNumberOf } from '../volume/device-number';

/** A volume of this node, found by its identity. */
export type NodeVolume = PublishableVolume;

export interface NodeServiceOptions {
  /** The node's name: the CSINode's node ID. */
  readonly nodeId: string;
  /** The label the PVs' node affinity and the capacity objects select the node by, with this node's value. */
  readonly topology: Readonly<Record<string, string>>;
  /** kubelet's root directory as the agent reaches it: every target is below it. */
  readonly kubeletDir: string;
  /**
   * The volume of that identity on this node, found in its pool; undefined when there is none.
   * `toMount`: the call puts it where a pod uses it, or grows it (it must be that volume now);
   * otherwise the call only reads its use.
   */
  readonly volume: (volumeId: string, toMount: boolean) => Promise<NodeVolume | undefined>;
  /** Where a call refused is said (kubelet keeps only its own log of it). */
  readonly logger?: Logger;
}

/** A call refused with a gRPC status kubelet acts on (NOT_FOUND: the volume is gone; ABORTED: try again). */
class CallError extends Error {
  constructor(readonly code: status, message: string) {
    super(message);
  }
}

/** Thrown by `volume` while the agent cannot tell yet (its pools not read since it started): UNAVAILABLE, kubelet tries again. */
export class VolumesNotKnownYet extends CallError {
  constructor(message: string) {
    super(status.UNAVAILABLE, message);
  }
}

interface VolumeCapability {
  readonly block?: object;
  readonly mount?: { readonly fs_type?: string; readonly mount_flags?: readonly string[] };
}

interface PublishRequest {
  readonly volume_id: string;
  readonly target_path: string;
  readonly volume_capability?: VolumeCapability;
  readonly readonly: boolean;
}

interface TargetRequest {
  readonly volume_id: string;
  readonly target_path?: string;
  readonly volume_path?: string;
  readonly capacity_range?: { readonly required_bytes?: string };
}

type Handler<Req> = (call: ServerUnaryCall<Req, unknown>, callback: sendUnaryData<unknown>) => void;

export function nodeService(options: NodeServiceOptions): UntypedServiceImplementation {
  const kubeletDir = path.resolve(options.kubeletDir);
  /** Volumes with a call in progress: a second call for one is ABORTED (kubelet tries it again), as the spec asks. */
  const busy = new Set<string>();

  const unary = <Req extends { volume_id?: string }>(method: string, work: (request: Req) => Promise<unknown>): Handler<Req> => (call, callback) => {
    const volumeId = call.request.volume_id;
    if (volumeId !== undefined && busy.has(volumeId)) {
      callback({ code: status.ABORTED, details: `an operation on volume ${volumeId} is in progress` });
      return;
    }
    if (volumeId !== undefined) busy.add(volumeId);
    work(call.request).then((response) => callback(null, response), (e: Error) => {
      const code = e instanceof CallError ? e.code : status.INTERNAL;
      options.logger?.warn({ method, volumeId, code: status[code] }, e.message);
      callback({ code, details: e.message });
    }).finally(() => {
      if (volumeId !== undefined) busy.delete(volumeId);
    });
  };

  /** The volume, or NOT_FOUND. */
  const volumeOf = async (volumeId: string, toMount: boolean): Promise<NodeVolume> => {
    if (!volumeId) throw new CallError(status.INVALID_ARGUMENT, 'volume_id is missing');
    const volume = await options.volume(volumeId, toMount);
    if (!volume) throw new CallError(status.NOT_FOUND, `no volume ${volumeId} is on node ${options.nodeId}`);
    return volume;
  };

  /** `target` made absolute and required below kubelet's directory (never somewhere else on the node). */
  const targetOf = (target: string | undefined, field: string): string => {
    if (!target || !path.isAbsolute(target)) throw new CallError(status.INVALID_ARGUMENT, `${field} must be an absolute path, got "${target ?? ''}"`);
    const resolved = path.resolve(target);
    if (!resolved.startsWith(`${kubeletDir}/`)) throw new CallError(status.INVALID_ARGUMENT, `${field} ${target} is not below kubelet's directory ${kubeletDir}`);
    return resolved;
  };

  const publish = async (request: PublishRequest): Promise<object> => {
    const target = targetOf(request.target_path, 'target_path');
    const capability = request.volume_capability;
    if (!capability?.block && !capability?.mount) throw new CallError(status.INVALID_ARGUMENT, 'volume_capability names neither block nor mount');
    const volume = await volumeOf(request.volume_id, true);
    const source = capability.block ? volume.device : volume.directory ?? volume.device;
    if (!source) throw new CallError(status.INVALID_ARGUMENT, `volume ${request.volume_id} is a directory: it has no Block access`);
    const mounted = await mountAt(target);
    if (mounted) {
      // Published already (kubelet asks again after a restart): the same volume is; anything else is not ours to cover.
      const same = capability.mount && !volume.directory ? sameDevice(mounted, source) : sameFile(target, source);
      if (same) return {};
      throw new CallError(status.ALREADY_EXISTS, `${target} has something else mounted (${mounted.source}${mounted.root === '/' ? '' : mounted.root})`);
    }
    if (capability.block) {
      if (!fs.existsSync(target)) fs.writeFileSync(target, '', { mode: 0o600, flag: 'wx' });
      await bind(source, target, request.readonly);
    } else if (volume.directory) {
      fs.mkdirSync(target, { recursive: true, mode: 0o750 }); // there already when kubelet made it
      await bind(volume.directory, target, request.readonly);
    } else {
      fs.mkdirSync(target, { recursive: true, mode: 0o750 }); // there already when kubelet made it
      const flags = capability.mount!.mount_flags ?? [];
      const mountOptions = [...(flags.length > 0 ? flags : volume.mountOptions ?? []), ...(request.readonly ? ['ro'] : [])];
      await mountFilesystem(source, target, capability.mount!.fs_type || volume.fsType || 'ext4', mountOptions);
    }
    return {};
  };

  const unpublish = async (request: TargetRequest): Promise<object> => {
    const target = targetOf(request.target_path, 'target_path');
    if (!request.volume_id) throw new CallError(status.INVALID_ARGUMENT, 'volume_id is missing');
    // Every mount there goes (a publish repeated by hand leaves two); the target goes with the last.
    while (await mountAt(target)) await unmount(target);
    const st = fs.lstatSync(target, { throwIfNoEntry: false });
    if (st?.isDirectory()) fs.rmdirSync(target);
    else if (st) fs.unlinkSync(target);
    return {};
  };

  // A path is asked for, then the volume looked for: a volume not on this node is NOT_FOUND whatever path (as csi-sanity checks).
  const stats = async (request: TargetRequest): Promise<object> => {
    if (!request.volume_path) throw new CallError(status.INVALID_ARGUMENT, 'volume_path is missing');
    const volume = await volumeOf(request.volume_id, false);
    const at = targetOf(request.volume_path, 'volume_path');
    const st = fs.statSync(at, { throwIfNoEntry: false });
    if (!st) throw new CallError(status.NOT_FOUND, `${at} is not there`);
    if (st.isBlockDevice() || !st.isDirectory()) {
      const total = await blockDeviceSize(volume.device!);
      return { usage: [{ unit: 'BYTES', total: String(total) }] };
    }
    const fsStats = fs.statfsSync(at);
    const inodes = { unit: 'INODES', total: String(fsStats.files), used: String(fsStats.files - fsStats.ffree), available: String(fsStats.ffree) };
    const limit = volume.directory ? volume.usage?.limitBytes : undefined;
    if (limit !== undefined) {
      // A directory volume shares its filesystem: its limit is its size (statfs would give the whole filesystem's, btrfs's always).
      const used = Math.min(volume.usage!.usedBytes, limit);
      return { usage: [{ unit: 'BYTES', total: String(limit), used: String(used), available: String(limit - used) }] };
    }
    const total = fsStats.blocks * fsStats.bsize;
    const available = fsStats.bavail * fsStats.bsize;
    return { usage: [{ unit: 'BYTES', total: String(total), used: String(total - fsStats.bfree * fsStats.bsize), available: String(available) }, inodes] };
  };

  const expand = async (request: TargetRequest): Promise<object> => {
    if (!request.volume_path) throw new CallError(status.INVALID_ARGUMENT, 'volume_path is missing');
    const volume = await volumeOf(request.volume_id, true);
    const at = targetOf(request.volume_path, 'volume_path');
    const required = request.capacity_range?.required_bytes;
    if (volume.device && fs.statSync(at, { throwIfNoEntry: false })?.isDirectory()) {
      // The device was grown by the agent's resize; the filesystem on it grows now, mounted.
      if ((volume.fsType ?? 'ext4') === 'xfs') await run('xfs_growfs', [at]);
      else await run('resize2fs', [volume.device]);
      return { capacity_bytes: String(await blockDeviceSize(volume.device)) };
    }
    // A directory's limit, and a Block volume's device, were grown by the agent's resize already.
    return { capacity_bytes: required ?? '0' };
  };

  return {
    NodePublishVolume: unary('NodePublishVolume', publish),
    NodeUnpublishVolume: unary('NodeUnpublishVolume', unpublish),
    NodeGetVolumeStats: unary('NodeGetVolumeStats', stats),
    NodeExpandVolume: unary('NodeExpandVolume', expand),
    NodeGetCapabilities: unary('NodeGetCapabilities', async () => ({
      capabilities: ['GET_VOLUME_STATS', 'EXPAND_VOLUME'].map((type) => ({ rpc: { type } })),
    })),
    NodeGetInfo: unary('NodeGetInfo', async () => ({
      node_id: options.nodeId,
      max_volumes_per_node: '0',
      accessible_topology: { segments: { ...options.topology } },
    })),
  };
}

/** Whether the filesystem mounted is the one on `device` (its device numbers). */
function sameDevice(mounted: DeviceNumber, device: string): boolean {
  const st = fs.statSync(device, { bigint: true, throwIfNoEntry: false });
  if (!st?.isBlockDevice()) return false;
  const { major, minor } = deviceNumberOf(st.rdev);
  return mounted.major === major && mounted.minor === minor;
}
