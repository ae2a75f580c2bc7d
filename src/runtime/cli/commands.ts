/**
 * The subcommands, each in the dialect of the program it replaces: its flags,
 * environment and command-line syntax, and the typed options it resolves to.
 * `run` and `plan` speak the Go static provisioner's (Go's flag package, klog's
 * flags), `devices` the device-selecting provisioner's (cobra/pflag, viper's
 * `LP_*` variables, klog's and zap's flags), `node-cleanup` upstream's
 * node-cleanup controller's (pflag). Which one runs is decided in dialect.ts.
 */
import { chooseDialect, DialectDef } from './dialect';
import { EnvSemantics, FlagSpec, FlagSyntax, FlagValue, formatFlagHelp, formatIgnoredFlags, Notice, quote, resolveFlags, ResolvedFlags } from './flags';
import { GO_FLAG_SYNTAX } from './go-flag-syntax';
import { KLOG_FLAGS, KLOG_FLAGS_CLIENT_ONLY, klogLogLevel } from './klog-flags';
import { PFLAG_SYNTAX } from './pflag-syntax';
import { ZAP_FLAGS, zapLogSettings } from './zap-flags';
import { DEFAULT_KUBE_API_BURST, DEFAULT_KUBE_API_QPS, DEFAULT_STATE_DIR } from '../../config/defaults';
import type { DeviceRunOptions } from '../agent/device-run-options';
import type { DirectoryRunOptions } from '../agent/directory-run-options';
import type { CommonOptions } from '../lifecycle/agent';
import type { NodeCleanupOptions } from '../node-cleanup/node-cleanup-options';
import { parseListenAddress } from '../observability/listen-address';
import { LOG_LEVELS, LogFormat, LogLevel } from '../observability/logger';
import type { PlanOptions } from '../plan/plan-options';
import type { VolumesCommandOptions } from '../record/volumes-command';

export const BIN = 'local-volume-provisioner';

const COMMON: FlagSpec[] = [
  { name: 'kubeconfig', type: 'string', env: 'KUBECONFIG', help: 'Path to a kubeconfig (KUBECONFIG may list several, separated by ":", merged as kubectl merges them); in-cluster configuration when unset.' },
  { name: 'kube-api-qps', type: 'number', default: DEFAULT_KUBE_API_QPS, help: 'Steady requests per second to the API server.' },
  { name: 'kube-api-burst', type: 'number', default: DEFAULT_KUBE_API_BURST, help: 'Requests allowed in a burst above the QPS.' },
  { name: 'log-level', type: 'string', env: 'LOG_LEVEL', default: 'info', choices: LOG_LEVELS, help: 'trace, debug, info, warn, error or fatal; wins over the dialect\'s own logging flags.' },
  { name: 'log-format', type: 'string', env: 'LOG_FORMAT', default: 'json', choices: ['json', 'text'], help: 'json, or text for reading by a person.' },
];

/** The node's volume record (runtime/record), shared by both dialects' agents on a node. */
const STATE_DIR_FLAG: FlagSpec = {
  name: 'state-dir',
  type: 'string',
  env: 'LVP_STATE_DIR',
  default: DEFAULT_STATE_DIR,
  help: 'Host directory (mounted at the same path) of the node\'s volume record: which volumes are clean, which a tenant used.',
};

/** `volumes accept PATH --for NAMESPACE/CLAIM`: the one claim a volume's data is given to. */
const HAND_TO_FLAG: FlagSpec = {
  name: 'for',
  type: 'string',
  default: '',
  help: 'With accept: the claim (NAMESPACE/NAME) the volume is given to, its PV bound to that claim in advance; without it, any claim of its class may be bound to it first.',
};

/** The claim guard (an admission policy the construct installs), which each agent checks is in force. */
const CLAIM_GUARD_FLAG: FlagSpec = {
  name: 'claim-guard',
  type: 'string',
  env: 'LVP_CLAIM_GUARD',
  default: '',
  help: 'Name of the ValidatingAdmissionPolicy (and its binding) that keeps a used volume\'s PV from being bound again while no agent runs; '
    + 'checked at start and every 5 minutes. Unset: none is known, and the agent says so.',
};

/** The claim routing (an admission policy the construct installs where a pool class is), which the directory agent checks is in force. */
const CLAIM_ROUTING_FLAG: FlagSpec = {
  name: 'claim-routing',
  type: 'string',
  env: 'LVP_CLAIM_ROUTING',
  default: '',
  help: 'Name of the MutatingAdmissionPolicy (and its binding) that labels each pool class\'s claim with its node, so that the agent watches only '
    + 'its own node\'s claims; checked at start and every 5 minutes. Unset, or not in force: every claim of the cluster is watched.',
};

/** kubelet's directory, where the agent serves pool volumes as kubelet's CSI node plugin. */
const KUBELET_DIR_FLAG: FlagSpec = {
  name: 'kubelet-dir',
  type: 'string',
  env: 'LVP_KUBELET_DIR',
  default: '',
  help: 'kubelet\'s root directory, mounted at the same path with bidirectional propagation: the agent serves its pool classes\' volumes as '
    + 'kubelet\'s CSI node plugin there (plugins/ and plugins_registry/). Unset: no node plugin, and pool volumes are local PVs.',
};

/** Ours, read by both dialects' agents alike: they tell neither dialect. */
const AGENT_FLAGS: FlagSpec[] = [STATE_DIR_FLAG, CLAIM_GUARD_FLAG];

const DIRECTORY_FLAGS: FlagSpec[] = [
  { name: 'listen-address', type: 'string', default: ':8080', help: 'Address of the metrics and health endpoints.' },
  { name: 'metrics-path', type: 'string', default: '/metrics', help: 'Path of the Prometheus metrics.' },
  { name: 'discovery-period', type: 'duration', positive: true, default: '10s', help: 'Fallback period of a full pass; changes on disk start one within a second.' },
  { name: 'config-sync-period', type: 'duration', positive: true, default: '5s', help: 'How often the mounted ConfigMap files are re-read.' },
  { name: 'config-dir', type: 'string', default: '/etc/provisioner/config', help: 'The mounted provisioner ConfigMap.' },
  { name: 'node-name', type: 'string', env: 'MY_NODE_NAME', help: 'This node\'s name (usually from the downward API). Required.' },
  { name: 'namespace', type: 'string', env: 'MY_NAMESPACE', default: 'default', help: 'Namespace for cleanup Jobs and Events.' },
  { name: 'job-container-image', type: 'string', env: 'JOB_CONTAINER_IMAGE', default: '', help: 'Image of cleanup Jobs (useJobForCleaning).' },
  ...AGENT_FLAGS,
  CLAIM_ROUTING_FLAG,
  KUBELET_DIR_FLAG,
  {
    name: 'project-scan-period',
    type: 'duration',
    positive: true,
    default: '1m',
    help: 'How often every volume of an xfs or ext4 pool class is walked for files a tenant gave another project; a file is back in its '
      + 'volume\'s project within this period plus the walk of every volume (docs/operations.md), at more CPU the shorter it is.',
  },
];

const DEVICE_FLAGS: FlagSpec[] = [
  { name: 'metrics-addr', type: 'string', env: 'LP_METRICS_ADDR', default: ':8080', help: 'Address of the metrics and health endpoints.' },
  { name: 'metrics-path', type: 'string', default: '/metrics', help: 'Path of the Prometheus metrics.' },
  { name: 'node-name', type: 'string', env: 'LP_NODE_NAME', help: 'The name of the Node this runs on. Required.' },
  {
    name: 'polling-interval',
    type: 'duration',
    env: 'LP_POLLING_INTERVAL',
    positive: true,
    default: '5m',
    help: 'Fallback period of a full pass (new devices start one within a second); at least 1s, a shorter one is raised to 1s with a warning.',
  },
  { name: 'namespace-name', type: 'string', env: 'LP_NAMESPACE_NAME', help: 'Namespace of the PV spec ConfigMaps. Required.' },
  { name: 'default-pv-spec-configmap', type: 'string', env: 'LP_DEFAULT_PV_SPEC_CONFIGMAP', default: '', help: 'PV spec ConfigMap for nodes without the annotation.' },
  { name: 'development', type: 'boolean', env: 'LP_DEVELOPMENT', default: false, ignored: 'the device provisioner read it and never used it; --zap-devel or --log-format=text give readable lines' },
  ...AGENT_FLAGS,
];

const PLAN_FLAGS: FlagSpec[] = [
  { name: 'config-dir', type: 'string', default: '/etc/provisioner/config', help: 'A provisioner ConfigMap as a directory (one file per key).' },
  { name: 'pv-spec-dir', type: 'string', default: '', help: 'Plan the device dialect from a PV spec ConfigMap directory instead.' },
  { name: 'node-name', type: 'string', env: 'MY_NODE_NAME', help: 'The node to plan for. Required.' },
  { name: 'output', type: 'string', aliases: ['o'], default: 'table', choices: ['table', 'json', 'yaml'], help: 'table, json or yaml.' },
];

const NODE_CLEANUP_FLAGS: FlagSpec[] = [
  { name: 'listen-address', type: 'string', default: ':8080', help: 'Address of the metrics and health endpoints.' },
  { name: 'metrics-path', type: 'string', default: '/metrics', help: 'Path of the Prometheus metrics.' },
  { name: 'storageclass-names', type: 'list', default: [], help: 'The opted-in StorageClasses (comma-separated, repeatable): only their PVs and claims of gone nodes are deleted; none, nothing is.' },
  { name: 'pvc-deletion-delay', type: 'duration', default: '60s', help: 'How long a node must stay gone before its claims are deleted.' },
  { name: 'stale-pv-discovery-interval', type: 'duration', positive: true, default: '10s', help: 'How often PVs of gone nodes are looked for.' },
  { name: 'kube-api-endpoint', type: 'string', default: '', help: 'API server URL in place of the kubeconfig\'s (only with --kubeconfig, as upstream).' },
  { name: 'resync', type: 'duration', default: '10m', ignored: 'there are no informers to resync: each pass lists Nodes and PVs afresh' },
  { name: 'worker-threads', type: 'uint', default: 10, ignored: 'claims are deleted one at a time, each after a fresh read' },
  { name: 'namespace', type: 'string', env: 'MY_NAMESPACE', default: 'default', help: 'Namespace of the leader-election Lease.' },
  {
    name: 'leader-elect',
    type: 'boolean',
    help: 'Elect a leader on a Lease, so that replicas do not act twice. Default: on with the node-cleanup subcommand, off when started as upstream\'s node-cleanup (which has no leader election and no Lease permissions).',
  },
  { name: 'pod-name', type: 'string', env: 'POD_NAME', default: '', help: 'Identity in the Lease (default: the host name).' },
];

/** Each command's options, tagged with the command that takes them. */
export type CommandOptions =
  | ({ readonly command: 'run' } & DirectoryRunOptions)
  | ({ readonly command: 'devices' } & DeviceRunOptions)
  | ({ readonly command: 'plan' } & PlanOptions)
  | ({ readonly command: 'node-cleanup' } & NodeCleanupOptions)
  | ({ readonly command: 'volumes' } & VolumesCommandOptions);

type Command = CommandOptions['command'];

export type ParseOutcome =
  | {
    readonly kind: 'options';
    readonly options: CommandOptions;
    /** Why this command (dialect) was chosen, for the first log line. */
    readonly reason: string;
    /** Lines to log before the command starts (flags ignored, values adjusted). */
    readonly notices: readonly Notice[];
  }
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'error'; readonly message: string };

interface CommandDef extends DialectDef<Command> {
  readonly summary: string;
  readonly syntax: FlagSyntax;
  readonly envSemantics?: EnvSemantics;
}

const COMMANDS: readonly CommandDef[] = [
  {
    command: 'run',
    title: 'the Go static provisioner',
    summary: 'Discover local volumes under the configured directories, offer each as a PV, recycle Released ones (the Go static provisioner\'s job).',
    syntax: GO_FLAG_SYNTAX,
    flags: [...DIRECTORY_FLAGS, ...COMMON, ...KLOG_FLAGS],
    envCues: ['MY_NODE_NAME', 'MY_NAMESPACE', 'JOB_CONTAINER_IMAGE'],
    binaries: ['local-provisioner'],
  },
  {
    command: 'devices',
    title: 'the device provisioner',
    summary: 'Offer devices matched by a name filter as PVs, configured per node by a PV spec ConfigMap (the device-selecting provisioner\'s job).',
    syntax: PFLAG_SYNTAX,
    envSemantics: 'viper',
    flags: [...DEVICE_FLAGS, ...COMMON, ...ZAP_FLAGS, ...KLOG_FLAGS_CLIENT_ONLY],
    // The device provisioner's own variables; ours (LVP_*) are shared by both dialects, so they tell neither.
    envCues: DEVICE_FLAGS.flatMap((f) => (f.env && !AGENT_FLAGS.includes(f) ? [f.env] : [])),
    binaries: ['local-pv-provisioner'],
  },
  {
    command: 'plan',
    title: 'plan',
    summary: 'Print what would be provisioned on this machine and why each rejected entry is rejected; needs no cluster.',
    syntax: GO_FLAG_SYNTAX,
    flags: PLAN_FLAGS,
    envCues: [],
    binaries: [],
    explicitOnly: true,
  },
  {
    command: 'node-cleanup',
    title: 'upstream\'s node-cleanup controller',
    summary: 'Delete PVs (and, after a delay, claims) of nodes that are gone, for the opted-in StorageClasses only.',
    syntax: PFLAG_SYNTAX,
    flags: [...NODE_CLEANUP_FLAGS, ...COMMON],
    // Upstream's node-cleanup reads no environment variable.
    envCues: [],
    binaries: ['main'],
  },
  {
    command: 'volumes',
    title: 'volumes',
    summary: 'The node\'s volume record: "list", "reclaim PATH" (clean a held volume, then offer it), "accept PATH [--for NAMESPACE/CLAIM]" (offer it as it is).',
    syntax: PFLAG_SYNTAX,
    flags: [STATE_DIR_FLAG, HAND_TO_FLAG],
    envCues: [],
    binaries: [],
    explicitOnly: true,
  },
];

const definition = (command: Command): CommandDef => COMMANDS.find((d) => d.command === command)!;

export function commandHelp(command: Command): string {
  const def = definition(command);
  const ignored = formatIgnoredFlags(def.flags);
  const syntax = def.syntax === GO_FLAG_SYNTAX
    ? 'Flags as Go\'s flag package reads them: -name or --name, -name=value or -name value, booleans -name or -name=false; the first argument that is not a flag ends them.'
    : 'Flags as spf13/pflag reads them: --name=value or --name value, booleans --name or --name=false; a single dash is for one-letter shorthands.';
  return `Usage: ${BIN} ${command} [flags]\n\n${def.summary}\n\n${syntax}\n\nFlags (each also read from the [$VARIABLE] shown):\n${formatFlagHelp(def.flags)}\n`
    + (ignored ? `\nAccepted as ${def.title} accepts them, without effect here (a debug line says so):\n  ${ignored}\n` : '');
}

export function topLevelHelp(): string {
  const lines = COMMANDS.map((d) => `  ${d.command.padEnd(13)} ${d.summary}`);
  const binaries = COMMANDS.filter((d) => d.binaries.length > 0).map((d) => `${d.binaries.join(', ')} → ${d.command}`).join('; ');
  return `Usage: ${BIN} [command] [flags]\n\nCommands:\n${lines.join('\n')}\n\n`
    + 'Without a command, the bin speaks the dialect of the program it replaces, chosen (and logged) by, in order:\n'
    + `  1. the name it was started under: ${binaries};\n`
    + '  2. flags and environment variables that belong to one dialect only (MY_NODE_NAME → run, LP_* or\n'
    + '     --polling-interval → devices, --storageclass-names or --pvc-deletion-delay → node-cleanup).\n'
    + '  Anything else, or cues of two dialects, is refused (exit 2): pass the command.\n\n'
    + `Run '${BIN} <command> --help' for a command's flags.\n`;
}

/** The level and format: --log-level/--log-format on the command line, then the dialect's flags, then LOG_LEVEL/LOG_FORMAT, then the defaults. */
function logSettings(r: ResolvedFlags, dialect: { level?: LogLevel; format?: LogFormat }): Pick<CommonOptions, 'logLevel' | 'logFormat'> {
  const v = r.values;
  return {
    logLevel: r.sources['log-level'] === 'flag' ? v['log-level'] as string : dialect.level ?? v['log-level'] as string,
    logFormat: (r.sources['log-format'] === 'flag' ? v['log-format'] : dialect.format ?? v['log-format']) as LogFormat,
  };
}

/** The options every long-running command shares, checked; `listenFlag` is the dialect's name for the address. */
function served(r: ResolvedFlags, errors: string[], listenFlag: string, log: Pick<CommonOptions, 'logLevel' | 'logFormat'>): CommonOptions & { listenAddress: string; metricsPath: string } {
  const v = r.values;
  const listenAddress = v[listenFlag] as string;
  try {
    parseListenAddress(listenAddress);
  } catch (e) {
    errors.push(`--${listenFlag}: ${(e as Error).message}`);
  }
  return {
    kubeconfig: (v.kubeconfig as string | undefined) || undefined,
    qps: v['kube-api-qps'] as number,
    burst: v['kube-api-burst'] as number,
    ...log,
    listenAddress,
    metricsPath: v['metrics-path'] as string,
  };
}

const NODE_NAME_HINT = '; in a DaemonSet set it from the downward API (fieldRef: spec.nodeName)';

function required(v: Record<string, FlagValue>, flag: string, env: string, errors: string[], hint = ''): string {
  const value = v[flag];
  if (typeof value === 'string' && value !== '') return value;
  errors.push(`--${flag} or the environment variable ${env} must be set${hint}`);
  return '';
}

/** The device provisioner polled without pause on a tiny interval; here it is a fallback, kept at 1 s or more. */
const MIN_POLLING_INTERVAL_MS = 1000;

function resolve(
  command: Command, r: ResolvedFlags, explicit: boolean, env: NodeJS.ProcessEnv, errors: string[], notices: Notice[], positionals: readonly string[],
): CommandOptions {
  const v = r.values;
  switch (command) {
    case 'run': {
      const klog = klogLogLevel(r.sources.v === 'flag' ? v.v as number : undefined, r.sources.stderrthreshold === 'flag' ? v.stderrthreshold as number : undefined);
      return {
        command,
        ...served(r, errors, 'listen-address', logSettings(r, { level: klog })),
        discoveryPeriodMs: v['discovery-period'] as number,
        configSyncPeriodMs: v['config-sync-period'] as number,
        configDir: v['config-dir'] as string,
        nodeName: required(v, 'node-name', 'MY_NODE_NAME', errors, NODE_NAME_HINT),
        namespace: v.namespace as string,
        jobContainerImage: v['job-container-image'] as string,
        stateDir: v['state-dir'] as string,
        claimGuard: v['claim-guard'] as string,
        claimRouting: v['claim-routing'] as string,
        kubeletDir: v['kubelet-dir'] as string,
        projectScanPeriodMs: v['project-scan-period'] as number,
      };
    }
    case 'devices': {
      const zap = zapLogSettings(v, r.sources);
      errors.push(...zap.errors);
      let pollingIntervalMs = v['polling-interval'] as number;
      if (pollingIntervalMs < MIN_POLLING_INTERVAL_MS) {
        const from = r.sources['polling-interval'] === 'env' ? { variable: 'LP_POLLING_INTERVAL', value: env.LP_POLLING_INTERVAL } : { flag: '--polling-interval' };
        notices.push({ level: 'warn', msg: 'polling interval below 1s raised to 1s: it is only a fallback here, new devices start a pass at once', fields: from });
        pollingIntervalMs = MIN_POLLING_INTERVAL_MS;
      }
      return {
        command,
        ...served(r, errors, 'metrics-addr', logSettings(r, zap)),
        nodeName: required(v, 'node-name', 'LP_NODE_NAME', errors, NODE_NAME_HINT),
        pollingIntervalMs,
        namespace: required(v, 'namespace-name', 'LP_NAMESPACE_NAME', errors),
        defaultPvSpecConfigMap: v['default-pv-spec-configmap'] as string,
        stateDir: v['state-dir'] as string,
        claimGuard: v['claim-guard'] as string,
      };
    }
    case 'plan':
      return {
        command,
        configDir: v['config-dir'] as string,
        pvSpecDir: v['pv-spec-dir'] as string,
        nodeName: required(v, 'node-name', 'MY_NODE_NAME', errors, NODE_NAME_HINT),
        output: v.output as PlanOptions['output'],
      };
    case 'node-cleanup':
      if (v['listen-address'] === '') {
        errors.push('--listen-address: empty; upstream\'s node-cleanup then served no metrics, this one always serves /metrics, /healthz and /readyz: give an address, e.g. ":8080"');
      }
      return {
        command,
        ...served(r, errors, 'listen-address', logSettings(r, {})),
        kubeApiEndpoint: (v['kube-api-endpoint'] as string) || undefined,
        storageClassNames: v['storageclass-names'] as string[],
        pvcDeletionDelayMs: v['pvc-deletion-delay'] as number,
        stalePvDiscoveryIntervalMs: v['stale-pv-discovery-interval'] as number,
        namespace: v.namespace as string,
        leaderElect: (v['leader-elect'] as boolean | undefined) ?? explicit,
        identity: (v['pod-name'] as string) || env.HOSTNAME || 'node-cleanup',
      };
    case 'volumes': {
      const [action, volume, ...more] = positionals;
      const stateDir = v['state-dir'] as string;
      const handTo = v.for as string;
      if (handTo !== '' && (action !== 'accept' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(handTo))) {
        errors.push(action !== 'accept' ? '--for goes with "accept" only' : `--for: ${quote(handTo)} is not NAMESPACE/CLAIM`);
      }
      if (action === 'list' && volume === undefined) return { command, stateDir, action };
      if ((action === 'reclaim' || action === 'accept') && volume !== undefined && more.length === 0) {
        return { command, stateDir, action, volume, ...(handTo !== '' ? { handTo } : {}) };
      }
      errors.push(action === 'reclaim' || action === 'accept'
        ? `"${action}" takes one volume: its path (its PV's spec.local.path), as "volumes list" shows it`
        : `say "list", "reclaim PATH" or "accept PATH", not ${quote(positionals.join(' '))}`);
      return { command, stateDir, action: 'list' };
    }
  }
}

/**
 * Resolves argv and the environment into one command's options (with why that
 * command, and lines to log), or a help text, or an error message naming every
 * flag or variable that is wrong. `invokedAs` is how the bin was started
 * (process.argv[1]; a symlink keeps its own name).
 */
export function parseCommandLine(argv: readonly string[], env: NodeJS.ProcessEnv, invokedAs = BIN): ParseOutcome {
  const choice = chooseDialect(COMMANDS, argv, env, invokedAs, BIN);
  if (choice.kind === 'help') return { kind: 'help', text: topLevelHelp() };
  if (choice.kind === 'undecided') return { kind: 'error', message: choice.message };
  const { command } = choice;
  const def = definition(command);
  const line = def.syntax.parse(def.flags, choice.args);
  if (line.help) return { kind: 'help', text: commandHelp(command) };
  const because = choice.explicit ? '' : `\n  (${def.title}'s dialect, chosen because: ${choice.reason})`;
  const fail = (errors: string[]): ParseOutcome => ({
    kind: 'error',
    message: `${BIN} ${command}: ${errors.join('\n  ')}${because}\nRun '${BIN} ${command} --help' for the flags.`,
  });
  // A command line that cannot be read leaves no values to check further.
  if (line.error) return fail([line.error]);
  const resolved = resolveFlags(def.flags, line, env, def.envSemantics);
  const errors = [...resolved.errors];
  const notices = [...resolved.notices];
  if (line.positionals.length > 0 && command !== 'volumes') {
    if (command === 'plan') {
      errors.push(`unexpected argument ${quote(line.positionals[0])}`);
    } else {
      const rule = def.syntax === GO_FLAG_SYNTAX ? 'the first argument that is not a flag ends the flags' : 'arguments that are not flags are not read';
      notices.push({ level: 'warn', msg: `arguments ignored: ${rule}, as in ${def.title}`, fields: { ignored: line.positionals } });
    }
  }
  const options = resolve(command, resolved, choice.explicit, env, errors, notices, line.positionals);
  if (errors.length > 0) return fail(errors);
  return { kind: 'options', options, reason: choice.reason, notices };
}
