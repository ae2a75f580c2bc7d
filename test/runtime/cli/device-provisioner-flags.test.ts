/**
 * `devices` reads its command line as the device provisioner's cobra/pflag
 * does, its `LP_*` environment as viper and spf13/cast do, and accepts klog's
 * and controller-runtime's zap flags (upstream-deployments.md, section 6).
 */
import { error, help, notices, options, optionsOf, quotesBalance } from './support';

const ENV = { LP_NODE_NAME: 'node-1', LP_NAMESPACE_NAME: 'kube-system' };
const devices = (argv: string[], env: NodeJS.ProcessEnv = ENV) => optionsOf('devices', ['devices', ...argv], env);

describe('the device provisioner\'s flags and LP_ environment', () => {
  test('every flag from its LP_ variable', () => {
    expect(options([], { ...ENV, LP_POLLING_INTERVAL: '1m', LP_DEFAULT_PV_SPEC_CONFIGMAP: 'spec', LP_METRICS_ADDR: ':9090' }, 'local-pv-provisioner')).toEqual(
      expect.objectContaining({ command: 'devices', nodeName: 'node-1', namespace: 'kube-system', pollingIntervalMs: 60_000, defaultPvSpecConfigMap: 'spec', listenAddress: ':9090' }),
    );
  });

  test('a flag wins over its variable, which wins over the default; an empty variable counts as unset', () => {
    expect(devices(['--node-name', 'flag-node', '--metrics-addr=:9091'], { ...ENV, LP_METRICS_ADDR: ':9090' })).toEqual(
      expect.objectContaining({ nodeName: 'flag-node', listenAddress: ':9091' }),
    );
    expect(devices([], { ...ENV, LP_POLLING_INTERVAL: '' }).pollingIntervalMs).toBe(300_000);
  });

  test('the namespace is required, as upstream needs it', () => {
    expect(error(['devices', '--node-name', 'n'])).toContain('--namespace-name or the environment variable LP_NAMESPACE_NAME must be set');
  });

  test('--development and LP_DEVELOPMENT are accepted and ignored, as upstream ignores them: logs stay JSON', () => {
    expect(devices(['--development']).logFormat).toBe('json');
    expect(devices([], { ...ENV, LP_DEVELOPMENT: 'true' }).logFormat).toBe('json');
    expect(notices(['devices', '--development'], ENV)).toEqual([expect.objectContaining({ flag: '--development', msg: 'flag accepted and ignored' })]);
  });

  test('--help names every flag with its LP_ variable', () => {
    expect(help(['devices', '--help'])).toContain('--polling-interval <duration> [$LP_POLLING_INTERVAL]');
  });
});

describe('durations from the environment, as spf13/cast reads them', () => {
  test('with a unit, as Go parses them', () => {
    expect(devices([], { ...ENV, LP_POLLING_INTERVAL: '1m30s' }).pollingIntervalMs).toBe(90_000);
  });

  test('without a unit they are nanoseconds, as upstream read them; below 1s the interval is raised to 1s, with warnings', () => {
    expect(devices([], { ...ENV, LP_POLLING_INTERVAL: '300' }).pollingIntervalMs).toBe(1_000);
    expect(notices(['devices'], { ...ENV, LP_POLLING_INTERVAL: '300' }, 'warn')).toEqual([
      expect.objectContaining({ variable: 'LP_POLLING_INTERVAL', value: '300', readAs: 'is read as 300ns' }),
      expect.objectContaining({ variable: 'LP_POLLING_INTERVAL', value: '300', msg: expect.stringContaining('raised to 1s') }),
    ]);
  });

  test.each([
    ['soon', 'is not a duration, so it is read as 0'],
    ['0', 'is read as 0ns'],
    ['-5m', 'is read as -5m'],
  ])('LP_POLLING_INTERVAL=%s, on which upstream crash-looped, is refused naming the variable and how it reads', (value, how) => {
    const message = error(['devices'], { ...ENV, LP_POLLING_INTERVAL: value });
    expect(message).toContain(`LP_POLLING_INTERVAL: ${JSON.stringify(value)} ${how}, and an interval must be more than 0`);
    expect(quotesBalance(message)).toBe(true);
  });

  test('on the command line a duration needs a unit, as Go parses it', () => {
    expect(error(['devices', '--polling-interval=300'], ENV)).toContain('--polling-interval: "300" is not a duration');
    expect(error(['devices', '--polling-interval=0s'], ENV)).toContain('--polling-interval: "0s" must be more than 0');
  });
});

describe('pflag syntax', () => {
  test('--name=value and --name value; arguments that are not flags are ignored with a warning', () => {
    expect(devices(['extra', '--polling-interval', '2m', 'more'])).toEqual(expect.objectContaining({ pollingIntervalMs: 120_000 }));
    expect(notices(['devices', 'extra', '--polling-interval', '2m', 'more'], ENV, 'warn')).toEqual([expect.objectContaining({ ignored: ['extra', 'more'] })]);
  });

  test('a single dash starts shorthands, so a single-dash long flag is refused, pointing at the long form', () => {
    const message = error(['devices', '-polling-interval=10s'], ENV);
    expect(message).toContain('unknown shorthand flag "p" in "-polling-interval=10s"; long flags take two dashes: "--polling-interval=10s"');
    expect(quotesBalance(message)).toBe(true);
  });

  test('-h and --help print the help', () => {
    expect(help(['devices', '-h'])).toContain('Usage: local-volume-provisioner devices [flags]');
    expect(help(['devices', '--help'])).toContain('Usage: local-volume-provisioner devices [flags]');
  });
});

describe('klog\'s flags', () => {
  test('-v in each pflag spelling is accepted, and ignored: klog only carried client-go\'s messages there', () => {
    for (const argv of [['-v=5'], ['-v', '5'], ['-v5'], ['--v=5']]) {
      expect(devices(argv).logLevel).toBe('info');
      expect(notices(['devices', ...argv], ENV)).toEqual([expect.objectContaining({ msg: 'flag accepted and ignored', value: '5' })]);
    }
  });

  test('--logtostderr=false and --stderrthreshold=INFO are accepted', () => {
    expect(devices(['--logtostderr=false', '--stderrthreshold=INFO']).logLevel).toBe('info');
  });
});

describe('controller-runtime\'s zap flags', () => {
  test.each([
    [['--zap-log-level=debug'], 'debug', 'json'],
    [['--zap-log-level=error'], 'error', 'json'],
    [['--zap-log-level=panic'], 'fatal', 'json'],
    [['--zap-log-level=1'], 'debug', 'json'],
    [['--zap-log-level=3'], 'trace', 'json'],
    [['--zap-encoder=console'], 'info', 'text'],
    [['--zap-devel'], 'debug', 'text'],
    [['--zap-devel', '--zap-log-level=error', '--zap-encoder=json'], 'error', 'json'],
    [['--zap-log-level=debug', '--log-level=warn', '--zap-encoder=console', '--log-format=json'], 'warn', 'json'],
  ])('%j gives log level %s, format %s', (argv, level, format) => {
    expect(devices(argv)).toEqual(expect.objectContaining({ logLevel: level, logFormat: format }));
  });

  test('--zap-stacktrace-level and --zap-time-encoding are accepted and ignored', () => {
    expect(notices(['devices', '--zap-stacktrace-level=error', '--zap-time-encoding=epoch'], ENV).map((n) => n.flag)).toEqual(['--zap-stacktrace-level', '--zap-time-encoding']);
  });

  test('bad values are refused, naming the values taken', () => {
    const message = error(['devices', '--zap-log-level=loud', '--zap-encoder=xml', '--zap-time-encoding=unix'], ENV);
    expect(message).toContain('--zap-log-level: "loud" is not one of debug, info, error, panic, or a whole number above 0');
    expect(message).toContain('--zap-encoder: "xml" is not one of json, console');
    expect(message).toContain('--zap-time-encoding: "unix" is not one of epoch, millis, nano, iso8601, rfc3339, rfc3339nano');
  });
});
