/**
 * What every command shares (API client, logging, help) and `plan`, our own tool.
 */
import { error, help, options } from './support';
import { makePlan, PlanConfigError } from '../../../src/runtime/plan/run-plan';

describe('the flags every long-running command shares', () => {
  test('each command takes the API rate limit and the log settings', () => {
    for (const [command, env] of [['run', { MY_NODE_NAME: 'n' }], ['devices', { LP_NODE_NAME: 'n', LP_NAMESPACE_NAME: 'ns' }], ['node-cleanup', {}]] as const) {
      expect(options([command, '--kube-api-qps=7', '--kube-api-burst=9', '--log-level=debug', '--log-format=text'], env)).toEqual(
        expect.objectContaining({ qps: 7, burst: 9, logLevel: 'debug', logFormat: 'text' }),
      );
    }
  });

  test('LOG_LEVEL and LOG_FORMAT stand in for the flags', () => {
    expect(options(['node-cleanup'], { LOG_LEVEL: 'warn', LOG_FORMAT: 'text' })).toEqual(expect.objectContaining({ logLevel: 'warn', logFormat: 'text' }));
  });

  test('a log level or format outside the list is refused, naming the list', () => {
    const message = error(['node-cleanup', '--log-level=loud', '--log-format=xml']);
    expect(message).toContain('--log-level: "loud" is not one of trace, debug, info, warn, error, fatal');
    expect(message).toContain('--log-format: "xml" is not one of json, text');
  });

  test('each command has --help naming its flags, their variables, and the flags it accepts only for compatibility', () => {
    const text = help(['run', '--help']);
    expect(text).toContain('--node-name <string> [$MY_NODE_NAME]');
    expect(text).toContain('-v, --v <int>');
    expect(text).toContain('--logtostderr');
    expect(text).toContain('Go\'s flag package');
  });
});

describe('plan', () => {
  test('takes -o and refuses an unknown output format', () => {
    expect(options(['plan', '-o', 'json', '--node-name', 'n'])).toEqual(expect.objectContaining({ command: 'plan', output: 'json' }));
    expect(error(['plan', '--output', 'xml', '--node-name', 'n'])).toContain('--output: "xml" is not one of table, json, yaml');
  });

  test('refuses an argument that is not a flag', () => {
    expect(error(['plan', '--node-name=n', 'extra'])).toContain('unexpected argument "extra"');
  });
});

describe('plan\'s directories', () => {
  test('a missing PV spec directory is a configuration error naming --pv-spec-dir and what it holds', async () => {
    await expect(makePlan({ configDir: '', pvSpecDir: '/nonexistent/spec', nodeName: 'n', output: 'table' })).rejects.toThrow(
      new PlanConfigError('--pv-spec-dir "/nonexistent/spec": no such directory; pass --pv-spec-dir <directory> holding a PV spec ConfigMap as a directory, one file per key'),
    );
  });
});
