/**
 * The subcommands, their flags and environment, and the typed options each one
 * resolves to. Flag names and variables are the replaced systems' own:
 * `run` and `plan` speak the Go static provisioner's, `devices` the
 * device-selecting provisioner's (`LP_*`), `node-cleanup` upstream's
 * node-cleanup controller's.
 */
import { FlagSpec, formatFlagHelp, parseFlags } from './flags';
import { DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS } from '../../config';
import type { CommonOptions } from '../controller/agent';
import type { DeviceRunOptions } from '../controller/device-run-options';
import type { DirectoryRunOptions } from '../controller/directory-run-options';
import type { NodeCleanupOptions } from '../node-cleanup/node-cleanup-options';
import type { PlanOptions } from '../plan/plan-options';

const COMMON: FlagSpec[] = [
  { name: 'kubeconfig', type: 'string', env: 'KUBECONFIG', help: 'Path to a kubeconfig; in-cluster configuration when unset.' },
  { name: 'kube-api-qps', type: 'number', default: DEFAULT_KUBE_API_QPS, help: 'Steady requests per second to the API server.' },
  { name: 'kube-api-burst', type: 'number', default: DEFAULT_KUBE_API_BURST, help: 'Requests allowed in a burst above the QPS.' },
  { name: 'log-level', type: 'string', env: 'LOG_LEVEL', default: 'info', help: 'trace, debug, info, warn or error.' },
  { name: 'log-format', type: 'string', env: 'LOG_FORMAT', default: 'json', help: 'json, or text for reading by a person.' },
];

const DIRECTORY_FLAGS: FlagSpec[] = [
  { name: 'listen-address', type: 'string', default: ':8080', help: 'Address of the metrics and health endpoints.' },
  { name: 'metrics-path', type: 'string', default: '/metrics', help: 'Path of the Prometheus metrics.' },
  { name: 'discovery-period', type: 'duration', default: '10s', help: 'Fallback period of a full pass; changes on disk start one within a second.' },
  { name: 'config-sync-period', type: 'duration', default: '5s', help: 'How often the mounted ConfigMap files are re-read.' },
  { name: 'config-dir', type: 'string', default: '/etc/provisioner/config', help: 'The mounted provisioner ConfigMap.' },
  { name: 'node-name', type: 'string', env: 'MY_NODE_NAME', help: 'This node\'s name (usually from the downward API). Required.' },
  { name: 'namespace', type: 'string', env: 'MY_NAMESPACE', default: 'default', help: 'Namespace for cleanup Jobs and Events.' },
  { name: 'job-container-image', type: 'string', env: 'JOB_CONTAINER_IMAGE', default: '', help: 'Image of cleanup Jobs (useJobForCleaning).' },
];

const DEVICE_FLAGS: FlagSpec[] = [
  { name: 'metrics-addr', type: 'string', env: 'LP_METRICS_ADDR', default: ':8080', help: 'Address of the metrics and health endpoints.' },
  { name: 'metrics-path', type: 'string', default: '/metrics', help: 'Path of the Prometheus metrics.' },
  { name: 'node-name', type: 'string', env: 'LP_NODE_NAME', help: 'The name of the Node this runs on. Required.' },
  { name: 'polling-interval', type: 'duration', env: 'LP_POLLING_INTERVAL', default: '5m', help: 'Fallback period of a full pass; new devices start one within a second.' },
  { name: 'namespace-name', type: 'string', env: 'LP_NAMESPACE_NAME', help: 'Namespace of the PV spec ConfigMaps. Required.' },
  { name: 'default-pv-spec-configmap', type: 'string', env: 'LP_DEFAULT_PV_SPEC_CONFIGMAP', default: '', help: 'PV spec ConfigMap for nodes without the annotation.' },
  { name: 'development', type: 'boolean', env: 'LP_DEVELOPMENT', default: false, help: 'Readable logs (same as --log-format=text).' },
];

const PLAN_FLAGS: FlagSpec[] = [
  { name: 'config-dir', type: 'string', default: '/etc/provisioner/config', help: 'A provisioner ConfigMap as a directory (one file per key).' },
  { name: 'pv-spec-dir', type: 'string', default: '', help: 'Plan the device dialect from a PV spec ConfigMap directory instead.' },
  { name: 'node-name', type: 'string', env: 'MY_NODE_NAME', help: 'The node to plan for. Required.' },
  { name: 'output', type: 'string', aliases: ['o'], default: 'table', help: 'table, json or yaml.' },
];

const NODE_CLEANUP_FLAGS: FlagSpec[] = [
  { name: 'listen-address', type: 'string', default: ':8080', help: 'Address of the metrics and health endpoints.' },
  { name: 'metrics-path', type: 'string', default: '/metrics', help: 'Path of the Prometheus metrics.' },
  { name: 'storageclass-names', type: 'list', default: [], help: 'StorageClasses whose claims on PVs of gone nodes are deleted.' },
  { name: 'pvc-deletion-delay', type: 'duration', default: '60s', help: 'How long a node must stay gone before its claims are deleted.' },
  { name: 'stale-pv-discovery-interval', type: 'duration', default: '10s', help: 'How often PVs of gone nodes are looked for.' },
  { name: 'namespace', type: 'string', env: 'MY_NAMESPACE', default: 'default', help: 'Namespace of the leader-election Lease.' },
  { name: 'leader-elect', type: 'boolean', default: true, help: 'Elect a leader on a Lease, so replicas do not act twice.' },
  { name: 'pod-name', type: 'string', env: 'POD_NAME', default: '', help: 'Identity in the Lease (default: the host name).' },
];

/** Each command's options, tagged with the command that takes them. */
export type CommandOptions =
  | ({ readonly command: 'run' } & DirectoryRunOptions)
  | ({ readonly command: 'devices' } & DeviceRunOptions)
  | ({ readonly command: 'plan' } & PlanOptions)
  | ({ readonly command: 'node-cleanup' } & NodeCleanupOptions);

export type ParseOutcome =
  | { readonly kind: 'options'; readonly options: CommandOptions }
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'error'; readonly message: string };

interface CommandDef {
  readonly summary: string;
  readonly flags: FlagSpec[];
}

const COMMANDS: Record<CommandOptions['command'], CommandDef> = {
  'run': {
    summary: 'Discover local volumes under the configured directories, offer each as a PV, recycle Released ones (the Go static provisioner\'s job).',
    flags: [...DIRECTORY_FLAGS, ...COMMON],
  },
  'devices': {
    summary: 'Offer devices matched by a name filter as PVs, configured per node by a PV spec ConfigMap (the device-selecting provisioner\'s job).',
    flags: [...DEVICE_FLAGS, ...COMMON],
  },
  'plan': {
    summary: 'Print what would be provisioned on this machine and why each rejected entry is rejected; needs no cluster.',
    flags: PLAN_FLAGS,
  },
  'node-cleanup': {
    summary: 'Delete PVs (and, for opted-in classes, claims) of nodes that are gone; one leader per cluster.',
    flags: [...NODE_CLEANUP_FLAGS, ...COMMON],
  },
};

export const BIN = 'local-volume-provisioner';

export function commandHelp(command: CommandOptions['command']): string {
  const def = COMMANDS[command];
  return `Usage: ${BIN} ${command} [flags]\n\n${def.summary}\n\nFlags (each also read from the [$VARIABLE] shown):\n${formatFlagHelp(def.flags)}\n`;
}

export function topLevelHelp(): string {
  const lines = Object.entries(COMMANDS).map(([name, def]) => `  ${name.padEnd(13)} ${def.summary}`);
  return `Usage: ${BIN} [command] [flags]\n\nCommands (default: run; started as local-pv-provisioner: devices):\n${lines.join('\n')}\n\nRun '${BIN} <command> --help' for a command's flags.\n`;
}

/** The options every long-running command shares, checked; `listenFlag` is the dialect's name for the address. */
function served(v: Record<string, unknown>, errors: string[], listenFlag = 'listen-address'): CommonOptions & { listenAddress: string; metricsPath: string } {
  if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(v['log-level'] as string)) {
    errors.push(`--log-level: "${v['log-level']}" is not one of trace, debug, info, warn, error`);
  }
  if (!['json', 'text'].includes(v['log-format'] as string)) {
    errors.push(`--log-format: "${v['log-format']}" is not one of json, text`);
  }
  return {
    kubeconfig: (v.kubeconfig as string | undefined) || undefined,
    qps: v['kube-api-qps'] as number,
    burst: v['kube-api-burst'] as number,
    logLevel: v['log-level'] as string,
    logFormat: v.development === true || v['log-format'] === 'text' ? 'text' : 'json',
    listenAddress: v[listenFlag] as string,
    metricsPath: v['metrics-path'] as string,
  };
}

const NODE_NAME_HINT = '; in a DaemonSet set it from the downward API (fieldRef: spec.nodeName)';

function required(v: Record<string, unknown>, flag: string, env: string, errors: string[], hint = ''): string {
  const value = v[flag];
  if (typeof value === 'string' && value !== '') return value;
  errors.push(`--${flag} or the environment variable ${env} must be set${hint}`);
  return '';
}

/**
 * Resolves argv and the environment into one command's options, or a help text,
 * or an error message naming every flag or variable that is wrong.
 * `invokedAs` is the program's base name: `local-pv-provisioner` defaults to `devices`.
 */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv, invokedAs = BIN): ParseOutcome {
  const first = argv[0];
  if (first === '--help' || first === '-h' || first === 'help') return { kind: 'help', text: topLevelHelp() };
  const explicit = first !== undefined && first in COMMANDS ? (first as CommandOptions['command']) : undefined;
  const command = explicit ?? (invokedAs === 'local-pv-provisioner' ? 'devices' : 'run');
  const rest = explicit ? argv.slice(1) : argv;
  const parsed = parseFlags(COMMANDS[command].flags, rest, env);
  if (parsed.help) return { kind: 'help', text: commandHelp(command) };
  const fail = (errors: string[]): ParseOutcome => ({
    kind: 'error',
    message: `${BIN} ${command}: ${errors.join('\n  ')}\nRun '${BIN} ${command} --help' for the flags.`,
  });
  // A malformed command line leaves no values to check further.
  if (parsed.syntaxError) return fail([parsed.syntaxError]);
  const errors = [...parsed.errors];
  if (parsed.positionals.length > 0) {
    errors.push(`unexpected argument "${parsed.positionals[0]}" (commands: ${Object.keys(COMMANDS).join(', ')})`);
  }
  const v = parsed.values;
  let options: CommandOptions;
  switch (command) {
    case 'run':
      options = {
        command,
        ...served(v, errors),
        discoveryPeriodMs: v['discovery-period'] as number,
        configSyncPeriodMs: v['config-sync-period'] as number,
        configDir: v['config-dir'] as string,
        nodeName: required(v, 'node-name', 'MY_NODE_NAME', errors, NODE_NAME_HINT),
        namespace: v.namespace as string,
        jobContainerImage: v['job-container-image'] as string,
      };
      break;
    case 'devices':
      options = {
        command,
        ...served(v, errors, 'metrics-addr'),
        nodeName: required(v, 'node-name', 'LP_NODE_NAME', errors, NODE_NAME_HINT),
        pollingIntervalMs: v['polling-interval'] as number,
        namespace: required(v, 'namespace-name', 'LP_NAMESPACE_NAME', errors),
        defaultPvSpecConfigMap: v['default-pv-spec-configmap'] as string,
      };
      break;
    case 'plan':
      if (!['table', 'json', 'yaml'].includes(v.output as string)) {
        errors.push(`--output: "${v.output}" is not one of table, json, yaml`);
      }
      options = {
        command,
        configDir: v['config-dir'] as string,
        pvSpecDir: v['pv-spec-dir'] as string,
        nodeName: required(v, 'node-name', 'MY_NODE_NAME', errors, NODE_NAME_HINT),
        output: v.output as PlanOptions['output'],
      };
      break;
    case 'node-cleanup':
      options = {
        command,
        ...served(v, errors),
        storageClassNames: v['storageclass-names'] as string[],
        pvcDeletionDelayMs: v['pvc-deletion-delay'] as number,
        stalePvDiscoveryIntervalMs: v['stale-pv-discovery-interval'] as number,
        namespace: v.namespace as string,
        leaderElect: v['leader-elect'] as boolean,
        identity: (v['pod-name'] as string) || env.HOSTNAME || 'node-cleanup',
      };
      break;
  }
  if (errors.length > 0) return fail(errors);
  return { kind: 'options', options };
}
