/**
 * The synthesized workloads' container args against the bin's own parser: what
 * the construct writes, the bin accepts, and it does not slow the agents below
 * the bin's own defaults (bench: 1 000 volumes take ~49 s at 20/40 requests per
 * second against ~9 s at the bin's defaults; issue 4 asks for at most 10 s).
 */
import { expandVars, find, Manifest, NODE_NAME, synthesize } from './cluster';
import { VolumeMode } from '../../src/constructs';
import { CommandOptions, parseCommandLine } from '../../src/runtime/cli/commands';

const STACK = synthesize({
  storageClasses: [{ name: 'fast-disks', hostDir: '/mnt/fast-disks' }],
  devices: { specs: [{ name: 'nvme', storageClassName: 'local-nvme', volumeMode: VolumeMode.BLOCK, deviceDir: '/dev/disk/by-path', deviceNameFilter: '-nvme-' }] },
  nodeCleanup: {},
});

/** The container's args parsed by the bin, with the env kubelet would give it. */
function parsed(kind: string, name: string): CommandOptions {
  const workload: Manifest = find(STACK, kind, name);
  const [container] = workload.spec.template.spec.containers;
  const env: Record<string, string> = { MY_NODE_NAME: NODE_NAME, MY_NAMESPACE: workload.metadata.namespace, POD_NAME: 'pod-0' };
  for (const e of container.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  const outcome = parseCommandLine(container.args.map((a: string) => expandVars(a, env)), env);
  if (outcome.kind !== 'options') throw new Error(`the bin refuses the args of ${kind} ${name}: ${outcome.kind === 'error' ? outcome.message : 'help'}`);
  return outcome.options;
}

/** The bin's own options for a command given nothing but what it requires. */
function defaults(command: 'run' | 'devices'): CommandOptions {
  const argv = command === 'run' ? ['run'] : ['devices', `--node-name=${NODE_NAME}`, '--namespace-name=local-volume-provisioner'];
  const outcome = parseCommandLine(argv, { MY_NODE_NAME: NODE_NAME });
  if (outcome.kind !== 'options') throw new Error(`the bin refuses "${argv.join(' ')}": ${outcome.kind === 'error' ? outcome.message : 'help'}`);
  return outcome.options;
}

const WORKLOADS: Array<[string, string, string]> = [
  ['DaemonSet', 'local-volume-provisioner', 'run'],
  ['DaemonSet', 'local-volume-provisioner-devices', 'devices'],
  ['Deployment', 'local-volume-provisioner-node-cleanup', 'node-cleanup'],
];

test.each(WORKLOADS)('the bin accepts the args of the %s %s as its %s command', (kind, name, command) => {
  expect(parsed(kind, name).command).toBe(command);
});

test.each([
  ['local-volume-provisioner', 'run'],
  ['local-volume-provisioner-devices', 'devices'],
] as const)('the DaemonSet %s does not hold its agent below the bin\'s own API rate limit', (name, command) => {
  const agent = parsed('DaemonSet', name) as CommandOptions & { qps: number; burst: number };
  const bin = defaults(command) as CommandOptions & { qps: number; burst: number };
  expect(agent.qps).toBeGreaterThanOrEqual(bin.qps);
  expect(agent.burst).toBeGreaterThanOrEqual(bin.burst);
});
