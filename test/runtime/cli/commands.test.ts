import { CommandOptions, parseCommandLine } from '../../../src/runtime/cli/commands';

function options(argv: string[], env: NodeJS.ProcessEnv = {}, invokedAs?: string): CommandOptions {
  const out = parseCommandLine(argv, env, invokedAs);
  if (out.kind !== 'options') throw new Error(`expected options, got ${out.kind}: ${JSON.stringify(out)}`);
  return out.options;
}

function error(argv: string[], env: NodeJS.ProcessEnv = {}, invokedAs?: string): string {
  const out = parseCommandLine(argv, env, invokedAs);
  if (out.kind !== 'error') throw new Error(`expected an error, got ${out.kind}`);
  return out.message;
}

describe('command line', () => {
  test('run is the default command and takes the Go provisioner\'s defaults', () => {
    expect(options([], { MY_NODE_NAME: 'node-1' })).toEqual(expect.objectContaining({
      command: 'run',
      nodeName: 'node-1',
      namespace: 'default',
      listenAddress: ':8080',
      metricsPath: '/metrics',
      discoveryPeriodMs: 10_000,
      configSyncPeriodMs: 5_000,
      configDir: '/etc/provisioner/config',
      qps: 100,
      burst: 200,
    }));
  });

  test('run reads MY_NAMESPACE, JOB_CONTAINER_IMAGE and KUBECONFIG', () => {
    expect(options(['run'], { MY_NODE_NAME: 'n', MY_NAMESPACE: 'storage', JOB_CONTAINER_IMAGE: 'img:1', KUBECONFIG: '/k' })).toEqual(
      expect.objectContaining({ namespace: 'storage', jobContainerImage: 'img:1', kubeconfig: '/k' }),
    );
  });

  test('Go-style single-dash flags and --flag=value both work', () => {
    expect(options(['-discovery-period', '1m30s', '--listen-address=127.0.0.1:9000'], { MY_NODE_NAME: 'n' })).toEqual(
      expect.objectContaining({ discoveryPeriodMs: 90_000, listenAddress: '127.0.0.1:9000' }),
    );
  });

  test('a missing node name says which variable to set and how', () => {
    expect(error(['run'])).toMatch(/--node-name or the environment variable MY_NODE_NAME must be set.*fieldRef: spec.nodeName/);
  });

  test('every bad flag is reported at once, each by name', () => {
    const message = error(['--discovery-period', 'often', '--kube-api-qps=-3'], { MY_NODE_NAME: 'n' });
    expect(message).toContain('--discovery-period: "often" is not a duration');
    expect(message).toContain('--kube-api-qps: "-3" is not a positive number');
  });

  test('an unknown flag is an error naming it', () => {
    expect(error(['--no-such-flag'], { MY_NODE_NAME: 'n' })).toContain('--no-such-flag');
  });

  test('started as local-pv-provisioner it speaks the device dialect with LP_ variables', () => {
    expect(options([], { LP_NODE_NAME: 'n1', LP_NAMESPACE_NAME: 'kube-system', LP_POLLING_INTERVAL: '1m', LP_DEFAULT_PV_SPEC_CONFIGMAP: 'spec' }, 'local-pv-provisioner')).toEqual(
      expect.objectContaining({ command: 'devices', nodeName: 'n1', namespace: 'kube-system', pollingIntervalMs: 60_000, defaultPvSpecConfigMap: 'spec', listenAddress: ':8080' }),
    );
  });

  test('devices flags win over LP_ variables', () => {
    expect(options(['devices', '--node-name', 'flag-node', '--namespace-name', 'ns', '--metrics-addr', ':9090'], { LP_NODE_NAME: 'env-node' })).toEqual(
      expect.objectContaining({ nodeName: 'flag-node', listenAddress: ':9090' }),
    );
  });

  test('devices requires the namespace, as upstream does', () => {
    expect(error(['devices', '--node-name', 'n'])).toContain('--namespace-name or the environment variable LP_NAMESPACE_NAME must be set');
  });

  test('--development selects readable logs', () => {
    expect(options(['devices', '--development'], { LP_NODE_NAME: 'n', LP_NAMESPACE_NAME: 'ns' })).toEqual(expect.objectContaining({ logFormat: 'text' }));
  });

  test('plan takes -o and refuses an unknown output format', () => {
    expect(options(['plan', '-o', 'json', '--node-name', 'n'])).toEqual(expect.objectContaining({ command: 'plan', output: 'json' }));
    expect(error(['plan', '--output', 'xml', '--node-name', 'n'])).toContain('--output: "xml" is not one of table, json, yaml');
  });

  test('node-cleanup takes upstream\'s flags', () => {
    expect(options(['node-cleanup', '--storageclass-names', 'fast,slow', '--pvc-deletion-delay', '2m'])).toEqual(
      expect.objectContaining({ command: 'node-cleanup', storageClassNames: ['fast', 'slow'], pvcDeletionDelayMs: 120_000, leaderElect: true }),
    );
  });

  test('a boolean flag takes =true and =false as Go\'s flag package does', () => {
    expect(options(['node-cleanup', '--leader-elect=true'])).toEqual(expect.objectContaining({ leaderElect: true }));
    expect(options(['node-cleanup', '--leader-elect=false'])).toEqual(expect.objectContaining({ leaderElect: false }));
    expect(error(['node-cleanup', '--leader-elect=maybe'])).toContain('--leader-elect: "maybe" is not a boolean');
  });

  test('each command has --help naming its flags and variables', () => {
    const out = parseCommandLine(['devices', '--help'], {});
    expect(out.kind).toBe('help');
    expect(out.kind === 'help' && out.text).toContain('--polling-interval <duration> [$LP_POLLING_INTERVAL]');
    const top = parseCommandLine(['--help'], {});
    expect(top.kind === 'help' && top.text).toMatch(/run .*\n.*devices .*\n.*plan .*\n.*node-cleanup/);
  });
});
