/**
 * `local-volume-provisioner plan`: reads a configuration from a directory (a
 * mounted or extracted ConfigMap), discovers on this machine, and prints the
 * plan. Needs no cluster; a broken configuration is printed with every problem.
 */
import { stringify } from 'yaml';
import type { PlanOptions } from './plan-options';
import {
  ConfigMapData, formatIssue, parseDeviceSpec, parseProvisionerConfig, parseProvisionerConfigToRun, ParseResult, readConfigMapDirectory,
} from '../../config';
import { discoverDevices, discoverDirectoryVolumes, readMountTable } from '../discovery';
import { devicePlan, directoryPlan, formatPlanTable, Plan, PlannedPool } from './plan';
import { poolBackend } from '../pool/backends';
import { discoveredClassesOf, PoolClassConfig, poolClassesOf } from '../pool/pool-decisions';
import { availableBytes, wholeMiB } from '../pool/storage-capacity';
import { StartupError } from '../startup-error';
import { formatBinaryQuantity } from '../volume';

/** A directory flag of `plan` that names nothing usable, or a configuration there that is invalid. */
export class PlanConfigError extends StartupError {}

/** What each directory flag holds, for the message when it is missing. */
const DIRECTORY_FLAGS = {
  'config-dir': 'the provisioner ConfigMap as a directory, one file per key (as mounted at /etc/provisioner/config in the agent\'s container), or --pv-spec-dir <directory> to plan the device dialect',
  'pv-spec-dir': 'a PV spec ConfigMap as a directory, one file per key',
};

function readDirectory(flag: keyof typeof DIRECTORY_FLAGS, dir: string): ConfigMapData {
  try {
    return readConfigMapDirectory(dir);
  } catch (e) {
    const why = (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (e as Error).message;
    throw new PlanConfigError(`--${flag} ${JSON.stringify(dir)}: ${why}; pass --${flag} <directory> holding ${DIRECTORY_FLAGS[flag]}`);
  }
}

function parsed<T>(
  flag: keyof typeof DIRECTORY_FLAGS, dir: string, parse: (d: ConfigMapData) => ParseResult<T>, atRunTime?: (d: ConfigMapData) => string,
): { config: T; warnings: string[] } {
  const data = readDirectory(flag, dir);
  const result = parse(data);
  if (!result.ok) {
    const more = atRunTime ? `\n${atRunTime(data)}` : '';
    throw new PlanConfigError(`${dir} is invalid:\n  ${result.errors.map(formatIssue).join('\n  ')}${more}`);
  }
  return { config: result.config, warnings: result.warnings.map(formatIssue) };
}

/** What the agent (and the Go provisioner) would make of a configuration `plan` refuses. */
function directoryAgentVerdict(data: ConfigMapData): string {
  const result = parseProvisionerConfigToRun(data);
  if (!result.ok) return 'The agent would refuse it too, as the Go provisioner would: it could not start (or would keep its last good configuration).';
  const skipped = (result.skippedClasses ?? []).map((c) => c.name);
  const others = Object.keys(result.config.storageClassMap);
  return `The agent would run it${skipped.length ? ` without class ${skipped.join(', ')}` : ''}`
    + `${others.length ? `, with class ${others.join(', ')}` : ''}, the other problems as warnings with the values' defaults`
    + ' (the Go provisioner refuses a configuration with a missing hostDir or mountDir, an empty blockCleanerCommand or an unknown volumeMode, and loads the rest to fail later).';
}

export async function makePlan(options: PlanOptions): Promise<Plan> {
  if (options.pvSpecDir) {
    const { config, warnings } = parsed('pv-spec-dir', options.pvSpecDir, parseDeviceSpec);
    return devicePlan(options.nodeName, config, await discoverDevices(config), warnings);
  }
  const { config, warnings } = parsed('config-dir', options.configDir, parseProvisionerConfig, directoryAgentVerdict);
  // A pool class has nothing to discover: its volumes are made for claims.
  const volumes = await discoverDirectoryVolumes(discoveredClassesOf(config.storageClassMap), await readMountTable());
  const pools = await Promise.all(Object.entries(poolClassesOf(config.storageClassMap)).map(([name, pool]) => planPool(name, pool)));
  return { ...directoryPlan(options.nodeName, volumes, warnings), ...(pools.length > 0 ? { pools } : {}) };
}

/** A pool class as the agent would find it, changing nothing. */
async function planPool(storageClass: string, pool: PoolClassConfig): Promise<PlannedPool> {
  const planned = { storageClass, path: pool.hostDir, backend: pool.pool };
  try {
    const { freeBytes, volumes, note } = await poolBackend(pool, { recorded: () => [] }).inspect();
    const available = formatBinaryQuantity(wholeMiB(availableBytes(freeBytes, volumes)));
    return { ...planned, volumes: volumes.size, available, ...(note ? { note } : {}) };
  } catch (err) {
    return { ...planned, volumes: 0, note: `cannot be used: ${(err as Error).message}` };
  }
}

export function formatPlan(plan: Plan, output: PlanOptions['output']): string {
  switch (output) {
    case 'json':
      return `${JSON.stringify(plan, null, 2)}\n`;
    case 'yaml':
      return stringify(plan);
    default:
      return formatPlanTable(plan);
  }
}
