/**
 * Which program the bin is: an explicit subcommand, else the replaced program's
 * binary name, else flags and environment of one dialect only; never a guess
 * between two readings. The manifests are upstream's (see
 * ../shared/reference/upstream-deployments.md, sections 1.3, 5 and 6).
 */
import { error, help, options, resolved } from './support';

/** What the static chart's DaemonSet gives the container: no args, these env. */
const STATIC_CHART_ENV = { MY_NODE_NAME: 'node-1', MY_NAMESPACE: 'kube-system', JOB_CONTAINER_IMAGE: 'registry.k8s.io/sig-storage/local-volume-provisioner:v2.9.0' };
/** The device provisioner's DaemonSet: args and env. */
const DEVICE_ARGS = ['--polling-interval=10s'];
const DEVICE_ENV = { LP_NAMESPACE_NAME: 'kube-system', LP_NODE_NAME: 'node-1' };
/** Upstream's node-cleanup Deployment: args, no env. */
const NODE_CLEANUP_ARGS = ['--storageclass-names=nvme-ssd-block', '--pvc-deletion-delay=60s', '--stale-pv-discovery-interval=10s'];

describe('without a subcommand, under the generic name', () => {
  test('the static chart\'s DaemonSet (no args, MY_NODE_NAME) runs the Go static provisioner\'s dialect', () => {
    const out = resolved([], STATIC_CHART_ENV);
    expect(out.options).toEqual(expect.objectContaining({ command: 'run', nodeName: 'node-1', namespace: 'kube-system' }));
    expect(out.reason).toBe('no subcommand, and environment MY_NODE_NAME, MY_NAMESPACE, JOB_CONTAINER_IMAGE belong only to the Go static provisioner');
  });

  test('the device provisioner\'s DaemonSet (--polling-interval, LP_*) runs the device dialect', () => {
    const out = resolved(DEVICE_ARGS, DEVICE_ENV);
    expect(out.options).toEqual(expect.objectContaining({ command: 'devices', nodeName: 'node-1', namespace: 'kube-system', pollingIntervalMs: 10_000 }));
    expect(out.reason).toContain('flag --polling-interval and environment LP_NODE_NAME, LP_NAMESPACE_NAME belong only to the device provisioner');
  });

  test('upstream\'s node-cleanup Deployment (its three flags, no env) runs node-cleanup', () => {
    const out = resolved(NODE_CLEANUP_ARGS, {});
    expect(out.options).toEqual(expect.objectContaining({ command: 'node-cleanup', storageClassNames: ['nvme-ssd-block'], pvcDeletionDelayMs: 60_000, stalePvDiscoveryIntervalMs: 10_000 }));
    expect(out.reason).toContain('flags --storageclass-names, --pvc-deletion-delay, --stale-pv-discovery-interval belong only to upstream\'s node-cleanup controller');
  });

  test('cues of two dialects are refused, naming each reading and how to choose', () => {
    const message = error(DEVICE_ARGS, { ...DEVICE_ENV, MY_NODE_NAME: 'node-1' });
    expect(message).toContain('fit more than one program');
    expect(message).toContain('the Go static provisioner (run): environment MY_NODE_NAME');
    expect(message).toContain('the device provisioner (devices): flag --polling-interval and environment LP_NODE_NAME, LP_NAMESPACE_NAME');
    expect(message).toContain('Pass the subcommand as the first argument');
    expect(message).toContain('"/local-provisioner"');
  });

  test('no cue at all is refused, saying how to choose', () => {
    expect(error([], {})).toMatch(/no flag or environment variable says which program to be\. Pass the subcommand/);
  });

  test('a flag two dialects share is no cue', () => {
    expect(error(['--listen-address=:9090', '-v=2'], {})).toContain('no flag or environment variable says which program');
  });

  test('LVP_STATE_DIR, which both dialects read, is no cue', () => {
    expect(resolved(NODE_CLEANUP_ARGS, { LVP_STATE_DIR: '/var/lib/lvp' }).options.command).toBe('node-cleanup');
    expect(resolved([], { ...STATIC_CHART_ENV, LVP_STATE_DIR: '/var/lib/lvp' }).options).toEqual(expect.objectContaining({ command: 'run', stateDir: '/var/lib/lvp' }));
    expect(error([], { LVP_STATE_DIR: '/var/lib/lvp' })).toContain('no flag or environment variable says which program');
  });

  test('an empty variable is no cue', () => {
    expect(error([], { MY_NODE_NAME: '' })).toContain('no flag or environment variable says which program');
  });

  test('--help prints the commands and how the dialect is chosen', () => {
    const text = help(['--help']);
    expect(text).toMatch(/run .*\n.*devices .*\n.*plan .*\n.*node-cleanup/);
    expect(text).toContain('local-provisioner → run; local-pv-provisioner → devices; main → node-cleanup');
  });
});

describe('started under a replaced program\'s binary name', () => {
  test.each([
    ['local-provisioner', [], STATIC_CHART_ENV, 'run'],
    ['local-pv-provisioner', DEVICE_ARGS, DEVICE_ENV, 'devices'],
    ['main', NODE_CLEANUP_ARGS, {}, 'node-cleanup'],
  ] as const)('%s speaks its dialect', (name, argv, env, command) => {
    const out = resolved([...argv], env, `/${name}`);
    expect(out.options.command).toBe(command);
    expect(out.reason).toMatch(new RegExp(`^started as "${name}", `));
  });

  test('-h prints that program\'s help', () => {
    expect(help(['-h'], {}, 'local-pv-provisioner')).toContain('Usage: local-volume-provisioner devices [flags]');
  });

  test('the name decides even against another dialect\'s flags, and the refusal says why it spoke that dialect', () => {
    const message = error(['--polling-interval=10s'], { MY_NODE_NAME: 'n' }, 'local-provisioner');
    expect(message).toContain('unknown flag "--polling-interval"');
    expect(message).toContain('(the Go static provisioner\'s dialect, chosen because: started as "local-provisioner", the Go static provisioner\'s binary)');
  });
});

describe('an explicit subcommand', () => {
  test('wins over the binary name and every cue', () => {
    expect(options(['run'], { ...DEVICE_ENV, MY_NODE_NAME: 'n' }, 'local-pv-provisioner').command).toBe('run');
  });

  test('is the reason given', () => {
    expect(resolved(['node-cleanup'], {}).reason).toBe('the first argument is the subcommand "node-cleanup"');
  });

  test('plan is chosen only by its subcommand', () => {
    expect(options(['plan', '--node-name=n']).command).toBe('plan');
    expect(error(['--pv-spec-dir=/x', '--output=json'], {})).toContain('no flag or environment variable says which program');
  });
});
