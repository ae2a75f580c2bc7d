/**
 * `run` reads its command line as the Go static provisioner's `flag` package
 * does, with klog's flags (upstream-deployments.md, section 4).
 */
import { error, help, notices, optionsOf, quotesBalance } from './support';

const ENV = { MY_NODE_NAME: 'node-1' };
const run = (argv: string[], env: NodeJS.ProcessEnv = ENV) => optionsOf('run', ['run', ...argv], env);

describe('the Go static provisioner\'s flags and environment', () => {
  test('its defaults', () => {
    expect(run([])).toEqual(expect.objectContaining({
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
      logLevel: 'info',
      logFormat: 'json',
    }));
  });

  test('MY_NAMESPACE, JOB_CONTAINER_IMAGE and KUBECONFIG', () => {
    expect(run([], { ...ENV, MY_NAMESPACE: 'storage', JOB_CONTAINER_IMAGE: 'img:1', KUBECONFIG: '/k' })).toEqual(
      expect.objectContaining({ namespace: 'storage', jobContainerImage: 'img:1', kubeconfig: '/k' }),
    );
  });

  test('an empty MY_NAMESPACE is the default namespace, as upstream reads it', () => {
    expect(run([], { ...ENV, MY_NAMESPACE: '' }).namespace).toBe('default');
  });

  test('a missing node name says which variable to set and how', () => {
    expect(error(['run'])).toMatch(/--node-name or the environment variable MY_NODE_NAME must be set.*fieldRef: spec.nodeName/);
  });

  test('every bad value is reported at once, each by name', () => {
    const message = error(['run', '--discovery-period', 'often', '--kube-api-qps=-3', '--listen-address=8080'], ENV);
    expect(message).toContain('--discovery-period: "often" is not a duration');
    expect(message).toContain('--kube-api-qps: "-3" is not a positive number');
    expect(message).toContain('--listen-address: invalid listen address "8080": missing port');
  });

  test('a period of 0 is refused', () => {
    expect(error(['run', '--discovery-period=0s'], ENV)).toContain('--discovery-period: "0s" must be more than 0');
  });

  test('ours: --project-scan-period, the walk of xfs and ext4 pools\' volumes, every minute unless given', () => {
    expect(run([]).projectScanPeriodMs).toBe(60_000);
    expect(run(['--project-scan-period=15s']).projectScanPeriodMs).toBe(15_000);
    expect(error(['run', '--project-scan-period=0s'], ENV)).toContain('--project-scan-period: "0s" must be more than 0');
  });
});

describe('Go flag syntax', () => {
  test('-name and --name, -name=value and -name value', () => {
    expect(run(['-discovery-period', '1m30s', '--listen-address=127.0.0.1:9000', '-config-sync-period=2s', '--metrics-path', '/m'])).toEqual(
      expect.objectContaining({ discoveryPeriodMs: 90_000, listenAddress: '127.0.0.1:9000', configSyncPeriodMs: 2_000, metricsPath: '/m' }),
    );
  });

  test('the last of a repeated flag wins', () => {
    expect(run(['-discovery-period=1m', '-discovery-period=2m']).discoveryPeriodMs).toBe(120_000);
  });

  test('parsing stops at the first argument that is not a flag; the rest is ignored with a warning', () => {
    expect(run(['-v=4', 'extra', '--discovery-period=1m'])).toEqual(expect.objectContaining({ logLevel: 'debug', discoveryPeriodMs: 10_000 }));
    expect(notices(['run', '-v=4', 'extra', '--discovery-period=1m'], ENV, 'warn')).toEqual([
      expect.objectContaining({ ignored: ['extra', '--discovery-period=1m'], msg: expect.stringContaining('the first argument that is not a flag ends the flags') }),
    ]);
  });

  test('a boolean takes no separate value: "-logtostderr false" is the flag, then an ignored argument', () => {
    expect(notices(['run', '-logtostderr', 'false'], ENV, 'warn')).toEqual([expect.objectContaining({ ignored: ['false'] })]);
  });

  test('-- ends the flags', () => {
    expect(run(['--', '-discovery-period=1m']).discoveryPeriodMs).toBe(10_000);
  });

  test('-h, -help and --help print the help', () => {
    for (const flag of ['-h', '-help', '--help']) expect(help(['run', flag])).toContain('Usage: local-volume-provisioner run [flags]');
  });

  test('an unknown flag is refused with its name in balanced quotes', () => {
    const message = error(['run', '-no-such-flag'], ENV);
    expect(message).toMatch(/^local-volume-provisioner run: unknown flag "-no-such-flag"\nRun 'local-volume-provisioner run --help' for the flags\.$/);
    expect(quotesBalance(message)).toBe(true);
  });

  test('a flag without its value is refused', () => {
    expect(error(['run', '-discovery-period'], ENV)).toContain('flag "-discovery-period" needs a value');
  });

  test('a boolean takes only Go\'s spellings of true and false', () => {
    expect(error(['run', '-logtostderr=yes'], ENV)).toContain('-logtostderr: "yes" is not a boolean');
  });
});

describe('klog\'s flags', () => {
  test.each([
    [['-v=5'], 'trace'],
    [['--v=2'], 'info'],
    [['-v', '4'], 'debug'],
    [['-v=0'], 'info'],
    [['--stderrthreshold=INFO'], 'info'],
    [['-stderrthreshold=warning'], 'warn'],
    [['--stderrthreshold=2'], 'error'],
    [['--stderrthreshold=FATAL', '-v=5'], 'fatal'],
    [['--stderrthreshold=INFO', '-v=5'], 'trace'],
  ])('%j gives log level %s', (argv, level) => {
    expect(run(argv).logLevel).toBe(level);
  });

  test('--log-level wins over them, and they win over LOG_LEVEL', () => {
    expect(run(['-v=5', '--log-level=warn']).logLevel).toBe('warn');
    expect(run(['-v=4'], { ...ENV, LOG_LEVEL: 'error' }).logLevel).toBe('debug');
    expect(run([], { ...ENV, LOG_LEVEL: 'error' }).logLevel).toBe('error');
  });

  test('the flags that only shape klog\'s output are accepted and ignored with a debug line', () => {
    const argv = ['run', '-logtostderr', '-logtostderr=false', '--alsologtostderr', '-log_dir=/tmp', '--log_file_max_size=10', '-skip_headers', '--vmodule=foo=2'];
    const lines = notices(argv, ENV);
    expect(lines.map((l) => l.flag)).toEqual(['-logtostderr', '-logtostderr', '--alsologtostderr', '-log_dir', '--log_file_max_size', '-skip_headers', '--vmodule']);
    expect(lines[0]).toEqual(expect.objectContaining({ msg: 'flag accepted and ignored', value: true, why: expect.any(String) }));
  });

  test('bad values are refused as klog refuses them', () => {
    const message = error(['run', '--stderrthreshold=LOUD', '-v=high', '--log_file_max_size=-1'], ENV);
    expect(message).toContain('--stderrthreshold: "LOUD" is not a severity');
    expect(message).toContain('-v: "high" is not a whole number');
    expect(message).toContain('--log_file_max_size: "-1" is not a whole number of 0 or more');
  });
});
