/**
 * `node-cleanup` reads its command line as upstream's node-cleanup controller's
 * pflag does (upstream-deployments.md, section 5), plus our leader election.
 */
import { error, notices, options, optionsOf, quotesBalance } from './support';

const nodeCleanup = (argv: string[], env: NodeJS.ProcessEnv = {}) => optionsOf('node-cleanup', ['node-cleanup', ...argv], env);

describe('upstream node-cleanup\'s flags', () => {
  test('its defaults', () => {
    expect(nodeCleanup([])).toEqual(expect.objectContaining({
      listenAddress: ':8080',
      metricsPath: '/metrics',
      storageClassNames: [],
      pvcDeletionDelayMs: 60_000,
      stalePvDiscoveryIntervalMs: 10_000,
    }));
  });

  test('--name value and --name=value', () => {
    expect(nodeCleanup(['--storageclass-names', 'fast,slow', '--pvc-deletion-delay', '2m', '--stale-pv-discovery-interval=30s'])).toEqual(
      expect.objectContaining({ storageClassNames: ['fast', 'slow'], pvcDeletionDelayMs: 120_000, stalePvDiscoveryIntervalMs: 30_000 }),
    );
  });

  test('--storageclass-names is a repeatable CSV list, as pflag\'s string slice', () => {
    expect(nodeCleanup(['--storageclass-names=a,b', '--storageclass-names', 'c', '--storageclass-names="d",e']).storageClassNames).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(error(['node-cleanup', '--storageclass-names=a"b'])).toContain('--storageclass-names: "a\\"b" is not a comma-separated list');
  });

  test('--kubeconfig and --kube-api-endpoint', () => {
    expect(nodeCleanup(['--kubeconfig=/k', '--kube-api-endpoint=https://10.0.0.1:6443'])).toEqual(
      expect.objectContaining({ kubeconfig: '/k', kubeApiEndpoint: 'https://10.0.0.1:6443' }),
    );
  });

  test('--resync and --worker-threads are accepted, checked and ignored with a debug line', () => {
    expect(notices(['node-cleanup', '--resync=5m', '--worker-threads=4']).map((n) => n.flag)).toEqual(['--resync', '--worker-threads']);
    expect(error(['node-cleanup', '--worker-threads=-1', '--resync=often'])).toMatch(/--resync: "often" is not a duration[\s\S]*--worker-threads: "-1" is not a whole number of 0 or more/);
  });

  test('klog\'s flags are refused, as upstream refuses them (it never added them to its flag set)', () => {
    expect(error(['node-cleanup', '--v=4'])).toContain('unknown flag "--v"');
  });

  test('a single-dash long flag is refused, as pflag refuses it', () => {
    const message = error(['node-cleanup', '-storageclass-names=fast']);
    expect(message).toContain('unknown shorthand flag "s" in "-storageclass-names=fast"');
    expect(quotesBalance(message)).toBe(true);
  });

  test('an empty --listen-address is refused: the health endpoints are always served', () => {
    expect(error(['node-cleanup', '--listen-address='])).toContain('--listen-address: empty');
  });
});

describe('leader election', () => {
  test('is on by default with the node-cleanup subcommand', () => {
    expect(nodeCleanup([]).leaderElect).toBe(true);
  });

  test('is off by default when started as upstream\'s node-cleanup, which has none (and no Lease permissions)', () => {
    expect(options(['--storageclass-names=fast'], {}, 'main')).toEqual(expect.objectContaining({ command: 'node-cleanup', leaderElect: false }));
    expect(options(['--storageclass-names=fast'], {})).toEqual(expect.objectContaining({ command: 'node-cleanup', leaderElect: false }));
  });

  test('--leader-elect decides when given', () => {
    expect(nodeCleanup(['--leader-elect=false']).leaderElect).toBe(false);
    expect(optionsOf('node-cleanup', ['--storageclass-names=fast', '--leader-elect'], {}).leaderElect).toBe(true);
    expect(error(['node-cleanup', '--leader-elect=maybe'])).toContain('--leader-elect: "maybe" is not a boolean');
  });

  test('the identity is POD_NAME, else the host name', () => {
    expect(nodeCleanup([], { POD_NAME: 'pod-0', HOSTNAME: 'host' }).identity).toBe('pod-0');
    expect(nodeCleanup([], { HOSTNAME: 'host' }).identity).toBe('host');
  });
});
