/**
 * `plan`: what the node agent would do on this machine, with no cluster. Built
 * from the same discovery, naming and capacity code the agent runs, so what
 * `plan` shows is what `run` creates (less PVs that already exist).
 */
import type { DeviceSpecConfig } from '../../config';
import type { ClassDiscovery, DeviceDiscovery } from '../discovery';
import { assignDevicePVNames, directoryPVName } from '../pv';
import { describeProbe, formatBinaryQuantity, roundDownCapacity } from '../volume';

/** One volume that would get a PV. */
export interface PlannedVolume {
  readonly pvName: string;
  readonly storageClass: string;
  /** `spec.local.path` (the host's view). */
  readonly path: string;
  readonly volumeMode: string;
  /** The PV's capacity as written. */
  readonly capacity: string;
  /** Device dialect: what a probe found and what would happen to it. */
  readonly signatures?: string;
  readonly action: 'provision' | 'wipe-and-provision';
}

/** One entry that would not get a PV, and why. */
export interface PlannedRejection {
  readonly storageClass: string;
  readonly path: string;
  readonly reason: string;
}

/** A pool class on this node: what a new volume could have, or why it could have none. */
export interface PlannedPool {
  readonly storageClass: string;
  readonly path: string;
  readonly backend: string;
  /** Its volumes now. */
  readonly volumes: number;
  /** What a new volume could still have. */
  readonly available?: string;
  /** Why the pool cannot be used, or what the agent would do first. */
  readonly note?: string;
}

export interface Plan {
  readonly node: string;
  readonly dialect: 'directory' | 'device';
  readonly volumes: PlannedVolume[];
  /** Pool classes: their volumes are made for claims, so only what each pool can give is planned. */
  readonly pools?: PlannedPool[];
  readonly rejected: PlannedRejection[];
  /** Configuration warnings (unknown keys, ignored values). */
  readonly warnings: string[];
}

export function directoryPlan(nodeName: string, classes: readonly ClassDiscovery[], warnings: string[]): Plan {
  const volumes: PlannedVolume[] = [];
  const rejected: PlannedRejection[] = [];
  for (const cls of classes) {
    if (cls.problem) rejected.push({ storageClass: cls.className, path: cls.mountDir, reason: cls.problem });
    for (const r of cls.rejections) {
      rejected.push({ storageClass: cls.className, path: r.path, reason: r.hint ? `${r.reason}: ${r.hint}` : r.reason });
    }
    for (const v of cls.volumes) {
      volumes.push({
        pvName: directoryPVName(v.entryName, nodeName, v.className),
        storageClass: v.className,
        path: v.hostPath,
        volumeMode: v.volumeMode,
        capacity: formatBinaryQuantity(roundDownCapacity(v.capacityBytes)),
        action: 'provision',
      });
    }
  }
  return { node: nodeName, dialect: 'directory', volumes, rejected, warnings };
}

export function devicePlan(nodeName: string, spec: DeviceSpecConfig, discovery: DeviceDiscovery, warnings: string[]): Plan {
  const rejected: PlannedRejection[] = [...discovery.errorDevices, ...discovery.aliases]
    .map((e) => ({ storageClass: spec.storageClassName, path: e.path, reason: e.reason }));
  if (discovery.problem) rejected.push({ storageClass: spec.storageClassName, path: spec.deviceDir, reason: discovery.problem });
  const naming = assignDevicePVNames(nodeName, discovery.devices);
  for (const c of naming.collisions) {
    for (const path of c.paths) {
      rejected.push({ storageClass: spec.storageClassName, path, reason: `PV name "${c.name}" would also be given to ${c.paths.filter((p) => p !== path).join(', ')}` });
    }
  }
  const volumes: PlannedVolume[] = [];
  for (const { device, name } of naming.named) {
    const probe = device.signatures;
    const blank = probe?.state === 'blank';
    if (!blank && !spec.wipeDevicesHoldingData) {
      rejected.push({
        storageClass: spec.storageClassName,
        path: device.path,
        reason: `${probe ? describeProbe(probe) : 'not probed'}; not wiped or provisioned (set wipeDevicesHoldingData to allow it)`,
      });
      continue;
    }
    volumes.push({
      pvName: name,
      storageClass: spec.storageClassName,
      path: device.path,
      volumeMode: spec.volumeMode,
      capacity: formatBinaryQuantity(device.capacityBytes),
      signatures: probe ? describeProbe(probe) : 'not probed',
      action: 'wipe-and-provision',
    });
  }
  return { node: nodeName, dialect: 'device', volumes, rejected, warnings };
}

/** A plain-text table for a person. */
export function formatPlanTable(plan: Plan): string {
  const rows = [
    ['PV', 'STORAGECLASS', 'PATH', 'MODE', 'CAPACITY', 'ACTION'],
    ...plan.volumes.map((v) => [v.pvName, v.storageClass, v.path, v.volumeMode, v.capacity, v.action + (v.signatures ? ` (${v.signatures})` : '')]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const table = rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n');
  const lines = [`Node ${plan.node} (${plan.dialect} dialect): ${plan.volumes.length} volume(s) would be provisioned.`, table];
  for (const p of plan.pools ?? []) {
    lines.push('', `Pool class ${p.storageClass} (${p.backend}) at ${p.path}: ${p.volumes} volume(s)${p.available ? `, ${p.available} available for new ones` : ''}`
      + `${p.note ? `; ${p.note}` : ''}`);
  }
  if (plan.rejected.length > 0) {
    lines.push('', `Rejected (${plan.rejected.length}):`, ...plan.rejected.map((r) => `  ${r.path} [${r.storageClass}]: ${r.reason}`));
  }
  if (plan.warnings.length > 0) lines.push('', 'Configuration warnings:', ...plan.warnings.map((w) => `  ${w}`));
  return `${lines.join('\n')}\n`;
}
